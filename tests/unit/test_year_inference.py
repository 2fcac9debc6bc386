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
