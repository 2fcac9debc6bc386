"""The first cause line of an attempt is the first one that stands. first_cause orders the cause lines before
survival is judged: a port error that its rank trained past for a minute (fewer than the survival window's two,
so still 'first' by time) made the segfault a minute later a 'probable consequence' (0.3), and a node that went
quiet with the job's crash won. Once the port error is demoted (its rank wrote dozens of steps after it in the
same file), the lines that stand are scored again as if it had not been there (causes.rescore_after_demotions)."""

from __future__ import annotations

import datetime as dt

from ranktrace.correlate.detectors.base import Finding
from ranktrace.correlate.detectors.causes import DIRECT, rescore_after_demotions

from .fixtures import generated_attempts, who

T0 = dt.datetime(2026, 3, 2, 2, 2, 20)


def _cause(order: int, seconds: float, why: str, **kw) -> Finding:
    extra = {"order": order, "lag_s": seconds, "ts_ok": True, "past": False, "first": order == 0}
    extra.update(kw.pop("extra", {}))
    return Finding(detector="first_cause", kind=kw.pop("kind", "crash"), score=kw.pop("score", DIRECT * 0.35),
                   why=why, time=T0 + dt.timedelta(seconds=seconds), direct=kw.pop("direct", True), extra=extra, **kw)


def test_the_cause_line_after_a_demoted_first_is_the_earliest():
    port = _cause(0, 0, "earliest cause line of rank 0: network_error (port error)", kind="network_error",
                  score=DIRECT, direct=False)            # demoted since: survived
    crash = _cause(1, 62, "a cause line of rank 1: crash_signal (Segmentation fault)")
    echo = _cause(2, 62.5, "a cause line of rank 1: crash_signal (mpirun noticed)")
    late = _cause(3, 70, "a cause line of rank 2: exception", kind="exception")
    assert rescore_after_demotions([port, crash, echo, late]) == 3
    assert (crash.score, crash.extra["first"], crash.extra["lag_s"]) == (DIRECT, True, 0.0)
    assert crash.why.startswith("earliest cause line of rank 1")
    assert echo.score == DIRECT * 0.8 and echo.extra["lag_s"] == 0.5   # within the clock's grain of it
    assert late.score == DIRECT * 0.35 and not late.extra.get("first") is True
    assert port.score == DIRECT and not port.direct                   # the demoted line is left as it was


def test_nothing_is_scored_again_while_the_first_stands():
    first = _cause(0, 0, "earliest cause line of rank 0: crash_signal", score=DIRECT)
    later = _cause(1, 62, "a cause line of rank 1: exception", kind="exception")
    past = _cause(2, -300, "a cause line of rank 2: network_error", extra={"past": True, "first": False},
                  direct=False)
    assert rescore_after_demotions([first, later, past]) == 0
    assert (first.score, later.score) == (DIRECT, DIRECT * 0.35)


def test_a_segfault_after_a_port_error_its_rank_trained_past_is_the_cause(tmp_path, catalog):
    # Open MPI under Slurm (mpirun --timestamp-output), two nodes 35 s apart: rank 0's port error a minute before
    # rank 1's segfault; the other node's last lines come 48 ms before the segfault (mpirun took the job down)
    truth, found = generated_attempts(tmp_path, "segfault", 9, "mpirun_slurm", catalog)
    assert who(truth[2]["verdict"], "kind", "rank", "host") == ("crash", 1, "node19")
    assert who(found[2]["verdict"], "kind", "rank", "host") == ("crash", 1, "node19"), found[2]["verdict"]
