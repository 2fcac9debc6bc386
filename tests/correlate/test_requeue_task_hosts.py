"""Two faults a fresh family seed (43) showed, each on a requeued Slurm job (generated runs):

- DeepSpeed's launcher under `srun --label`, one output per restart: task 2 ran on another node in each run,
  so no job-wide map of task to node holds; srun's own report of the task's end (`srun: error: NODE: task
  T: Exited ...`) names the node its lines before it ran on. Read without it, the run's teardown lines
  stayed on no clock, the attempt ended minutes late, over the next one, and lent that one the node failure
  it ended with (the next attempt's exception was called a node failure).
- mpirun with only rank 0 logging steps: a node whose ranks log nothing past their start is quiet from its
  start, yet the job made steps for minutes after: it was alive then, and did not fail first."""

from __future__ import annotations

import datetime as dt
import statistics

from .fixtures import generated_attempts, who


def _t(iso: str) -> dt.datetime:
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))


def test_requeued_srun_task_lines_on_their_run_node(tmp_path, catalog):
    truth, got = generated_attempts(tmp_path, "exception", 43, "deepspeed_srun", catalog)
    assert len(got) == len(truth)
    # each run ends where it did (the aligned clock is the reference node's: the truth's, shifted)
    shift = statistics.median(_t(t["start"]) - _t(g["start"]) for t, g in zip(truth, got))
    assert all(abs((_t(t["end"]) - shift - _t(g["end"])).total_seconds()) < 10 for t, g in zip(truth, got))
    for a, b in zip(got, got[1:]):
        assert a["end"] <= b["start"]   # one attempt's teardown is over before the next starts
    third = next(t for t in truth if t["id"] == 3)["verdict"]
    assert who(got[2]["verdict"], "kind", "rank", "host") == (third["kind"], third["rank"], third["host"])


def test_node_quiet_since_its_start_did_not_fail_first(tmp_path, catalog):
    truth, got = generated_attempts(tmp_path, "segfault", 43, "mpirun_slurm", catalog)
    fourth = next(t for t in truth if t["id"] == 4)["verdict"]
    assert who(got[3]["verdict"], "kind", "rank", "host") == (fourth["kind"], fourth["rank"], fourth["host"])
