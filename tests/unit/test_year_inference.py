"""Year-less times take their year from the bundle's dated evidence."""

from rt_testlib import write


def test_december_glog_in_a_january_bundle_goes_to_the_year_before(tmp_path, ingest_to):
    d = tmp_path / "bundle"
    write(d / "slurmd.log", "[2026-01-03T00:10:00.000] launch task StepId=7.0 request from UID:0\n")
    write(d / "node1" / "syslog", "Dec 31 23:59:58 node1 slurmd[12]: something late in the year\n"
                                  "Jan  3 00:09:00 node1 slurmd[12]: something early in the new year\n")
    s, con = ingest_to([d])
    rows = con.execute("SELECT strftime(ts, '%Y-%m-%d %H:%M:%S'), ts_kind FROM events "
                       "WHERE file LIKE '%syslog' ORDER BY line").fetchall()
    assert rows == [("2025-12-31 23:59:58", "year_inferred"), ("2026-01-03 00:09:00", "year_inferred")]
    assert s.reference_year == 2026


def test_without_any_dated_line_the_inputs_mtime_gives_the_year(tmp_path, ingest_to):
    import os
    f = write(tmp_path / "in" / "syslog", "Mar  2 07:56:01 node-5 kubelet[38510]: hello\n")
    stamp = 1_741_000_000  # 2025-03-03 UTC
    os.utime(f, (stamp, stamp))
    s, con = ingest_to([f])
    assert con.execute("SELECT year(ts) FROM events").fetchone()[0] == 2025


def test_without_any_dated_line_a_time_is_never_placed_after_its_collection(tmp_path, ingest_to):
    """March lines collected in December are that year's, not the next year's for being nearer."""
    import os
    f = write(tmp_path / "in" / "syslog", "Mar  2 07:56:01 node-5 kubelet[38510]: hello\n"
                                          "Dec  3 23:00:00 node-5 kubelet[38510]: the day before\n")
    stamp = 1_796_342_400  # 2026-12-04 00:00 UTC
    os.utime(f, (stamp, stamp))
    s, con = ingest_to([f])
    assert [r[0] for r in con.execute("SELECT strftime(ts, '%Y-%m-%d') FROM events ORDER BY line").fetchall()] \
        == ["2026-03-02", "2026-12-03"]


def test_lines_interpolated_from_a_yearless_time_move_with_it(tmp_path, ingest_to):
    d = tmp_path / "bundle"
    write(d / "slurmd.log", "[2026-01-03T00:10:00.000] launch task StepId=7.0 request from UID:0\n")
    write(d / "node1.log", "[rank0]:[E103 00:10:05.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
                           "collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, "
                           "NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
                           "a line without a time of its own\n")
    s, con = ingest_to([d])
    rows = con.execute("SELECT year(ts), ts_kind FROM events WHERE file LIKE '%node1.log' ORDER BY line").fetchall()
    assert rows == [(2026, "year_inferred"), (2026, "interpolated")]


def test_lanes_summary_matches_the_events(tmp_path, ingest_to):
    d = tmp_path / "bundle"
    write(d / "node1.log", "[rank0]:calefo8:1:2 [0] NCCL INFO proxy.cc:698 -> 6\n[rank1]:plain words\n")
    write(d / "slurmd.log", "[2026-01-03T00:10:00.000] launch task StepId=7.0 request from UID:0\n")
    s, con = ingest_to([d])
    direct = con.execute("""SELECT host, rank, count(*), min(ts), max(ts) FROM events
                            GROUP BY ALL ORDER BY ALL""").fetchall()
    lanes = con.execute("SELECT host, rank, events, first_ts, last_ts FROM lanes ORDER BY ALL").fetchall()
    assert lanes == direct and len(lanes) == 3


def test_formats_explain_never_shows_the_placeholder_year(capsys):
    """A year-less line explained alone has no bundle to take its year from:
    it says so instead of showing the engine's placeholder year 2000."""
    import json
    from ranktrace.cli import main
    assert main(["formats", "explain", "Mar  2 03:00:01 node1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, "
                 "GPU has fallen off the bus."]) == 0
    out = capsys.readouterr().out
    first = json.loads(out[:out.index("}") + 1])
    assert first["ts_kind"] == "year_inferred"
    assert first["ts"] == "(year inferred at ingest)-03-02 03:00:01.000000" and "2000" not in first["ts"]


def _placed(con, ref: float):
    """Table t: a year-less time every 37 minutes over the placeholder year (and the days around it),
    a dated one each day of the years the reference can place them in, each with ts as view event_lines
    places it (store._year_ts)."""
    from ranktrace.store import _year_ts
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"""CREATE OR REPLACE TABLE t AS
        SELECT ts, year_placeholder, ts AS ts_logged FROM (
            SELECT range AS ts, true AS year_placeholder
            FROM range(TIMESTAMP '1999-12-30', TIMESTAMP '2001-01-03', INTERVAL 37 MINUTE)
            UNION ALL
            SELECT range, false FROM range(TIMESTAMP '2023-01-01', TIMESTAMP '2029-01-01', INTERVAL 1 DAY))""")
    con.execute(f"CREATE OR REPLACE TABLE t AS SELECT {_year_ts(ref)} AS ts, year_placeholder, ts_logged FROM t")


def test_the_placed_year_is_the_exact_rule_on_every_span():
    """store._year_ts (a constant shift per span of the placeholder year, added to the line's
    microseconds) places every year-less time where the exact rule (_year_exact: three calendar shifts
    and distances) does, at each span's edges too, and leaves a dated time as it is."""
    import duckdb
    from datetime import datetime, timezone
    from ranktrace.store import _year_exact, _year_segments, _year_ts
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    us = lambda *a: int(datetime(*a, tzinfo=timezone.utc).timestamp()) * 1_000_000   # noqa: E731
    for ref_day in ((2026, 7, 1), (2026, 1, 2), (2028, 3, 1), (2026, 3, 4, 15, 8, 17)):
        ref = us(*ref_day) / 1e6 + 0.9355
        segs = _year_segments(ref)
        edges = sorted({e + d for lo, hi, _ in segs for e in (lo, hi) for d in (-1, 0, 1)})
        assert len(edges) >= 6
        # the spans tile the placeholder year, edge to edge: a cut found a microsecond off would leave a span
        # of no constant shift to the exact rule (right, and slower)
        assert [segs[0][0], segs[-1][1]] == [us(1999, 12, 30), us(2001, 1, 3)], segs
        assert all(a[1] == b[0] for a, b in zip(segs, segs[1:])), segs
        con.execute("""CREATE OR REPLACE TABLE t AS
            SELECT range AS ts, true AS year_placeholder
            FROM range(TIMESTAMP '1999-12-30', TIMESTAMP '2001-01-03', INTERVAL 37 MINUTE)
            UNION ALL SELECT make_timestamp(e), true FROM unnest(?::BIGINT[]) AS u(e)
            UNION ALL SELECT range, false FROM range(TIMESTAMP '2023-01-01', TIMESTAMP '2029-01-01', INTERVAL 1 DAY)
            UNION ALL SELECT NULL, true""", [edges])
        n, moved, wrong = con.execute(
            f"SELECT count(*), count(*) FILTER (WHERE year_placeholder AND placed <> ts), count(*) FILTER "
            f"(WHERE placed IS DISTINCT FROM CASE WHEN year_placeholder THEN {_year_exact(ref)} ELSE ts END) "
            f"FROM (SELECT *, {_year_ts(ref)} AS placed FROM t)").fetchone()
        assert n > 16_000 and moved > 14_000, (ref_day, n, moved)
        assert wrong == 0, (ref_day, wrong)


def test_a_window_on_the_logged_time_keeps_every_line_the_placed_time_puts_in_it():
    """store.logged_window is what readers filter on (the files' statistics answer it): every line whose
    placed time is in the window passes it, and a year-less line passes only from the window's spans of
    the placeholder year (or where the exact rule holds)."""
    import duckdb
    from datetime import datetime, timezone
    from ranktrace.store import _year_segments, logged_window
    con = duckdb.connect()
    us = lambda *a: int(datetime(*a, tzinfo=timezone.utc).timestamp()) * 1_000_000   # noqa: E731
    # references mid-year, just after a new year (both neighbour years), and in a leap year's spring
    for ref_day in ((2026, 7, 1), (2026, 1, 2), (2028, 3, 1)):
        ref = us(*ref_day) / 1e6
        _placed(con, ref)
        segs = _year_segments(ref)
        for lo, hi in ((us(2025, 12, 31, 20), us(2026, 1, 1, 4)), (us(2026, 3, 1), us(2026, 3, 1, 12)),
                       (us(2028, 2, 28, 23), us(2028, 3, 1, 1)), (us(2026, 6, 15, 3), us(2026, 6, 15, 3, 30)),
                       (us(2024, 12, 31), us(2027, 1, 2))):
            inside = f"epoch_us(ts) BETWEEN {lo} AND {hi}"
            pred = logged_window(segs, lo, hi)
            missed = con.execute(f"SELECT count(*) FROM t WHERE {inside} AND NOT {pred}").fetchone()[0]
            assert missed == 0, (ref_day, lo, hi)
            kept = con.execute(f"SELECT count(*) FROM t WHERE {inside}").fetchone()[0]
            extra = con.execute(f"SELECT count(*) FROM t WHERE {pred} AND NOT ({inside})").fetchone()[0]
            assert extra <= kept // 10 + 3, (ref_day, lo, hi, kept, extra)   # a window, not the store
        # without a placed year the window is the logged time's own
        assert logged_window(None, 5, 9) == ("(ts_logged BETWEEN make_timestamp(5::BIGINT) "
                                             "AND make_timestamp(9::BIGINT))")


def test_a_store_keeps_its_year_segments_and_its_lines_their_logged_time(tmp_path, ingest_to):
    d = tmp_path / "bundle"
    write(d / "slurmd.log", "[2026-01-03T00:10:00.000] launch task StepId=7.0 request from UID:0\n")
    write(d / "node1" / "syslog", "Dec 31 23:59:58 node1 slurmd[12]: something late in the year\n")
    s, con = ingest_to([d])
    from ranktrace.store import _year_segments, meta_value, year_segments
    assert year_segments(con) == _year_segments(float(meta_value(con, "year_reference")))
    rows = con.execute("SELECT strftime(ts_logged, '%Y-%m-%d'), strftime(ts, '%Y-%m-%d') FROM events "
                       "ORDER BY file").fetchall()
    assert sorted(rows) == [("2000-12-31", "2025-12-31"), ("2026-01-03", "2026-01-03")]
