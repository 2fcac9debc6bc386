"""A collector's stamps are a clock: the time it received each line (mpirun --timestamp-output).

Every line of an `mpirun --tag-output --timestamp-output` console carries the time mpirun received it; lines
that also carry a time of their own (Python logging, c10d, the watchdog) show where mpirun's clock stands
against their nodes' clocks, because mpirun stamps lines in the order it writes them: its stamp of such a line
lies between its stamps of the lines around it. Before, a stamped line was retold the moment of the last line
with a time of its own before it, so an HF Trainer's loss dicts written until a cancel all took the time of a
c10d line half a minute earlier: the job seemed to have stalled before it was cancelled, and a cancelled
attempt was called failed (fresh runs segfault/mpirun_slurm/10 attempt 1, ib_flap/mpirun_slurm/10 attempt 1)."""

from __future__ import annotations

import pytest

from ranktrace.correlate import diagnose

from .fixtures import generated_run


@pytest.mark.parametrize("story, seed", [("segfault", 10), ("ib_flap", 10)])
def test_an_attempt_cancelled_while_training_is_cancelled(tmp_path, catalog, story, seed):
    truth, con = generated_run(tmp_path, story, seed, "mpirun_slurm", catalog)
    try:
        found = diagnose(con)["attempts"]
        stamped = con.execute("SELECT count(*) FROM events WHERE ts_kind = 'collector'").fetchone()[0]
    finally:
        con.close()
    assert stamped   # the layout this is about: a console mpirun stamped
    want = [a["outcome"] for a in truth["attempts"]]
    assert want[0] == "cancelled"
    assert [a["outcome"] for a in found] == want, [(a["start"], a["outcome"], a["verdict"]["kind"]) for a in found]
