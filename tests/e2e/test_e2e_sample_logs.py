"""Every sample_logs bundle is small, documented, in the verdict-contract
shape, and (where the harness's truth.json is kept) agrees with the truth.
Needs neither Slurm nor torch."""
import datetime as dt
import json
import re

import pytest

from e2e_support import KINDS, SAMPLE_LOGS

BUNDLES = sorted(p for p in SAMPLE_LOGS.iterdir() if p.is_dir()) if SAMPLE_LOGS.is_dir() else []
# kinds whose culprit is a process (a rank), kinds whose culprit is a node/pod
RANK_KINDS = {"exception", "crash", "killed", "hang", "gpu_oom", "cuda_error"}
HOST_KINDS = {"node_failure", "rendezvous_timeout", "scheduling", "gpu_fault"}
ANSWER_FILES = {"README.md", "truth.json", "expected_verdict.json"}


def test_there_are_enough_bundles_of_every_family():
    names = [b.name for b in BUNDLES]
    assert len(names) >= 10
    assert "demo_sigkill_4node" in names
    fams = {"torchrun": False, "slurm": False, "slurm+torchrun": False, "k8s": False}
    for b in BUNDLES:
        files = {p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file()}
        slurm = any(f.startswith("slurm-") and f.endswith(".out") for f in files)
        torch = any("torchelastic/" in f for f in files) or any(
            "torch/distributed" in (b / f).read_text(errors="replace") for f in files if f.endswith((".log", ".out")))
        k8s = any(f.startswith("var/log/pods/") for f in files)
        fams["k8s"] |= k8s
        fams["slurm+torchrun"] |= slurm and torch
        fams["slurm"] |= slurm and not torch
        fams["torchrun"] |= torch and not slurm and not k8s
    assert all(fams.values()), fams


def test_index_lists_every_bundle():
    text = (SAMPLE_LOGS / "README.md").read_text()
    for b in BUNDLES:
        assert f"[{b.name}]" in text, b.name


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_bundle(bundle):
    ev = json.loads((bundle / "expected_verdict.json").read_text())
    v = ev["verdict"]
    assert v["kind"] in KINDS
    for k in ("rank", "local_rank", "host", "pod", "pid", "gpu", "time"):
        assert k in v, k
    if v["kind"] in RANK_KINDS:
        assert v["rank"] is not None and v["host"] is not None
    if v["kind"] in HOST_KINDS | {"oom"}:
        assert v["host"] is not None or v["pod"] is not None
    if v["time"] is not None:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", v["time"]), v["time"]
        dt.datetime.strptime(v["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
    for c in ev.get("clock", []):
        assert isinstance(c["offset_s"], (int, float)) and c["host"]
    readme = (bundle / "README.md").read_text()
    assert "Basis for the verdict" in readme
    assert ("Captured" in readme) != ("COMPOSED" in readme)
    logs = [p for p in bundle.rglob("*") if p.is_file() and p.name not in ANSWER_FILES]
    assert logs, "no log files"
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    assert size < 400_000, f"{bundle.name} is {size} bytes"
    if (bundle / "truth.json").exists():
        t = json.loads((bundle / "truth.json").read_text())
        assert (t["kind"], t["rank"], t["host"], t["time"]) == (v["kind"], v["rank"], v["host"], v["time"])
        # the logs never give the answer away
        text = "\n".join(p.read_text(errors="replace") for p in logs)
        assert t["scenario"] not in text and "RT_FAULTS" not in text
