"""View events_aligned (queries/store/clock.sql) as ingest leaves it: each class's clock offset found once
per class, and the line's attempt found with a CASE over its host's span starts instead of a join per
line (store.make_aligned_view). Both must give the rows of the join form clock.sql defines, column for
column; when the spans are not as the attempts write them, the join form itself is kept."""

from __future__ import annotations

import datetime as dt

from ranktrace.store import _aligned_view_sql, make_aligned_view, refresh_summaries

from .fixtures import T0, ev, steps, store
from .test_attempts import HOSTS, crash, launch, restart_notice

SKEW = {"n2": 30.0}   # n2's clock runs 30 s ahead


def three_attempts() -> list[dict]:
    """Attempts at 0, 240 and 480 on n1 and n2 (n2 writes on its own clock, 30 s ahead); n3 writes in
    attempt 1 only; a launcher line of no host, a line of no time, a line of a bogus year."""
    out = []
    for k, at in enumerate((0, 240, 480)):
        out += launch(at, delay=SKEW) + steps(HOSTS, 30, step_time=5.0, start=at + 10, skew=SKEW)
        if k < 2:
            out += crash(at + 200, "n2", 3) + [restart_notice(at + 220, "n1"), restart_notice(at + 221 + 30, "n2")]
    out += [ev(50, "n3 agent up", host="n3", file="n3.log"),
            ev(300, "launcher: job still running", file="launcher.log"),
            ev(None, "NodeName=n2 State=IDLE", host="n2", file="scontrol_show_node.txt"),
            ev(-(T0 - dt.datetime(1975, 1, 1)).total_seconds(), "rtc reset", host="n1", file="n1-kern.log")]
    out += [ev(700 + i, "[default] worker group successfully finished.", kind="worker_group_done", host=h,
               pid=100, file=f"{h}.log") for i, h in enumerate(HOSTS)]
    return out


def _joined(con) -> None:
    """Temp view aligned_by_join: events_aligned as clock.sql writes it (the attempt by a join)."""
    con.execute(_aligned_view_sql().replace("CREATE OR REPLACE VIEW events_aligned AS",
                                            "CREATE OR REPLACE TEMP VIEW aligned_by_join AS", 1))


def _same_rows(con, a: str, b: str) -> None:
    for x, y in ((a, b), (b, a)):
        diff = con.execute(f"SELECT * FROM {x} EXCEPT ALL SELECT * FROM {y}").fetchall()
        assert diff == [], (x, y, diff[:3])


def _view_sql(con) -> str:
    return con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'events_aligned'").fetchone()[0]


def test_ingest_finds_the_attempts_without_a_join_and_gives_the_rows_of_the_join():
    con = store(three_attempts())
    refresh_summaries(con)   # what every ingest ends with
    assert "JOIN attempt_spans" not in _view_sql(con)   # the CASE form was chosen
    offsets = dict(con.execute("SELECT host, offset_s FROM clock_offsets").fetchall())
    assert abs(offsets["n2"] - offsets["n1"] - 30.0) < 1.0
    per = dict(con.execute("SELECT attempt, count(*) FROM events_aligned GROUP BY 1").fetchall())
    assert sorted(per, key=lambda a: (a is None, a)) == [1, 2, 3, None] and min(per[a] for a in (1, 2, 3)) > 100
    _joined(con)
    _same_rows(con, "events_aligned", "aligned_by_join")
    # ats = ts - offset_s (as the join form wrote it: an interval); NULL for the bogus year
    bad = con.execute("SELECT count(*) FILTER (WHERE ats IS DISTINCT FROM CASE WHEN year(ts) BETWEEN 1990 AND 2099 "
                      "THEN ts - to_microseconds(CAST(round(offset_s * 1e6) AS BIGINT)) END) FROM events_aligned"
                      ).fetchone()[0]
    assert bad == 0


def test_spans_that_do_not_follow_one_another_keep_the_join():
    """An overlap (a span for n1 added by hand over attempt 2's): the join gives those lines twice; the
    CASE form could not, so make_aligned_view keeps the join."""
    con = store(three_attempts())
    refresh_summaries(con)
    n = con.execute("SELECT count(*) FROM events_aligned").fetchone()[0]
    con.execute("INSERT INTO attempt_spans SELECT host, 9, start, stop FROM attempt_spans WHERE host = 'n1' AND attempt = 2")
    make_aligned_view(con)
    assert "JOIN attempt_spans" in _view_sql(con)
    twice = con.execute("SELECT count(*) FROM events_aligned WHERE attempt = 9").fetchone()[0]
    assert twice > 0 and con.execute("SELECT count(*) FROM events_aligned").fetchone()[0] == n + twice
    _joined(con)
    _same_rows(con, "events_aligned", "aligned_by_join")


def test_no_spans_is_attempt_one_for_every_timed_line():
    con = store(three_attempts())
    refresh_summaries(con)
    con.execute("DELETE FROM attempt_spans")
    make_aligned_view(con)
    assert "JOIN attempt_spans" not in _view_sql(con)
    assert con.execute("SELECT DISTINCT attempt FROM events_aligned ORDER BY 1").fetchall() == [(1,), (None,)]
    _joined(con)
    _same_rows(con, "events_aligned", "aligned_by_join")


def test_the_columns_keep_what_describe_showed():
    """Names, types and NOT NULL as the view over events showed them (session 18's form)."""
    con = store(three_attempts())
    refresh_summaries(con)
    want = con.execute("DESCRIBE events").fetchall() + [
        ("offset_s", "DOUBLE", "YES", None, None, None), ("ats", "TIMESTAMP", "YES", None, None, None),
        ("attempt", "INTEGER", "YES", None, None, None)]
    assert con.execute("DESCRIBE events_aligned").fetchall() == want
    assert [r[0] for r in want if r[2] == "NO"] == ["file", "ts_kind", "format", "severity", "role"]
    _joined(con)
    assert con.execute("DESCRIBE aligned_by_join").fetchall() == want
