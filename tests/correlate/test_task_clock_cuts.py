"""An srun --label console of a requeued job (issue 27): every task's lines are written on its own node's
clock, and the console's classes name no host. A node whose clock runs minutes ahead writes the last
lines of one attempt (its ranks' watchdog timeouts) at times that read, on the job's clock, as the next
attempt's. The attempt of such a line is found on its task's node's clock (ranktrace.correlate.attempts
.write_class_cuts' rows per task): the attempt after it, still training when the logs end, did not fail."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ranktrace.correlate import diagnose
from ranktrace.ingest.pipeline import ingest
from ranktrace.store import connect as store_connect

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _generate(out: Path, story: str, seed: int, layout: str) -> dict:
    sys.path.insert(0, str(BENCH))
    try:
        import gen_longrun
    finally:
        sys.path.remove(str(BENCH))
    gen_longrun.generate(out, story, seed, layout=layout)
    return json.loads((out / "truth.json").read_text())


def test_a_task_whose_node_runs_ahead_keeps_its_last_lines_in_their_attempt(tmp_path, catalog):
    # five runs of one job in one console (a requeue each time); gpu-a009's clock runs 204 s ahead of
    # gpu-a008's: its ranks' watchdog timeouts of attempt 4 are logged 10 s after attempt 5's first lines
    truth = _generate(tmp_path / "run", "hang", 21, "slurm_srun")
    offsets = truth["clock_offsets_s"]
    assert offsets["gpu-a009"] - offsets["gpu-a008"] > 200
    assert [a["outcome"] for a in truth["attempts"]] == ["failed"] * 4 + ["running"]
    files = sorted(str(p) for p in (tmp_path / "run").rglob("*") if p.is_file() and p.name != "truth.json")
    db = str(tmp_path / "db")
    ingest(files, db, catalog)
    con = store_connect(db, read_only=True)
    # the groups ingest kept, split by attempt: no watchdog timeout is in the last attempt's
    by_attempt = dict(con.execute("SELECT attempt, sum(n) FROM event_groups_stored WHERE kind = 'collective_timeout' "
                                  "GROUP BY ALL").fetchall())
    assert 4 in by_attempt and 5 not in by_attempt, by_attempt
    doc = diagnose(con)
    found = doc["attempts"]
    assert [a["outcome"] for a in found] == ["failed"] * 4 + ["running"], [a["outcome"] for a in found]
    con.close()
