"""Every SQL file of queries/detect, queries/canned, queries/align and queries/attempts has its header and runs."""

from pathlib import Path

import pytest

from ranktrace.correlate.attempts import PREPARE, query_text
from ranktrace.correlate.clock import align
from ranktrace.correlate.util import sql_header
from ranktrace.resources import data_dir
from ranktrace.store import refresh_summaries

from .helpers import ev, steps, store

Q = data_dir("queries")
FILES = sorted(p for d in ("detect", "canned", "align", "attempts") for p in (Q / d).glob("*.sql"))


@pytest.fixture(scope="module")
def con():
    progress = steps({"n1": [0, 1], "n2": [2, 3]}, 4)
    alloc = ev(0, "sched: Allocate JobId=7 NodeList=n[1-2] #CPUs=4 Partition=gpu", kind="job_state",
               file="slurmctld.log", job_id="7")
    c = store(progress + [
        alloc,
        ev(1, "launch task StepId=7.0 request from UID:0", host="n1", job_id="7", file="slurmd-n1.log"),
        ev(9, "RuntimeError: x", kind="python_exception", host="n2", rank=3),
        ev(10, "srun: error: n1: tasks 0-1: Terminated", host="n1")],
        {"progress": [{"event_id": e["event_id"], "file_id": e["file_id"], "step": int(e["message"].split()[2])}
                      for e in progress],
         "slurm_alloc": [{"event_id": alloc["event_id"], "job_id": "7", "nodelist": "n[1-2]", "cpus": 4,
                          "partition": "gpu", "bf_job_id": None, "bf_partition": None, "bf_nodelist": None}]})
    refresh_summaries(c)   # what every ingest ends with: canned queries read events_aligned and echoes
    align(c)
    return c


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_header_and_runs(path: Path, con):
    text = path.read_text()
    h = sql_header(text)
    assert {"name", "kind", "params", "returns"} <= set(h), h
    assert h["name"] == path.stem
    params = {k: v for k, v in {"host": "n1", "offset_s": 0.0, "window_s": 120.0, "own_window_s": 25.0, "healthy": None,
                                "files": ["n1.log", "n2.log"], "max_line": 1000, "jobs": None,
                                "zoned_envelopes": ["cri"], "file_ids": [1]}.items() if f"${k}" in text} or None
    if path.parent.name == "attempts":   # as the correlator runs them on this store
        text = query_text(con, path.stem)
        if path.stem in PREPARE:
            PREPARE[path.stem](con)
    con.execute(text, params).fetchall()
