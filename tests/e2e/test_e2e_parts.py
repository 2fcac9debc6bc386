"""Parts on a real Slurm cluster: a 4-node job, one `ranktrace ingest --part`
per node (srun, each task ingesting its own node's logs), then `ranktrace
merge`: the store equals a one-machine ingest of the same files, table by
table, and the diagnosis (verdict, clock alignment) is the same."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from e2e_support import SAMPLE_LOGS
from rt_testlib import split_by_host, store_differences

BUNDLE = SAMPLE_LOGS / "slurm_torchrun_sigkill_skew"   # captured on n1..n4; n2's clock +37 s
NODES = ["n1", "n2", "n3", "n4"]
EXCLUDE = [x for a in ("README.md", "truth.json", "expected_verdict.json") for x in ("--exclude", a)]
RANKTRACE = str(Path(sys.executable).parent / "ranktrace")
SLURM_ENV = {**os.environ, "SLURM_CONF": "/etc/ranktrace-capture/slurm.conf"}


def run(cmd, timeout=120, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)
    shown = " ".join(map(str, cmd))
    assert r.returncode == 0, f"{shown} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


@pytest.mark.e2e
def test_srun_one_part_per_node_merged_equals_a_one_machine_ingest(slurm_cluster, tmp_path):
    one = tmp_path / "one.duckdb"
    run([RANKTRACE, "ingest", BUNDLE, *EXCLUDE, "--db", one, "-q"])
    # Each node's logs in its own directory, nodes/<Slurm node>/<bundle>/...: the
    # display paths stay those of the bundle; the controller's files go to n1.
    split_by_host(BUNDLE, str(one), tmp_path / "nodes", [[n] for n in NODES])
    for i, n in enumerate(NODES):
        (tmp_path / "nodes" / str(i)).rename(tmp_path / "nodes" / n)
    parts = tmp_path / "parts"
    task = (f'exec "$0" ingest "$1/$SLURMD_NODENAME/{BUNDLE.name}" {" ".join(EXCLUDE)} --part "$2"')
    out = run(["srun", "--nodes=4", "--ntasks-per-node=1", "--time=3", "--job-name=rt-parts", "--label",
               f"--chdir={tmp_path}", "bash", "-c", task, RANKTRACE, tmp_path / "nodes", parts], env=SLURM_ENV)
    made = sorted(p for p in parts.iterdir() if p.name != ".incoming")
    manifests = {json.loads((p / "manifest.json").read_text())["host"]: p for p in made}
    assert sorted(manifests) == NODES, out              # one part per node, made on that node
    for n, p in manifests.items():
        assert p.name.startswith(f"{n}-")
        on_disk = sum(1 for f in (tmp_path / "nodes" / n).rglob("*") if f.is_file()
                      and f.name not in ("README.md", "truth.json", "expected_verdict.json"))
        assert json.loads((p / "manifest.json").read_text())["counts"]["files"] == on_disk

    merged = tmp_path / "merged.duckdb"
    said = run([RANKTRACE, "merge", parts, "--db", merged])
    assert said.startswith("merged 4 part(s)"), said
    assert store_differences(str(one), str(merged), {"files": {"ingested_at", "source"}}) == {}
    a = json.loads(run([RANKTRACE, "diagnose", "--db", one, "--format", "json"]))
    b = json.loads(run([RANKTRACE, "diagnose", "--db", merged, "--format", "json"]))
    assert a["verdict"]["kind"] == "killed" and a["verdict"]["host"] == "n3"
    assert {c["host"]: round(c["offset_s"]) for c in a["clock"]}["n2"] == 37
    assert b["clock"] == a["clock"] and b["verdict"] == a["verdict"] and b == a
    # Merging again adds nothing.
    again = run([RANKTRACE, "merge", parts, "--db", merged])
    assert again.startswith("merged 0 part(s), 0 file(s)"), again
    assert store_differences(str(one), str(merged), {"files": {"ingested_at", "source"}}) == {}
