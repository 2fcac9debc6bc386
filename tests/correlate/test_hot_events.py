"""diagnose reads two small relations instead of every line: hot_events (the lines the
detectors look at one by one, queries/align/hot_events.sql) and aligned_groups (every line in
groups, queries/align/event_groups.sql). On sample bundles of every family they must give
what the whole aligned view gives: each detector the same rows, each per-rank / per-host
summary the same values as the same summary computed line by line."""

from __future__ import annotations

import pytest

from ranktrace.correlate.clock import align, anchor_views
from ranktrace.correlate.detectors.base import query
from ranktrace.correlate.util import ensure_kind_catalog, sql_file, sql_header
from ranktrace.correlate.verdict import detected_lines
from ranktrace.ingest.pipeline import ingest
from ranktrace.resources import data_dir
from ranktrace.store import connect as store_connect

from rt_testlib import REPO, aligned

BUNDLES = ["demo_sigkill_4node", "k8s_controlplane_etcd_slow", "k8s_gang_partial_restart",
           "k8s_volcano_stranded_gpus", "slurm_node_failure_topology", "slurm_torchrun_sigkill_skew",
           "torchrun_hang_skew", "torchrun_rdzv_missing_node", "slurm_oom_cgroup"]
DETECT = sorted(p.stem for p in (data_dir("queries") / "detect").glob("*.sql"))

# The per-line formulations of the summaries that now read groups: the oracle.
PER_LINE = {
    "rank_activity": r"""
        WITH ev AS (
            SELECT event_id, host, rank, ats, ts_ok, role, file, line,
                   CASE WHEN (kind = 'progress' OR (kind IS NULL AND severity IN ('info', 'debug', 'notice')))
                              AND regexp_matches(message, '(?i)\b(?:global[_ ])?(?:step|iter|iteration)\s*[=:#]?\s*\[?\d+')
                        THEN TRY_CAST(regexp_extract(message, '(?i)\b(?:global[_ ])?(?:step|iter|iteration)\s*[=:#]?\s*\[?(\d+)', 1) AS BIGINT)
                   END AS step
            FROM aligned_events WHERE rank IS NOT NULL)
        SELECT host, rank, min(ats) FILTER (WHERE ts_ok) AS first_ats, max(ats) FILTER (WHERE ts_ok) AS last_ats,
               max(ats) FILTER (WHERE ts_ok AND step IS NOT NULL) AS last_progress_ats, max(step) AS last_step,
               last(event_id ORDER BY ats, file DESC, line) FILTER (WHERE ts_ok AND ats IS NOT NULL) AS last_event_id,
               count(*) FILTER (WHERE role = 'cause') AS n_cause, count(*) FILTER (WHERE role = 'symptom') AS n_symptom,
               max(ats) FILTER (WHERE ts_ok AND role IN ('cause', 'symptom')) AS last_fail_ats,
               count(*) AS n
        FROM ev GROUP BY host, rank ORDER BY rank, host""",
    "host_activity": """
        WITH per_file AS (
            SELECT host, file_id, max(line) FILTER (WHERE ts_ok) AS timed_line,
                   max(line) FILTER (WHERE NOT ts_ok AND (step IS NOT NULL OR kind = 'progress')) AS untimed_step_line,
                   max(line) FILTER (WHERE NOT ts_ok AND ats IS NOT NULL) AS untimed_line
            FROM aligned_events WHERE host IS NOT NULL GROUP BY host, file_id
        ), went_on AS (
            SELECT host, bool_or(untimed_step_line > coalesce(timed_line, 0)) AS untimed_progress_after,
                   list({'file_id': file_id, 'line': untimed_line} ORDER BY file_id)
                       FILTER (WHERE untimed_line > coalesce(timed_line, 0)) AS untimed_tails
            FROM per_file GROUP BY host
        )
        SELECT host, min(ats) FILTER (WHERE ts_ok) AS first_ats, max(ats) FILTER (WHERE ts_ok) AS last_ats,
               count(*) FILTER (WHERE role = 'cause') AS n_cause, count(*) FILTER (WHERE role = 'symptom') AS n_symptom,
               max(ats) FILTER (WHERE ts_ok AND role IN ('cause', 'symptom') AND kind NOT IN ('kernel_hung_task', 'kernel_lockup'))
                   AS last_fail_ats,
               count(*) FILTER (WHERE kind IN ('worker_failed', 'failure_summary', 'sigterm_sent', 'task_exit', 'signal_received')
                                  OR message LIKE '%failed (exitcode:%' OR message LIKE '%closing signal SIGTERM%') AS n_teardown,
               count(DISTINCT rank) AS n_ranks, count(*) AS n,
               coalesce(any_value(w.untimed_progress_after), false) AS untimed_progress_after,
               any_value(w.untimed_tails) AS untimed_tails
        FROM aligned_events LEFT JOIN went_on w USING (host) WHERE host IS NOT NULL GROUP BY host ORDER BY host""",
    "progress_spans": """
        SELECT host, rank, count(*) AS n, min(ats) AS first_ats, max(ats) AS last_ats FROM aligned_events
        WHERE kind = 'progress' AND ats IS NOT NULL GROUP BY host, rank ORDER BY host NULLS LAST, rank NULLS LAST""",
    "job_started": r"""
        SELECT min(ats) FROM aligned_events
        WHERE ats IS NOT NULL AND (kind IN ('progress', 'rdzv_complete', 'comm_init')
                                   OR (kind IS NULL AND rank IS NOT NULL
                                       AND regexp_matches(message, '(?i)\b(?:step|iter|iteration)\s*[=:#]?\s*\d+')))""",
    "coverage": """
        SELECT count(*), count(ats), count(DISTINCT host), count(DISTINCT rank),
               arg_min(role, struct_pack(t := ats, f := file, l := line)) FILTER (WHERE ats IS NOT NULL), min(ats),
               max(ats), count(DISTINCT pod) FILTER (WHERE rank IS NOT NULL)
        FROM aligned_events""",
    "nccl_nranks": r"""
        SELECT TRY_CAST(regexp_extract(message, '\bnranks (\d+)', 1) AS INTEGER) AS value, host, pod, ats, file, line, format
        FROM aligned_events WHERE raw LIKE '%nranks %' AND regexp_matches(message, '\bnranks \d+')
        QUALIFY row_number() OVER (ORDER BY value DESC NULLS LAST, file, line) = 1""",
}
FROM_GROUPS = {
    "rank_activity": sql_file("detect/rank_activity.sql"),
    "host_activity": sql_file("detect/host_activity.sql"),
    "progress_spans": sql_file("detect/progress_spans.sql"),
    "job_started": """
        SELECT min(CASE WHEN kind IN ('progress', 'rdzv_complete', 'comm_init') THEN first_ats
                        WHEN kind IS NULL AND rank IS NOT NULL THEN start_ats END)
        FROM aligned_groups WHERE first_ats IS NOT NULL""",
    "coverage": """
        SELECT sum(n), sum(n) FILTER (WHERE first_ats IS NOT NULL), count(DISTINCT host), count(DISTINCT rank),
               arg_min(role, struct_pack(t := first_ats, f := file, l := first_line)) FILTER (WHERE first_ats IS NOT NULL),
               min(first_ats), max(last_ats), count(DISTINCT pod) FILTER (WHERE rank IS NOT NULL)
        FROM aligned_groups""",
    "nccl_nranks": """
        SELECT value, host, pod, ats, file, line, format FROM (
        """ + sql_file("detect/allocation.sql").replace("aligned_events", "hot_events") + """
        ) WHERE what = 'nccl_nranks'""",
}


@pytest.fixture(scope="module", params=BUNDLES)
def con(request, sample_diagnosis):
    c = aligned(sample_diagnosis(REPO / "sample_logs" / request.param)[0])
    yield c
    c.close()


def _rows(con, sql):
    return sorted(map(repr, con.execute(sql).fetchall()))


def test_hot_events_are_the_aligned_events_that_pass_the_filter(con):
    where = sql_file("align/hot_events.sql").split("\nWHERE ", 1)[1]
    assert _rows(con, "SELECT * FROM hot_events") == _rows(con, "SELECT * FROM aligned_events WHERE " + where)


def test_hot_ids_hold_every_line_the_filter_passes(con):
    """hot_src is selected among the lines of hot_ids.sql (a wider filter on the lines' integers, marks and
    raw): every line hot_events.sql's filter passes, with or without its marks guard, is one of them."""
    where = sql_file("align/hot_events.sql").split("\nWHERE ", 1)[1]
    ids = sql_file("align/hot_ids.sql")
    for w in (where, where.replace("has_mark(marks, 'hot') AND (", "TRUE AND (")):
        passed = con.execute(f"SELECT count(*) FROM events_keyed WHERE {w}").fetchone()[0]
        missing = con.execute(f"SELECT count(*) FROM events_keyed WHERE ({w}) "
                              f"AND event_id NOT IN (SELECT event_id FROM ({ids}))").fetchone()[0]
        assert passed and missing == 0


def test_hot_ids_read_the_marked_lines_only_and_lose_none(con):
    """hot_ids.sql's terms run on the lines the engine marked `hot` or `taken` only (parsers/marks.toml:
    `taken` by a line's class and two line tests): every line its terms pass is marked, so the guard
    leaves the same lines; and it does guard (most lines are marked neither)."""
    ids = sql_file("align/hot_ids.sql")
    guard = "(has_mark(marks, 'hot') OR has_mark(marks, 'taken'))"
    assert guard in ids
    assert con.execute("SELECT count(*) FROM event_lines WHERE marks IS NULL").fetchone()[0] == 0
    unguarded = ids.replace(guard, "TRUE")
    lost = con.execute(f"SELECT count(*) FROM ({unguarded}) WHERE NOT (has_mark(marks, 'hot') "
                       f"OR has_mark(marks, 'taken'))").fetchone()[0]
    assert lost == 0
    assert _rows(con, ids) == _rows(con, unguarded)
    taken = con.execute("SELECT count(*) FROM event_lines WHERE has_mark(marks, 'taken')").fetchone()[0]
    assert 0 < taken < con.execute("SELECT count(*) FROM event_lines").fetchone()[0]


def test_the_marks_guard_leaves_out_no_line_its_text_tests_pass(con):
    """hot_events.sql runs its text tests on the lines the engine marked only: without the
    guard the same lines pass (marks.py; tests/correlate/test_marks.py checks each literal)."""
    where = sql_file("align/hot_events.sql").split("\nWHERE ", 1)[1]
    guard = "has_mark(marks, 'hot') AND ("
    assert guard in where
    assert con.execute("SELECT count(*) FROM aligned_events WHERE marks IS NULL").fetchone()[0] == 0
    assert _rows(con, "SELECT * FROM hot_events") == _rows(con, "SELECT * FROM aligned_events WHERE "
                                                           + where.replace(guard, "TRUE AND ("))


def test_the_clock_anchors_of_their_lines_are_those_of_every_line(con):
    """anchors.sql reads events_id of the lines of anchor_lines.sql only (clock.anchor_views; diagnose
    takes the anchors its ingest kept: the lines are read here)."""
    anchor_views(con)
    anchors = sql_file("align/anchors.sql")
    assert "events_id_a" in anchors
    assert _rows(con, anchors) == _rows(con, anchors.replace("events_id_a", "events_id"))


@pytest.mark.parametrize("name", DETECT)
def test_every_detector_finds_in_hot_events_what_it_finds_in_all_events(con, name):
    text = sql_file(f"detect/{name}.sql")
    if sql_header(text).get("scope") == "all" or "aligned_events" not in text:
        pytest.skip("reads the whole view or only the groups")
    params = {k: v for k, v in {"window_s": 120.0, "own_window_s": 25.0, "healthy": None}.items()
              if f"${k}" in text} or None
    hot = query(con, name, params)   # what diagnose runs: the file over hot_events
    assert sorted(map(repr, (tuple(r.values()) for r in hot))) == sorted(map(repr, con.execute(text, params).fetchall()))


@pytest.mark.parametrize("name", DETECT)
def test_every_detector_finds_without_the_markers_lines_what_it_finds_in_hot_events(con, name):
    """An attempt scope's detectors read hot_events less the lines only the attempts' markers read
    (verdict.detected_lines: hot_events.sql's filter without its markers' term)."""
    text = sql_file(f"detect/{name}.sql")
    if sql_header(text).get("scope") == "all" or "aligned_events" not in text:
        pytest.skip("reads the whole view or only the groups")
    params = {k: v for k, v in {"window_s": 120.0, "own_window_s": 25.0, "healthy": None}.items()
              if f"${k}" in text} or None
    detected_lines(con)
    try:
        assert con.execute("SELECT count(*) FROM hot_detect").fetchone()[0]
        narrow = sorted(map(repr, con.execute(text.replace("aligned_events", "hot_detect"), params).fetchall()))
    finally:
        con.execute("DROP TABLE temp.hot_detect")
    assert narrow == sorted(map(repr, con.execute(text.replace("aligned_events", "hot_events"), params).fetchall()))


@pytest.mark.parametrize("name", sorted(PER_LINE))
def test_summaries_from_groups_equal_the_summaries_line_by_line(con, name):
    assert _rows(con, FROM_GROUPS[name]) == _rows(con, PER_LINE[name])


# Lines of every alternative of clean_end.sql's regexp (any case but a scheduler's state, upper case only), and
# some that look alike but are not ends: the watchdog's report of a hung collective names the last work that
# completed.
CLEAN_ENDS = ["[default] worker group SUCCEEDED", "Type: JobSucceeded", "    Exit Code:    0",
              "launcher: process 12 exited with code 0", "srun: task 3 exited with exit code 0",
              "all steps completed successfully", "Training is done.", "TRAINING FINISHED", "training complete"]
STATES = ["JobId=88 JobState=COMPLETED Reason=None"]
NOT_ENDS = ["step 10 loss 1.2", "training resumed from step 10", "the task was not completed", "exit code: 1",
            "jobid=88 jobstate=completed reason=none",
            "[PG ID 0 PG GUID 0(default_pg) Rank 0] Exception (either an error or timeout) detected by watchdog at "
            "work: 1237, last enqueued NCCL work: 1240, last completed NCCL work: 1236."]


def test_the_lines_of_a_normal_end_are_hot_lines(tmp_path, catalog):
    """clean_end.sql runs over hot_events (a running attempt's end is not looked for in every line):
    each alternative of its regexp, in any case (a scheduler's COMPLETED in upper case), passes the hot filter, and it finds there what it
    finds in every line."""
    log = tmp_path / "job.log"
    log.write_text("".join(f"2026-03-02 01:00:{i:02d},000 - INFO - train - {t}\n"
                           for i, t in enumerate([*CLEAN_ENDS, *(t.swapcase() for t in CLEAN_ENDS), *STATES,
                                                  *NOT_ENDS])))
    db = str(tmp_path / "s.store")
    ingest([str(log)], db, catalog)
    c = store_connect(db)
    ensure_kind_catalog(c)
    align(c)
    text = sql_file("detect/clean_end.sql")
    every = sorted(map(repr, c.execute(text).fetchall()))
    assert len(every) == 2 * len(CLEAN_ENDS) + len(STATES)
    assert sorted(map(repr, (tuple(r.values()) for r in query(c, "clean_end")))) == every
    c.close()
