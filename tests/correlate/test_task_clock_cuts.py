"""An srun --label console of a requeued job (issue 27): every task's lines are written on its own node's
clock, and the console's classes name no host. A node whose clock runs minutes ahead writes the last
lines of one attempt (its ranks' watchdog timeouts) at times that read, on the job's clock, as the next
attempt's. The attempt of such a line is found on its task's node's clock (ranktrace.correlate.attempts
.write_class_cuts' rows per task): the attempt after it, still training when the logs end, did not fail."""

from __future__ import annotations

from ranktrace.correlate import diagnose

from .fixtures import generated_run


def test_a_task_whose_node_runs_ahead_keeps_its_last_lines_in_their_attempt(tmp_path, catalog):
    # five runs of one job in one console (a requeue each time); gpu-a009's clock runs 204 s ahead of
    # gpu-a008's: its ranks' watchdog timeouts of attempt 4 are logged 10 s after attempt 5's first lines
    truth, con = generated_run(tmp_path, "hang", 21, "slurm_srun", catalog)
    offsets = truth["clock_offsets_s"]
    assert offsets["gpu-a009"] - offsets["gpu-a008"] > 200
    assert [a["outcome"] for a in truth["attempts"]] == ["failed"] * 4 + ["running"]
    # the groups ingest kept, split by attempt: no watchdog timeout is in the last attempt's
    by_attempt = dict(con.execute("SELECT attempt, sum(n) FROM event_groups_stored WHERE kind = 'collective_timeout' "
                                  "GROUP BY ALL").fetchall())
    assert 4 in by_attempt and 5 not in by_attempt, by_attempt
    doc = diagnose(con)
    found = doc["attempts"]
    assert [a["outcome"] for a in found] == ["failed"] * 4 + ["running"], [a["outcome"] for a in found]
    con.close()
