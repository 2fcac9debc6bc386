"""Which lines the report picks per lane and per kind (report/data.py): the
last line that says something, the first of each kind and the last progress,
the first and last marks of each kind plus every cause. They are picked by
aggregates as the scan goes, not by windows over every line (which held a
512 MB corpus's lines in memory: 2.2 GB); these are the rules they keep."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "correlate"))

from fixtures import ev, store  # noqa: E402

from ranktrace.report import data as D  # noqa: E402


def _con():
    return store([
        ev(1, "step 10 loss 2.0", kind="progress", host="n1", rank=0, line=1),
        ev(2, "NCCL watchdog timeout", kind="watchdog_abort", host="n1", rank=0, line=2),
        ev(3, "step 20 loss 1.9", kind="progress", host="n1", rank=0, line=3),
        ev(4, "NCCL watchdog timeout again", kind="watchdog_abort", host="n1", rank=0, line=4),
        ev(5, "ECC error", kind="xid", host="n1", rank=0, line=5, role="cause"),
        ev(6, "ECC error later", kind="xid", host="n1", rank=0, line=6, role="cause"),
        ev(7, "last words of rank 0", host="n1", rank=0, line=7),
        ev(8, "=====", host="n1", rank=0, line=8),               # a separator is no last word
        ev(None, "untimed", host="n1", rank=0, line=9),
        ev(2, "only watchdog of rank 1", kind="watchdog_abort", host="n2", rank=1, line=1),
    ])


def test_status_takes_the_last_line_that_says_something():
    con = _con()
    rows = {(r["host"], r["rank"]): r for r in D.status(con, {})}
    r0 = rows[("n1", 0)]
    assert (r0["last_line"], r0["last_line_no"]) == ("last words of rank 0", 7)
    assert r0["events"] == 9 and r0["causes"] == 2
    assert rows[("n2", 1)]["last_line"] == "only watchdog of rank 1"


def test_first_events_are_the_first_of_each_kind_and_the_last_progress():
    con = _con()
    got = [(e["host"], e["kind"], e["line"]) for e in D.first_events(con, {})]
    assert got == [("n1", "watchdog_abort", 2), ("n2", "watchdog_abort", 1), ("n1", "progress", 3),
                   ("n1", "xid", 5)]


def test_lane_marks_are_first_and_last_of_each_kind_and_every_cause_once():
    con = _con()
    _, marks = D.lanes(con, {})
    got = [(m["host"], m["kind"], m["line"]) for m in marks]
    assert got == [("n1", "watchdog_abort", 2), ("n2", "watchdog_abort", 1), ("n1", "watchdog_abort", 4),
                   ("n1", "xid", 5), ("n1", "xid", 6)]
    # over the cap, causes go first
    _, capped = D.lanes(con, {}, max_marks=2)
    assert [(m["kind"], m["line"]) for m in capped] == [("xid", 5), ("xid", 6)]
