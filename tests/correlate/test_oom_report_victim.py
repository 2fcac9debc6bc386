"""The kernel's OOM report names its victim in some lines only (mm/oom_kill.c).

dump_header's '<comm> invoked oom-killer' names the task that asked for memory (by name, no pid) and comes
first; dump_oom_summary's 'oom-kill:...,pid=N' and __oom_kill_process's 'Killed process N (comm)' name the
victim. In a generated mpirun run (gen_longrun.py mpirun_slurm, seed 2) the third attempt's victim is rank 7 on
cn0037, whose pid its NCCL lines tie to rank 7; the verdict named the node only, from the report's first line,
while rank 7's own hypothesis lost (its last progress line is stamped after the kill)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ranktrace.correlate import diagnose
from ranktrace.ingest.pipeline import ingest
from ranktrace.store import connect as store_connect

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def test_the_reports_first_line_names_the_victim_its_kill_line_names(tmp_path, catalog):
    sys.path.insert(0, str(BENCH))
    try:
        import gen_longrun
    finally:
        sys.path.remove(str(BENCH))
    gen_longrun.generate(tmp_path / "run", "host_oom", 2, layout="mpirun_slurm")
    truth = json.loads((tmp_path / "run" / "truth.json").read_text())["attempts"][2]["verdict"]
    assert (truth["kind"], truth["rank"], truth["host"]) == ("oom", 7, "cn0037")
    files = sorted(str(p) for p in (tmp_path / "run").rglob("*") if p.is_file() and p.name != "truth.json")
    ingest(files, str(tmp_path / "db"), catalog)
    con = store_connect(str(tmp_path / "db"), read_only=True)
    v = diagnose(con)["attempts"][2]["verdict"]
    con.close()
    assert (v["kind"], v["rank"], v["host"], v["pid"]) == ("oom", 7, "cn0037", truth["pid"]), v
