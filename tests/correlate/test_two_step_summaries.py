"""The summaries an ingest makes of every line (queries/align/event_groups.sql, queries/store/
lanes.sql, lane_buckets.sql, echoes.sql) are computed in two steps, per class and a line's own
identity first, then per key; echoes only for ranks with lines in two files. Here they are
checked against their one-step definitions over view `events` (the oracle: what each column
means, written the plain way), on bundles with srun-labelled torchrun agents, --tee echoes and
Kubernetes pods."""

from __future__ import annotations

import duckdb
import pytest

from ranktrace.correlate.identity import build_base
from ranktrace.correlate.util import sql_file
from ranktrace.ingest.pipeline import ingest

from rt_testlib import sample_files as _files
from .test_sample_bundles import BUNDLES
from ranktrace.store import connect as store_connect
from rt_testlib import echoes_oracle_sql

CASES = ("slurm_torchrun_sigkill_skew", "torchrun_hang_skew", "k8s_exception_cri_skew", "slurm_time_limit")

STEP = r"(?i)\b(?:global[_ ])?(?:step|iter|iteration)\s*[=:#]?\s*\[?(\d+)"
SAYS = r"(?i)\b(?:step|iter|iteration)\s*[=:#]?\s*\d+"
ALLOC = ("nranks ", "gres/gpu", "nvidia.com/gpu", "world_size", "WORLD_SIZE", "PET_NNODES", "NumNodes=",
         "#SBATCH", "TresPerNode=", "local_ranks=[")

GROUPS_ONE_STEP = f"""
WITH e AS (
    SELECT *,
           CASE WHEN (kind = 'progress' OR (kind IS NULL AND severity IN ('info', 'debug', 'notice')))
                THEN TRY_CAST(regexp_extract(message, '{STEP}', 1) AS BIGINT) END AS step,
           CASE WHEN kind IS NULL THEN regexp_matches(message, '{SAYS}') END AS says_step,
           CASE WHEN message LIKE '%nranks %' AND ({" OR ".join(f"raw LIKE '%{w}%'" for w in ALLOC)})
                THEN TRY_CAST(regexp_extract(message, '\\bnranks (\\d+)', 1) AS INTEGER) END AS nr,
           CAST(epoch_us(ts) AS HUGEINT) * 4294967296 + line AS tl
    -- a time interpolated from another clock's line, told on the line's own (the store's interpolated_times)
    FROM (SELECT k.* REPLACE (coalesce(it.ts, k.ts) AS ts)
          FROM events_keyed k LEFT JOIN interpolated_times it ON it.event_id = k.event_id)
)
SELECT host, rank, local_rank, pid, pod, container, gpu, job_id, step_id, file_id, file, format,
       task, srun_lbl, srun_rank, 1 AS attempt, role, kind, severity, ts_kind,
       ts >= TIMESTAMP '1990-01-01' AND ts < TIMESTAMP '2100-01-01' AS sane,
       count(*) AS n, min(ts) AS ts, max(ts) AS max_ts, min(line) AS min_line,
       CAST(min(tl) % 4294967296 AS BIGINT) AS first_line, CAST(max(tl) % 4294967296 AS BIGINT) AS last_line,
       arg_max(event_id, tl) AS last_event_id,
       count(*) FILTER (WHERE message LIKE '%failed (exitcode:%' OR message LIKE '%closing signal SIGTERM%')
           AS n_teardown_text,
       max(step) AS max_step, max(ts) FILTER (WHERE step IS NOT NULL) AS step_ts,
       min(ts) FILTER (WHERE says_step) AS start_ts, max(nr) AS nranks,
       arg_max(struct_pack(l := line, t := ts), CAST(nr AS HUGEINT) * 4294967296 - line) FILTER (WHERE nr IS NOT NULL)
           AS nranks_at
FROM e GROUP BY ALL
"""

LANE = "host, pod, rank, CASE WHEN rank IS NULL THEN coalesce(program, format, 'log') END AS source"
SANE = "ts >= TIMESTAMP '1990-01-01' AND ts < TIMESTAMP '2100-01-01'"
NOT_ECHO = "event_id NOT IN (SELECT event_id FROM echoes)"

LANES_ONE_STEP = f"""
SELECT {LANE}, count(*) AS events,
       count(*) FILTER (WHERE severity IN ('error', 'critical')) AS errors,
       count(*) FILTER (WHERE role = 'cause') AS causes,
       min(ts) FILTER (WHERE {SANE}) AS first_ts, max(ts) FILTER (WHERE {SANE}) AS last_ts,
       min(ts) FILTER (WHERE {SANE} AND role = 'cause') AS first_cause_ts,
       min(ts) FILTER (WHERE {SANE} AND severity IN ('error', 'critical')) AS first_error_ts,
       max(ts) FILTER (WHERE {SANE} AND (role IN ('cause', 'symptom') OR severity IN ('error', 'critical')))
           AS last_failure_ts
FROM events WHERE {NOT_ECHO} GROUP BY ALL
"""

BUCKETS_ONE_STEP = f"""
WITH span AS (SELECT greatest(1, ceil((epoch(max(ts)) - epoch(min(ts))) / 2000))::BIGINT AS width
              FROM events WHERE {SANE})
SELECT {LANE}, (epoch_us(ts) // (span.width * 1000000)) * span.width AS slot, any_value(span.width) AS width,
       count(*) AS events,
       max(CASE severity WHEN 'debug' THEN 0 WHEN 'info' THEN 1 WHEN 'notice' THEN 2 WHEN 'warning' THEN 3
               WHEN 'error' THEN 4 WHEN 'critical' THEN 5 ELSE 1 END) AS max_sev,
       bool_or(role = 'cause') AS cause, bool_or(role = 'symptom') AS symptom
FROM events, span WHERE {SANE} AND {NOT_ECHO}
GROUP BY host, pod, rank, source, slot
"""


def _same(con, made: str, oracle: str) -> None:
    con.execute(f"CREATE OR REPLACE TEMP TABLE oracle AS {oracle}")
    got = con.execute(f"DESCRIBE {made}").fetchall()
    want = con.execute("DESCRIBE oracle").fetchall()
    assert [c[:2] for c in got] == [c[:2] for c in want], made
    for a, b in ((made, "oracle"), ("oracle", made)):
        extra = con.execute(f"SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b}").fetchall()
        assert not extra, f"{made}: rows of {a} not in {b}: {extra[:3]}"


@pytest.mark.skipif(not BUNDLES, reason="no sample_logs bundles")
@pytest.mark.parametrize("name", CASES)
def test_two_step_summaries_equal_their_one_step_definitions(name, tmp_path, catalog, monkeypatch):
    bundle = next(b for b in BUNDLES if b.name == name)
    db = str(tmp_path / "s.duckdb")
    monkeypatch.chdir(bundle.parent)
    ingest(_files(bundle), db, catalog)
    con = store_connect(db, read_only=False)
    try:
        assert con.execute("SELECT count(*) FROM lanes").fetchone()[0] > 0
        _same(con, "lanes", LANES_ONE_STEP)
        _same(con, "lane_buckets", BUCKETS_ONE_STEP)
        con.execute(echoes_oracle_sql())
        assert con.execute("SELECT * FROM echoes ORDER BY event_id").fetchall() == \
            con.execute("SELECT * FROM echoes_oracle ORDER BY event_id").fetchall()   # the prechecks drop none
        build_base(con)
        _same(con, "event_groups", GROUPS_ONE_STEP)
        assert con.execute("SELECT sum(n) FROM event_groups").fetchone()[0] == \
            con.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        con.close()


def test_echoes_need_a_rank_in_two_files(tmp_path, catalog):
    """The same rank's same message in two files is an echo; in one file it is not (the precheck
    keeps exactly the ranks with lines in two files)."""
    a, b = tmp_path / "console.log", tmp_path / "tee.log"
    a.write_text("[rank3]:step 1 loss 0.5\n[rank4]:step 1 loss 0.5\n[rank4]:step 1 loss 0.5\n")
    b.write_text("[rank3]:step 1 loss 0.5\n")   # one rank: the more specific file, whose copy is kept
    db = str(tmp_path / "e.duckdb")
    ingest([str(a), str(b)], db, catalog)
    con = store_connect(db)
    try:
        got = con.execute("SELECT e.rank, e.file FROM echoes x JOIN events e USING (event_id)").fetchall()
    finally:
        con.close()
    assert got == [(3, str(a))]


def test_echoes_are_looked_for_only_where_a_ranks_files_meet_in_time_and_find_what_every_line_gives(tmp_path, catalog):
    """The prechecks of echoes.sql compare the messages of a rank's files that come within 2 s of another
    file of that rank (or have untimed lines both): a rank's two job outputs one after the other are not
    compared; the result is the definition's (every message of every rank seen in two files), also where
    the most specific copy of a message is in a file no other reaches in time (then no echo at all)."""
    def line(s, msg, rank):
        return f"[rank{rank}]:2026-03-02 {s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d},000 - INFO - train - {msg}\n"
    console = tmp_path / "slurm-1.out"      # the console, with the tee'd copies
    tee = tmp_path / "tee.out"              # another console-like copy, close in time
    later = tmp_path / "slurm-2.out"        # the next job's output, an hour later: no copy within reach
    per_rank = tmp_path / "attempt_0" / "3" / "stdout.log"   # the most specific file, but far in time
    per_rank.parent.mkdir(parents=True)
    console.write_text(line(10, "step 1 loss 0.5", 3) + line(11, "checkpoint saved", 3) + line(12, "step 2 loss 0.4", 4))
    tee.write_text(line(10, "step 1 loss 0.5", 3) + line(13, "checkpoint saved", 3) + line(12, "step 2 loss 0.4", 4))
    later.write_text(line(3500, "step 2 loss 0.4", 4) + line(3501, "checkpoint saved", 3))
    per_rank.write_text(line(3000, "step 1 loss 0.5", 3))
    db = str(tmp_path / "e.duckdb")
    ingest([str(p) for p in (console, tee, later, per_rank)], db, catalog)
    con = store_connect(db, read_only=False)
    try:
        con.execute(echoes_oracle_sql())
        want = con.execute("SELECT * FROM echoes_oracle ORDER BY event_id").fetchall()
        assert con.execute("SELECT * FROM echoes ORDER BY event_id").fetchall() == want
        got = con.execute("SELECT e.rank, e.message, e.file, k.file FROM echoes x JOIN events e USING (event_id) "
                          "JOIN events k ON k.event_id = x.of_event_id ORDER BY 1, 2").fetchall()
        # rank 4's step 2: one echo (console/tee, 0 s); rank 3's 'checkpoint saved' 2 s apart: one echo;
        # rank 3's step 1: its most specific copy is the per-rank file, an hour away: no echo
        assert [(r, m) for r, m, _, _ in got] == [(3, "checkpoint saved"), (4, "step 2 loss 0.4")], got
        # the precheck: the per-rank file and the later job's output are compared with no other
        spans = sql_file("store/echoes.sql").split("\nmulti AS (")[0].replace("CREATE OR REPLACE TABLE echoes AS\n", "")
        shared = {f for f, in con.execute(spans + "\nSELECT DISTINCT f.path FROM shared JOIN files f USING (file_id)"
                                          ).fetchall()}
        assert shared == {str(console), str(tee)}
    finally:
        con.close()


# The attempts' reads of every progress line on the aligned clock (ranktrace.correlate.attempts: step_buckets.sql,
# PROGRESS_SECONDS), defined the plain way: every line resolved and aligned by view aligned_events.
STEP_BUCKETS_ONE_STEP = """
SELECT e.host, e.rank, CASE WHEN e.rank IS NULL THEN e.file END AS file,
       time_bucket(INTERVAL 1 MINUTE, e.ats) AS t,
       min(e.ats) AS first_ats, max(e.ats) AS last_ats,
       min(coalesce(p.epoch, 0) * 1000000000 + p.step) AS lo,
       max(coalesce(p.epoch, 0) * 1000000000 + p.step) AS hi,
       arg_min(e.file, (e.ats, e.file, e.line)) AS first_file, arg_min(e.line, (e.ats, e.file, e.line)) AS first_line
FROM aligned_events e JOIN progress p USING (event_id)
WHERE e.kind = 'progress' AND e.ats IS NOT NULL AND e.ts_ok AND p.step IS NOT NULL
GROUP BY ALL
ORDER BY host NULLS LAST, rank NULLS LAST, file NULLS LAST, t
"""
PROGRESS_SECONDS_ONE_STEP = ("SELECT DISTINCT time_bucket(INTERVAL 1 SECOND, ats) AS t FROM aligned_events "
                             "WHERE kind = 'progress' AND ats IS NOT NULL ORDER BY 1")
PROGRESS_CASES = ("slurm_torchrun_sigkill_skew", "torchrun_hang_skew", "k8s_exception_cri_skew", "torchrun_restart_resume",
                  "slurm_requeue_node_failure")


@pytest.mark.skipif(not BUNDLES, reason="no sample_logs bundles")
@pytest.mark.parametrize("offsets", ["estimated", "odd"])
@pytest.mark.parametrize("name", PROGRESS_CASES)
def test_progress_reads_through_identity_keys_equal_their_definitions(name, offsets, tmp_path, catalog, monkeypatch):
    """step_buckets.sql and attempts.PROGRESS_SECONDS read a progress line's host, rank, file and clock
    offset from its identity key (attempts.progress_keys); they give what every line resolved and aligned by
    aligned_events gives, with the clock's offsets and with odd ones (milliseconds that put a minute's
    boundary inside a logged second, a whole minute, negative)."""
    from ranktrace.correlate import attempts
    from ranktrace.correlate.clock import align, create_aligned_view
    from ranktrace.correlate.util import has_columns
    bundle = next((b for b in BUNDLES if b.name == name), None)
    if bundle is None:
        pytest.skip(f"no bundle {name}")
    db = str(tmp_path / "s.duckdb")
    monkeypatch.chdir(bundle.parent)
    ingest(_files(bundle), db, catalog)
    con = store_connect(db)
    try:
        clock = align(con)
        if offsets == "odd":
            odd = (0.4567, -60.0, 37.0011, -0.999, 119.5)
            clock = [dict(c, offset_s=odd[i % len(odd)]) for i, c in enumerate(clock)]
            create_aligned_view(con, clock)
        attempts.progress_keys(con)
        got = con.execute(attempts.PROGRESS_SECONDS).fetchall()
        assert got == con.execute(PROGRESS_SECONDS_ONE_STEP).fetchall()
        assert got, "no progress line: the comparison proves nothing"
        if has_columns(con, "progress", "step"):
            oracle = STEP_BUCKETS_ONE_STEP if has_columns(con, "progress", "epoch") else \
                STEP_BUCKETS_ONE_STEP.replace("p.epoch", "NULL")
            got = con.execute(attempts.query_text(con, "step_buckets")).fetchall()
            assert got == con.execute(oracle).fetchall()
            assert got, "no step bucket: the comparison proves nothing"
    finally:
        con.close()

