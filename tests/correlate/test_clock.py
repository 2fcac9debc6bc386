import pytest

from ranktrace.correlate.clock import align, estimate_offsets
from ranktrace.correlate.identity import build_identity

from .fixtures import ev, steps, store

NODES = {"a1": [0, 1], "a2": [2, 3], "a3": [4, 5]}


@pytest.mark.parametrize("skew", [37.0, -23.0, 0.8])
def test_offset_from_progress_steps_within_uncertainty(skew):
    con = store(steps(NODES, 20, skew={"a2": skew}))
    build_identity(con)
    clock = {c["host"]: c for c in estimate_offsets(con)}
    ref = [h for h, c in clock.items() if c["basis"] == "reference host"]
    assert len(ref) == 1
    true = {"a1": 0.0, "a2": skew, "a3": 0.0}
    for h, c in clock.items():
        want = true[h] - true[ref[0]]
        assert c["uncertainty_s"] is not None
        assert abs(c["offset_s"] - want) <= c["uncertainty_s"] + 1e-9, (h, c)
    assert clock["a2"]["uncertainty_s"] < 0.5


def test_pinned_offset_wins_and_aligns_events():
    evs = steps(NODES, 5) + [ev(100.0, "boom", kind="python_exception", host="a3", rank=4)]
    con = store(evs)
    clock = align(con, {"a3": 10.0})
    c = {x["host"]: x for x in clock}
    assert c["a3"]["offset_s"] == 10.0 and "pinned" in c["a3"]["basis"]
    ats, ts = con.execute("SELECT epoch(ats), epoch(ts) FROM aligned_events WHERE message = 'boom'").fetchone()
    assert ts - ats == pytest.approx(10.0)


def test_no_anchor_means_unknown_uncertainty_not_a_guess():
    con = store([ev(1, "hello", host="x1"), ev(2, "hello", host="x2"), ev(3, "bye", host="x1")])
    clock = {c["host"]: c for c in align(con)}
    assert clock["x1"]["basis"] == "reference host"       # most events
    assert clock["x2"]["uncertainty_s"] is None and clock["x2"]["offset_s"] == 0.0


def test_reference_is_deterministic_on_ties():
    con = store([ev(1, "a", host="zz"), ev(1, "a", host="aa")])
    clock = align(con)
    assert [c["host"] for c in clock if c["basis"] == "reference host"] == ["aa"]


def test_collective_start_anchors_when_no_progress():
    # watchdog lines: same SeqNum started together; host b logs 5 s ahead
    msg = "[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=52, OpType=ALLREDUCE, " \
          "Timeout(ms)=600000) ran for {ran} milliseconds before timing out."
    con = store([ev(600.0, msg.format(r=0, ran=600000), kind="collective_timeout", host="a", rank=0),
                 ev(605.5, msg.format(r=1, ran=600500), kind="collective_timeout", host="b", rank=1)])
    clock = {c["host"]: c for c in align(con)}
    assert clock["b"]["offset_s"] == pytest.approx(5.0, abs=0.01)
    assert clock["b"]["uncertainty_s"] >= 0.5


def _pair_by_definition(a, b, unc0):
    """clock._pair as its docstring defines it: every window [d0, d0 + tol] of the sorted differences,
    its keys counted and its median taken anew (quadratic; the reference for the sliding window)."""
    import statistics
    from ranktrace.correlate.clock import TOL_S
    keys = sorted(set(a) & set(b))
    if not keys:
        return None
    cands = sorted((ta - tb, k) for k in keys for ta in a[k] for tb in b[k])
    tol = max(TOL_S, 2 * unc0)
    best = None
    for i, (d0, _) in enumerate(cands):
        win = [c for c in cands[i:] if c[0] <= d0 + tol]
        support = len({k for _, k in win})
        centre = statistics.median(d for d, _ in win)
        if best is None or (support, -abs(centre)) > (best[0], -abs(best[1])):
            best = (support, centre, win)
    support, centre, win = best
    per_key = {}
    for d, k in win:
        if k not in per_key or abs(d - centre) < abs(per_key[k] - centre):
            per_key[k] = d
    d = sorted(per_key.values())
    off = statistics.median(d)
    dev = sorted(abs(x - off) for x in d)
    return off, unc0 + 2 * dev[min(len(dev) - 1, int(0.9 * len(dev)))], len(d)


@pytest.mark.parametrize("seed", range(40))
def test_pair_sliding_window_is_the_definition(seed):
    """The sliding window of clock._pair gives exactly what every window taken anew gives: keys written
    in several attempts (several times a key), ties, odd and even windows, shifts larger than tol."""
    import random
    from ranktrace.correlate.clock import _pair
    rnd = random.Random(seed)
    skew = rnd.choice([0.0, 0.5, 3.0, -40.0])
    a, b = {}, {}
    for n in range(rnd.randint(1, 60)):
        k = f"step:{n}"
        t = n * rnd.choice([0.2, 1.0, 5.0])
        if rnd.random() < 0.9:
            a[k] = [t + skew + rnd.gauss(0, 0.3) for _ in range(rnd.choice([1, 1, 2]))]
        if rnd.random() < 0.9:
            b[k] = [t + rnd.choice([0.0, 0.0, 600.0]) + round(rnd.gauss(0, 0.3), 1)
                    for _ in range(rnd.choice([1, 1, 3]))]
    unc0 = rnd.choice([0.05, 1.0, 2.0])
    assert _pair(a, b, unc0) == _pair_by_definition(a, b, unc0)


def _console(skew: float, order, late: int = 0) -> list[dict]:
    """One console two nodes write to (pdsh, srun): w0 logs every 2 s, w1 (its clock `skew` s ahead) 1 s
    after each; the lines in the order `order` gives the (arrival, logged, host) triples; `late`: that
    many of w1's lines held in a buffer and delivered 25 s later."""
    lines = []
    for i in range(60):
        t = 2.0 * i
        lines.append((t, t, "w0"))
        lines.append((t + 1 + (25 if i < late else 0), t + 1 + skew, "w1"))
    return [ev(logged, "tick", host=h, file="console.log", line=n + 1)
            for n, (_, logged, h) in enumerate(order(lines))]


@pytest.mark.parametrize("skew, late", [(90.0, 0), (-140.0, 0), (90.0, 2), (0.4, 0)])
def test_the_order_of_a_shared_console_is_a_clock(skew, late):
    # no step, no collective, no rendezvous: only the order in which the lines reached the console
    con = store(_console(skew, lambda ls: sorted(ls), late))
    build_identity(con)
    c = {x["host"]: x for x in estimate_offsets(con)}
    rel = c["w1"]["offset_s"] - c["w0"]["offset_s"]
    assert c["w1"]["uncertainty_s"] is not None and c["w0"]["uncertainty_s"] is not None
    assert abs(rel - skew) <= max(c["w1"]["uncertainty_s"], c["w0"]["uncertainty_s"]) + 1e-9, c
    # bounded by the time between two lines of the console (2 s) and the delivery time (1 s)
    assert max(c["w1"]["uncertainty_s"], c["w0"]["uncertainty_s"]) <= 2.0 + 1e-9


def test_a_console_whose_order_says_nothing_gives_no_offset():
    # lines written per node and concatenated afterwards (w0's file, then w1's): no order between them
    con = store(_console(90.0, lambda ls: sorted(ls, key=lambda x: (x[2], x[0]))))
    build_identity(con)
    c = {x["host"]: x for x in estimate_offsets(con)}
    assert any(x["uncertainty_s"] is None for x in c.values()), c


def result(t, host, port):
    """torchrun's rendezvous result block (elastic/agent/server/api.py), one event."""
    raw = ("[default] Rendezvous complete for workers. Result:\n  restart_count=0\n"
           f"  master_addr=a\n  master_port={port}\n  group_rank=0")
    return ev(t, "[default] Rendezvous complete for workers. Result:", kind="rdzv_complete", host=host,
              pid=100, raw=raw)


def test_each_rendezvous_round_is_its_own_anchor_by_the_masters_port():
    # an elastic job restarted three times, host b's clock 208 s behind a's: more than the time between
    # rounds. torchrun's result block names each round's master port (all agents read the same one, a
    # new one each round); one key for every round would pair a's round with b's next one
    rounds = [(60.0, 40001), (420.0, 40002), (700.0, 40003)]
    con = store([result(t, "a", p) for t, p in rounds] + [result(t - 208.0 + 0.3, "b", p) for t, p in rounds])
    clock = {c["host"]: c for c in align(con)}
    assert clock["b"]["offset_s"] == pytest.approx(-207.7, abs=0.5), clock["b"]
    assert clock["b"]["basis"].startswith("3 shared rendezvous anchors")


def test_hosts_whose_logs_read_apart_are_aligned_when_they_joined_one_rendezvous_round():
    # b's clock 300 s behind: as written, b's 60 s of training ends before a's begins (a host of another
    # attempt reads like that too: its steps would pair with the wrong ones). One round's master port,
    # written once by each, says it is the same attempt; its steps then give the offset
    evs = steps({"a": [0, 1], "b": [2, 3]}, 30, step_time=2.0, start=20, skew={"b": -300.0})
    same = store(evs + [result(10.0, "a", 40001), result(10.0 - 300.0, "b", 40001)])
    clock = {c["host"]: c for c in align(same)}
    assert clock["b"]["offset_s"] == pytest.approx(-300.0, abs=0.1) and "progress" in clock["b"]["basis"]
    other = store(evs + [result(10.0, "a", 40001), result(10.0 - 300.0, "b", 40002)])
    assert {c["host"]: c for c in align(other)}["b"]["uncertainty_s"] is None


def test_a_line_that_took_its_time_from_another_hosts_line_is_aligned_on_that_hosts_clock():
    """In srun's console rank 0's untimed line follows rank 2's timed one: the engine gave it rank 2's
    time, read off n2's clock (60 s ahead). Aligned, it is that line's moment, not 60 s later; its
    group is placed there too."""
    import datetime as dt

    from ranktrace.correlate import diagnose
    from .fixtures import T0
    out = "slurm-7.out"
    evs = (steps({"n1": [0, 1], "n2": [2, 3]}, 20, step_time=5.0, skew={"n2": 60.0})
           + [ev(160, "[rank2] NCCL INFO comm 0x1 rank 2 nranks 4 - Init COMPLETE", host="n2", rank=2, file=out,
                 line=900_000),
              ev(160, "{'loss': 3.25, 'grad_norm': 1.1, 'epoch': 0.02}", host="n1", rank=0, file=out,
                 line=900_001, ts_kind="interpolated")])
    con = store(evs)
    diagnose(con)
    ats = con.execute(f"SELECT ats FROM aligned_events WHERE file = '{out}' ORDER BY line").fetchall()
    want = T0 + dt.timedelta(seconds=100)
    assert [abs((a - want).total_seconds()) <= 2.0 for (a,) in ats] == [True, True]
    g = con.execute(f"SELECT first_ats FROM aligned_groups_all WHERE file = '{out}' AND host = 'n1'").fetchall()
    assert g and all(abs((a - want).total_seconds()) <= 2.0 for (a,) in g)


def test_a_line_of_no_host_in_a_console_of_two_clocks_is_read_on_the_clock_that_fits_the_files_order():
    """srun without --label: both nodes write into one console, n2's clock 60 s ahead of n1's. A line that
    names no host (DeepSpeed's launcher, the training loop's logger) is read on the file's clock, one host's
    at best: n2's lines a minute off. The file's order places each between its neighbours; a line of one
    clock stays where it is."""
    from ranktrace.correlate import diagnose
    out = "slurm-7.out"
    evs = steps({"n1": [0, 1], "n2": [2, 3]}, 20, step_time=5.0, skew={"n2": 60.0})
    console = [("n1", 150.0, "n1:101:102 [0] NCCL INFO comm 0x1 rank 0 nranks 4 - Init COMPLETE"),
               (None, 150.5, "[INFO] [launch.py:335:sigkill_handler] Killing subprocess 101"),
               ("n2", 211.0, "n2:201:202 [0] NCCL INFO comm 0x2 rank 2 nranks 4 - Init COMPLETE"),
               (None, 211.5, "[ERROR] [launch.py:341:sigkill_handler] exits with return code = 1"),
               ("n1", 152.0, "n1:101:102 [1] NCCL INFO comm 0x3 rank 1 nranks 4 - Init COMPLETE"),
               (None, 152.5, "[INFO] [launch.py:344:sigkill_handler] Main process received SIGTERM, exiting"),
               ("n2", 213.0, "n2:201:202 [1] NCCL INFO comm 0x4 rank 3 nranks 4 - Init COMPLETE")]
    con = store(evs + [ev(t, m, host=h, file=out, line=900_000 + i) for i, (h, t, m) in enumerate(console)])
    diagnose(con)
    ats = [a for (a,) in con.execute(f"SELECT epoch(ats) FROM aligned_events WHERE file = '{out}' ORDER BY line").fetchall()]
    assert all(abs(b - a - 0.5) <= 0.6 for a, b in zip(ats, ats[1:])), ats   # 0.5 s a line, in the file's order
    moved = con.execute("SELECT count(*) FROM hostless_clocks").fetchone()[0]
    assert moved == 1   # the n1 lines of no host are on the file's clock already (n1's, the reference)
    # their group too: its last line is the last of them, not n2's line read a minute late
    (last,) = con.execute(f"SELECT epoch(last_ats) FROM aligned_groups_all WHERE file = '{out}' AND host IS NULL "
                          "AND kind IS NULL").fetchone()
    assert abs(last - ats[-2]) <= 0.6, (last, ats)


@pytest.mark.parametrize("requeued", [False, True])
def test_a_slurm_steps_launch_and_cancel_on_each_node_are_one_moment(requeued):
    """A node that wrote no step and no collective shares only its daemons' lines with the others:
    slurmd's launch of the step and slurmstepd's cancel of it, which srun's fan-out delivers to every
    node at once. A requeued job launches the same step id again minutes later: each launch meets its own."""
    skew = -8.6
    evs = steps({"a1": [0, 1], "a2": [2, 3]}, 20, step_time=5.0, start=10)
    for at in ((0.0, 400.0) if requeued else (0.0,)):
        for h, d in (("a1", 0.0), ("a2", 0.3), ("a3", skew + 0.2)):
            evs.append(ev(at + 1 + d, "launch task StepId=7.0 request from UID:1000 GID:1000 HOST:10.0.0.1",
                          kind="step_start", host=h, file=f"slurmd-{h}.log"))
            evs.append(ev(at + 111 + d, f"*** STEP 7.0 ON {h} CANCELLED AT 2026-03-02T01:27:53 ***",
                          kind="step_cancelled", host=h, file="slurm-7.out"))
    con = store(evs + [ev(50.0 + skew, "hello", host="a3", file="slurm-7.out")])
    clock = {c["host"]: c for c in align(con)}
    assert "slurm_step" in clock["a3"]["basis"]
    assert abs(clock["a3"]["offset_s"] - skew) <= clock["a3"]["uncertainty_s"] <= 2.0


def test_a_step_relaunched_on_other_nodes_after_a_requeue_is_no_anchor_between_them():
    """Job 7 ran on a1-a2, froze a1 and was requeued on a2-a3: step 7.0 launched again 660 s later. a1 and
    a3 never shared an allocation, so their launches are not one moment (a3 is 4 s ahead, not 664)."""
    alloc = [ev(t0, f"sched: Allocate JobId=7 NodeList={nl} #CPUs=4 Partition=gpu", kind="job_state",
                file="slurmctld.log", job_id="7") for t0, nl in ((0.0, "a[1-2]"), (660.0, "a[2-3]"))]
    evs = list(alloc)
    for at, hosts in ((0.0, (("a1", 0.0), ("a2", 0.1))), (660.0, (("a2", 0.1), ("a3", 4.0)))):
        for h, d in hosts:
            evs.append(ev(at + 1 + d, "launch task StepId=7.0 request from UID:1000 GID:1000 HOST:10.0.0.1",
                          kind="step_start", host=h, file=f"slurmd-{h}.log"))
    evs += [ev(t, "hello", host=h, file=f"slurmd-{h}.log") for h, t in (("a1", 30.0), ("a1", 900.0), ("a2", 50.0))]
    facts = {"slurm_alloc": [{"event_id": e["event_id"], "job_id": "7", "nodelist": nl, "cpus": 4,
                              "partition": "gpu", "bf_job_id": None, "bf_partition": None, "bf_nodelist": None}
                             for e, nl in zip(alloc, ("a[1-2]", "a[2-3]"))]}
    clock = {c["host"]: c for c in align(store(evs, facts))}
    assert clock["a1"]["basis"] == "reference host"
    assert "chained via a2" in clock["a3"]["basis"]
    assert abs(clock["a3"]["offset_s"] - 3.9) <= clock["a3"]["uncertainty_s"] <= 3.0
