from ranktrace.correlate.detectors import named_ranks, silent_ranks, watchdog

from .helpers import ev, run, steps

NODES = {"n1": [0, 1], "n2": [2, 3], "n3": [4, 5]}


def test_monitored_barrier_names_ranks():
    got = run(named_ranks, [ev(30, "Rank 0 ... Ranks 4, 5 failed to pass monitoredBarrier in 20000 ms",
                               host="n1", rank=0)])
    assert sorted(f.rank for f in got) == [4, 5] and all(f.kind == "hang" for f in got)
    one = run(named_ranks, [ev(30, "Ranks 4 failed to pass monitoredBarrier in 20000 ms", host="n1", rank=0)])
    assert one[0].score > got[0].score   # one named rank is stronger than two


def test_check_rank_advice_is_weak():
    got = run(named_ranks, [ev(30, "[rank3]: ... check rank 0 logs for faulty rank.", host="n2", rank=3)])
    assert got[0].rank == 0 and got[0].score < 0.1


def _wd(r, seq, op="ALLREDUCE", last=None):
    tail = f" last enqueued NCCL work: {seq}, last completed NCCL work: {last}." if last is not None else ""
    return (f"[PG 0 Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
            f"Timeout(ms)=600000) ran for 600100 milliseconds before timing out.{tail}")


def test_watchdog_desync_names_the_odd_op():
    evs = [ev(10, _wd(r, 7, "BROADCAST" if r == 2 else "ALLREDUCE"), kind="collective_timeout", host="n1", rank=r)
           for r in range(4)]
    got = [f for f in run(watchdog, evs) if f.kind == "desync"]
    assert [f.rank for f in got] == [2]


def test_watchdog_rank_behind_and_missing():
    evs = steps(NODES, 2) + [ev(10, _wd(r, 52, last=51 if r != 3 else 50), kind="collective_timeout",
                                host="n1", rank=r) for r in range(6) if r != 5]
    got = run(watchdog, evs)
    behind = [f.rank for f in got if f.kind == "hang"]
    missing = [f.rank for f in got if "does not" in f.why]
    assert behind == [3]
    assert missing == [5]


def test_silent_rank_among_complainers():
    evs = steps(NODES, 10) + [ev(20, "Connection closed by peer", kind="peer_closed", host=h, rank=r)
                              for h, rs in NODES.items() for r in rs if r != 4]
    got = run(silent_ranks, evs)
    assert [f.rank for f in got] == [4]
    nobody = run(silent_ranks, steps(NODES, 10))
    assert nobody == []
