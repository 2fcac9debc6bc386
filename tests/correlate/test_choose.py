"""The one score that chooses a culprit (ranktrace.correlate.choose): its features, its ranking,
the weights file, and that the verdict never prefers a candidate with a lower score."""

from __future__ import annotations

import datetime as dt

import pytest

from ranktrace.correlate.choose import FEATURES, features, load_weights, rank
from ranktrace.correlate.detectors.base import Finding
from ranktrace.correlate.verdict import Candidate

T0 = dt.datetime(2026, 3, 2, 1, 0, 0)


def cand(key, *findings):
    c = Candidate(key)
    c.findings.extend(findings)
    return c


def f(detector, kind, score, *, rank=None, host=None, t=0.0, direct=True, **extra):
    return Finding(detector=detector, kind=kind, score=score, why=detector, rank=rank, host=host,
                   time=T0 + dt.timedelta(seconds=t), direct=direct, extra=dict(extra))


def test_first_is_within_the_clock_uncertainty_only():
    a = cand(("rank", 1), f("first_cause", "exception", 0.9, rank=1, host="n1", t=0.0))
    b = cand(("rank", 2), f("first_cause", "exception", 0.9, rank=2, host="n2", t=3.0))
    c = cand(("rank", 3), f("first_cause", "exception", 0.9, rank=3, host="n3", t=30.0))
    fa, fb, fc = features([a, b, c], set(), {"n1": 0.0, "n2": 5.0, "n3": 0.0}, [])
    assert fa["first"] == 1.0
    assert fb["first"] == 1.0    # 3 s later, but n2's clock is known to +-5 s only
    assert fc["first"] == 0.0
    assert fa["lag"] == 0.0 < fb["lag"] < fc["lag"] < 1.0


def test_victim_complained_before_it_died():
    waited = cand(("rank", 4), f("worker_exits", "crash", 0.6, rank=4, host="n2", t=60.0))
    culprit = cand(("rank", 7), f("first_cause", "exception", 0.6, rank=7, host="n3", t=50.0))
    lanes = [(("n2", 4), T0 + dt.timedelta(seconds=55)), (("n1", 0), T0 + dt.timedelta(seconds=56))]
    fw, fc = features([waited, culprit], set(), {}, lanes)
    assert fw["victim"] == 1.0 and fc["victim"] == 0.0
    assert fc["explains"] == 1.0    # both complaining lanes complained after rank 7 failed
    assert fw["explains"] == 0.0


def test_a_process_dead_of_its_own_memory_fault_is_no_victim_of_what_it_complained_of():
    # each complained (a reset socket) a minute before its launcher reported its death: SIGABRT is how a
    # watchdog brings a waiting rank down, SIGSEGV / srun's "Bus error" no cascade causes
    def victim(**extra):
        c = cand(("rank", 2), f("worker_exits", "crash", 0.6, rank=2, host="n2", t=60.0, **extra))
        return features([c], set(), {}, [(("n2", 2), T0)])[0]["victim"]
    assert victim(signal=6) == 1.0
    assert victim(signal=11) == 0.0 and victim(signal=7) == 0.0
    assert victim(state="Bus error") == 0.0 and victim(state="Terminated") == 1.0


def test_a_process_dead_of_its_own_exception_is_no_victim_of_what_it_complained_of():
    # it complained of a reset socket minutes before its traceback (a ValueError of its own)
    def victim(*findings):
        return features([cand(("rank", 2), *findings)], set(), {}, [(("n2", 2), T0)])[0]["victim"]
    own = f("first_cause", "exception", 0.6, rank=2, host="n2", t=240.0)
    assert victim(own) == 0.0
    # a traceback first_cause calls weak (its text is about the lost peer) is the cascade's
    assert victim(f("first_cause", "exception", 0.2, rank=2, host="n2", t=240.0, direct=False)) == 1.0
    assert victim(f("worker_exits", "exception", 0.6, rank=2, host="n2", t=240.0)) == 1.0


def test_the_one_rank_missing_from_a_timed_out_collective_is_no_victim_of_its_earlier_complaint():
    # every other rank reported collective 1456 timing out; rank 4 did not (it never reached it): a reset
    # socket it logged before says nothing of whom it waited on. Two missing ranks may wait on each other
    def victim(sole):
        c = cand(("rank", 4), f("watchdog", "unknown", 0.35, rank=4, host="n2", t=60.0, direct=False,
                                absent=True, sole=sole))
        return features([c], set(), {}, [(("n2", 4), T0)])[0]["victim"]
    assert victim(sole=True) == 0.0 and victim(sole=False) == 1.0


def test_a_host_gone_quiet_without_teardown_is_no_victim_of_its_last_complaint():
    # n2 logged a reset connection 28 s before every line of it stopped, its launcher's too: a victim
    # of n1 would have timed out and been torn down; the same complaint before a rank's silence stays one,
    # and so does a quiet host whose task srun saw exit (it did not freeze: its lines are elsewhere)
    def victim(detector, kind, *more):
        c = cand(("host", "n2"), f(detector, kind, 0.55, host="n2", t=28.0, direct=False), *more)
        return features([c], set(), {}, [(("n2", 6), T0)])[0]["victim"]
    assert victim("half_dead_nodes", "node_failure") == 0.0
    assert victim("silent_ranks", "hang") == 1.0
    exited = f("task_exits", "exception", 0.3, host="n2", t=30.0, direct=False)
    assert victim("half_dead_nodes", "node_failure", exited) == 1.0
    killed = f("first_cause", "crash", 0.8, host="n2", t=30.0, reported=True)   # slurmd: "task 0 ... Killed by signal 6"
    assert victim("half_dead_nodes", "node_failure", killed) == 1.0


def test_a_silent_rank_on_a_host_that_lost_its_ib_peer_waited_on_that_link():
    # host n2's ranks name n1's address in IB completion errors (ib_peers accuses n1); n2's rank 3,
    # which complained and then fell silent in the collective, is no hang of its own; n3's silent
    # rank 5, whose host reported no lost peer, stays a hang candidate
    lost = cand(("host", "n1"), f("ib_peers", "network_error", 0.7, host="n1", t=5.0, reporters=["n2"]))
    stuck = cand(("rank", 3), f("silent_ranks", "hang", 0.5, rank=3, host="n2", t=0.0, direct=False))
    quiet = cand(("rank", 5), f("silent_ranks", "hang", 0.5, rank=5, host="n3", t=0.0, direct=False))
    lanes = [(("n2", 3), T0 + dt.timedelta(seconds=40)), (("n3", 5), T0 + dt.timedelta(seconds=40))]
    fl, fs, fq = features([lost, stuck, quiet], set(), {}, lanes)
    assert fl["accused"] == 1.0
    assert fs["absent"] == 1.0 and fs["victim"] == 1.0
    assert fq["absent"] == 1.0 and fq["victim"] == 0.0


def test_victim_slack_is_for_deaths_known_from_someone_elses_report():
    # each complained 5 s after the time of the finding that orders it
    own = cand(("rank", 1), f("first_cause", "network_error", 0.8, rank=1, host="n1", t=10.0))
    told = cand(("rank", 2), f("worker_exits", "crash", 0.6, rank=2, host="n1", t=10.0))
    srun = cand(("rank", 3), f("first_cause", "crash", 0.6, rank=3, host="n2", t=10.0, reported=True))
    same = cand(("rank", 4), f("first_cause", "network_error", 0.8, rank=4, host="n2", t=10.0))
    lanes = [(("n1", 1), T0 + dt.timedelta(seconds=15)), (("n1", 2), T0 + dt.timedelta(seconds=15)),
             (("n2", 3), T0 + dt.timedelta(seconds=15)), (("n2", 4), T0 + dt.timedelta(seconds=10))]
    fo, ft, fs, fm = features([own, told, srun, same], set(), {}, lanes)
    assert fo["victim"] == 0.0     # its own line: the complaint came after it failed
    assert ft["victim"] == 1.0     # a launcher's report of its death, seconds late on another clock
    assert fs["victim"] == 1.0     # srun's report of its task's death
    assert fm["victim"] == 0.0     # a complaint at its own failure's time: order unknown


def test_a_failure_line_without_its_own_time_is_judged_by_that_line_not_by_the_launchers_report():
    # rank 5's port error shows the time of the line before it (10 s): it was written then or later;
    # its launcher reported the death at 40 s. Its own completion error at 10 s: order unknown; a
    # complaint at 5 s came before it
    def rank5(t_complaint):
        c = cand(("rank", 5), f("first_cause", "network_error", 0.8, rank=5, host="n2", t=10.0, ts_ok=False),
                 f("worker_exits", "crash", 0.6, rank=5, host="n2", t=40.0, source="agent"))
        return features([c], set(), {}, [(("n2", 5), T0 + dt.timedelta(seconds=t_complaint))])[0]["victim"]
    assert rank5(10.0) == 0.0
    assert rank5(5.0) == 1.0


def test_support_absent_survived_nobody():
    summary = cand(("rank", 2), f("worker_exits", "crash", 0.3, rank=2, direct=False))
    silent = cand(("rank", 5), f("silent_ranks", "unknown", 0.4, rank=5, direct=False))
    job = cand(("job", None), f("first_cause", "network_error", 0.5, survived=True))
    fs, fz, fj = features([summary, silent, job], set(), {}, [])
    assert fs["support"] == 1.0 and fz["support"] == 0.0
    assert fz["absent"] == 1.0 and fs["absent"] == 0.0
    assert fj["survived"] == 1.0 and fj["nobody"] == 1.0 and fs["nobody"] == 0.0
    assert all(set(x) == set(FEATURES) for x in (fs, fz, fj))


def test_rank_orders_by_score_and_keeps_room_for_none_of_them():
    a = cand(("rank", 1), f("first_cause", "exception", 0.9, rank=1, t=0.0))
    b = cand(("rank", 2), f("first_cause", "exception", 0.2, rank=2, t=5.0, direct=False))
    w = {"bias": -1.0, "evidence": 4.0, "direct": 1.0}
    out = rank([b, a], features([b, a], set(), {}, []), w)
    assert [s.candidate for s in out] == [a, b]
    assert out[0].score > out[1].score
    assert out[0].probability > out[1].probability
    assert sum(s.probability for s in out) < 1.0       # "none of them" keeps its share
    lone = rank([b], features([b], set(), {}, []), w)
    assert lone[0].probability < 0.5                     # alone is not certain: weak evidence stays weak


def test_weights_file_loads_and_rejects_unknown_features(tmp_path):
    w = load_weights()
    assert set(w) <= set(FEATURES) | {"bias", "temperature"}
    assert any(w.get(k) for k in FEATURES)
    bad = tmp_path / "w.toml"
    bad.write_text("[weights]\nbias = 0.0\nloudness = 2.0\n")
    with pytest.raises(ValueError, match="loudness"):
        load_weights(str(bad))


def test_calibration_maps_a_probability_to_its_bins_share_right_per_class_of_kind(tmp_path):
    from ranktrace.correlate.choose import calibrated, load_calibration
    w = tmp_path / "w.toml"
    w.write_text("[weights]\nbias = 0.0\n"
                 "[calibration.other]\nedges = [0.0, 0.5, 0.9, 1.0]\nvalues = [0.2, 0.6, 0.75]\n"
                 "[calibration.hard]\nedges = [0.0, 0.5, 1.0]\nvalues = [0.4, 0.95]\n")
    assert calibrated(0.3, "crash", str(w)) == 0.2
    assert calibrated(0.89, "hang", str(w)) == 0.6
    assert calibrated(1.0, "exception", str(w)) == 0.75
    assert calibrated(0.89, "gpu_fault", str(w)) == 0.95     # a hardware record is rarely wrong
    # the shipped file: monotone, within [0, 1], for both classes
    for cls in ("hard", "other"):
        edges, values = load_calibration(None, cls)
        assert list(values) == sorted(values) and all(0.0 <= v <= 1.0 for v in values)
        assert len(edges) == len(values) + 1
