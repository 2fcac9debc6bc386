"""srun's own teardown line is no complaint between a job's last progress and the scheduler's stop.

When a step is cancelled, srun writes 'srun: Job step aborted: Waiting up to 32 seconds for job step to
finish.' as it signals the step, before or after slurmstepd's '*** STEP ... CANCELLED AT ... DUE TO
PREEMPTION ***' (public pastes show both orders, for a time limit, an scancel, a memory kill, a node
failure). Rank 0's HF Trainer dicts carry no time of their own, so a console whose dicts run up to that
teardown trained until it was stopped; the line was read as a complaint in between, training seemed to stop
35 s before the preemption (the last timed line's time), and a preempted attempt was called a hang of a rank
that had only logged a benign reset connection (fresh run hang/slurm_srun/36 attempt 1)."""

from __future__ import annotations

from ranktrace.correlate import diagnose

from .fixtures import generated_run


def test_a_preemption_after_untimed_progress_is_no_failure(tmp_path, catalog):
    truth, con = generated_run(tmp_path, "hang", 36, "slurm_srun", catalog)
    try:
        tail = [k for (k,) in con.execute(
            "SELECT kind FROM events WHERE file LIKE '%86727_0.out' ORDER BY line DESC LIMIT 5").fetchall()]
        found = diagnose(con)["attempts"]
    finally:
        con.close()
    # the story as the logs tell it: srun's teardown line right before the two preemption lines
    assert tail[2:] == ["cancelled", "cancelled", "step_cancelled"], tail
    want = truth["attempts"][0]
    assert (want["outcome"], want.get("reason")) == ("cancelled", "PREEMPTION")
    got = found[0]
    assert got["verdict"]["kind"] == "cancelled", got["verdict"]
    assert got["verdict"]["host"] in ("trn-node37", "trn-node38", None), got["verdict"]
