from ranktrace.correlate.detectors import half_dead_nodes, rendezvous, xid

from .helpers import ev, run, steps

NODES = {"n1": [0, 1], "n2": [2, 3], "n3": [4, 5]}


def test_half_dead_node_stops_without_teardown():
    evs = steps(NODES, 20, stop_at={2: 12, 3: 12}) + [
        ev(40, "Watchdog caught collective operation timeout", kind="collective_timeout", host=h, rank=r)
        for h in ("n1", "n3") for r in NODES[h]] + [
        ev(41, "failed (exitcode: 1) local_rank: 0 (pid: 1) of binary: python", kind="worker_failed", host=h)
        for h in ("n1", "n3")]
    got = run(half_dead_nodes, evs)
    assert [f.host for f in got] == ["n2"] and got[0].kind == "node_failure"


def test_every_node_tears_down_no_half_dead():
    evs = steps(NODES, 5) + [ev(20, "Connection closed by peer", kind="peer_closed", host=h, rank=NODES[h][0])
                             for h in NODES]
    assert run(half_dead_nodes, evs) == []


def test_half_dead_node_without_progress_lines_went_on_past_its_complaint():
    # no progress lines: n2 complained early, went on writing, then stopped with no teardown
    evs = [ev(1, "NCCL INFO comm 0x1 rank 0 nranks 6 - Init COMPLETE", host=h) for h in NODES]
    evs += [ev(5, "The client socket has failed to connect to [n1]:29500", kind="store_error", host="n2"),
            ev(20, "NCCL INFO comm 0x2 rank 2 nranks 6 - Init COMPLETE", host="n2")]
    evs += [ev(60, "Watchdog caught collective operation timeout", kind="collective_timeout", host=h, rank=r)
            for h in ("n1", "n3") for r in NODES[h]]
    evs += [ev(61, "failed (exitcode: -6) local_rank: 0 (pid: 1) of binary: python", kind="worker_failed", host=h)
            for h in ("n1", "n3")]
    got = run(half_dead_nodes, evs)
    assert [(f.host, f.kind) for f in got] == [("n2", "node_failure")]
    # its complaint as its last word: not quiet
    evs = [e for e in evs if not (e["host"] == "n2" and e["kind"] is None and e["ts"].second == 20)]
    assert run(half_dead_nodes, evs) == []


def test_a_node_that_froze_as_it_complained_after_the_last_step_is_half_dead():
    # 20 steps of 1 s, then an evaluation (process groups made and destroyed, no step); n2 writes a retried
    # store connection and nothing more; 120 s later the others' watchdogs time out and their launchers
    # tear down
    evs = steps(NODES, 20, step_time=1.0)
    evs += [ev(40, "NCCL INFO ncclCommSplit comm 0x7f3a00040201 rank 1 nranks 3 - Init COMPLETE", host=h,
               rank=NODES[h][0]) for h in NODES]
    evs += [ev(70, "[c10d] The client socket has failed to connect to [n3]:23456 (errno: 111 - Connection refused).",
               kind="store_unreachable", role="cause", severity="warning", host="n2", rank=2)]
    evs += [ev(190, "Watchdog caught collective operation timeout", kind="collective_timeout", host=h, rank=r)
            for h in ("n1", "n3") for r in NODES[h]]
    evs += [ev(191, "failed (exitcode: -6) local_rank: 0 (pid: 1) of binary: python", kind="worker_failed", host=h)
            for h in ("n1", "n3")]
    got = run(half_dead_nodes, evs)
    assert [(f.host, f.kind) for f in got] == [("n2", "node_failure")]
    # the others gave up within seconds of its complaint: it need not have outlived them, no verdict on it
    late = [e for e in evs if e["kind"] not in ("collective_timeout", "worker_failed")]
    late += [ev(75, "Watchdog caught collective operation timeout", kind="collective_timeout", host=h, rank=r)
             for h in ("n1", "n3") for r in NODES[h]]
    assert run(half_dead_nodes, late) == []


def test_rendezvous_errors_before_the_job_assembled_were_retries():
    evs = [ev(1, "SLURM_JOB_NODELIST=n[1-3]", host="n1"),
           ev(2, "The client socket has failed to connect to [n1]:29500 (errno: 111 - Connection refused).",
              kind="rdzv_timeout", host="n3")]
    assert [f.host for f in run(rendezvous, evs)] == ["n1", "n2"]    # nobody trained: they never showed up
    assert run(rendezvous, evs + steps(NODES, 10, start=5.0)) == []   # the job assembled and trained after it


def test_rendezvous_names_missing_node_from_nodelist():
    evs = [ev(1, "SLURM_JOB_NODELIST=n[1-4]", host="n1"),
           ev(2, "Rendezvous'ing worker group", kind="rdzv_join", host="n1"),
           ev(2, "Rendezvous'ing worker group", kind="rdzv_join", host="n2"),
           ev(2, "Rendezvous'ing worker group", kind="rdzv_join", host="n4"),
           ev(30, "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError", kind="rdzv_timeout", host="n1")]
    got = run(rendezvous, evs)
    assert [f.host for f in got] == ["n3"] and got[0].kind == "rendezvous_timeout"


def test_rendezvous_without_node_set_counts_only():
    evs = [ev(1, "  min_nodes                : 4", host="n1"),
           ev(2, "Rendezvous'ing worker group", kind="rdzv_join", host="n1"),
           ev(30, "RendezvousTimeoutError", kind="rdzv_timeout", host="n1")]
    got = run(rendezvous, evs)
    assert len(got) == 1 and got[0].host is None and got[0].extra["missing_count"] == 3


def test_xid_first_of_cascade():
    evs = [ev(1, "NVRM: Xid (PCI:0000:04:00): 31, pid=32755, name=python, MMU Fault", kind="gpu_xid", host="g1"),
           ev(40, "NVRM: Xid (PCI:0000:04:00): 62, pid='<unknown>'", kind="gpu_xid", host="g1"),
           ev(41, "NVRM: Xid (PCI:0000:04:00): 45, pid='<unknown>'", kind="gpu_xid", host="g1")]
    got = run(xid, evs)
    assert len(got) == 1 and got[0].extra["xid"] == 31 and got[0].pid == 32755 and "62" in got[0].why


def test_xid_one_finding_per_gpu_in_the_order_of_their_first_report():
    """Interleaved reports of three GPUs: one finding each, ordered by its first report, with
    that report's code and the GPU's other codes; the bundle's first Xid scores highest."""
    line = "NVRM: Xid (PCI:0000:{bus}:00): {code}, pid=4{bus}, name=python"
    reports = [(1, "g2", "48", 79), (2, "g1", "04", 31), (3, "g2", "48", 45), (4, "g1", "04", 62),
               (5, "g1", "07", 13), (6, "g2", "48", 79), (7, "g1", "04", 45)]
    got = run(xid, [ev(t, line.format(bus=bus, code=code), kind="gpu_xid", host=h) for t, h, bus, code in reports])
    assert [(f.host, f.gpu, f.extra["xid"]) for f in got] == [("g2", "0000:48:00", 79), ("g1", "0000:04:00", 31),
                                                              ("g1", "0000:07:00", 13)]
    assert "followed by Xid 45" in got[0].why and "followed by Xid 45, 62" in got[1].why
    assert "followed" not in got[2].why
    assert got[0].score == 0.85 and got[1].score == got[2].score == 0.6 * 0.7   # (31 and 13: application Xids)
    assert [f.pid for f in got] == [448, 404, 407]


def test_scheduler_names_failed_node_not_the_reporter():
    from ranktrace.correlate.detectors import node_events
    evs = [ev(5, "Node failure on n2", kind="node_failure", host="ctl"),
           ev(40, "Killing JobId=7 on failed node n2", kind="node_failure", host="ctl")]
    got = run(node_events, evs)
    assert [f.host for f in got] == ["n2"] and got[0].direct


def test_rendezvous_guess_from_name_sequence():
    from ranktrace.correlate.detectors.rendezvous import guess_missing
    assert guess_missing(["ml-e01", "ml-e02", "ml-e03"], 4) == "ml-e04"
    assert guess_missing(["ml-g02", "ml-g03", "ml-g04"], 4) == "ml-g01"
    assert guess_missing(["n1", "n2", "n4"], 4) == "n3"
    assert guess_missing(["a1", "b2", "c3"], 4) is None      # not one sequence
    assert guess_missing(["n1", "n2"], 4) is None             # two missing: no guess


def test_step_cancel_without_reason_is_weak_cancelled():
    from ranktrace.correlate.detectors import step_cancels
    got = run(step_cancels, [ev(5, "error: *** STEP 42929.0 ON cn109 CANCELLED AT 2020-02-19T02:32:29 ***",
                                kind="step_cancelled", host="cn109")])
    assert [(f.kind, f.host) for f in got] == [("cancelled", "cn109")] and got[0].score < 0.5
    with_reason = run(step_cancels, [ev(5, "*** JOB 7 ON n1 CANCELLED AT 2026-11-29T16:48:23 DUE TO TIME LIMIT ***",
                                        kind="step_cancelled", host="n1")])
    assert with_reason == []


def test_xid_pci_maps_to_the_rank_nccl_ran_on_that_bus():
    from ranktrace.correlate.detectors.gpu import bus_key, xid
    assert bus_key("0000:48:00") == "48000" == bus_key("0000:48:00.0") == bus_key("PCI:0000:48:00")
    assert bus_key("0000:04:00") == "4000" != bus_key("0000:40:00")
    evs = [ev(1.0, "NCCL INFO comm 0x1 rank 35 nranks 64 cudaDev 3 busId 48000 - Init COMPLETE", kind="comm_init",
              host="node05", pid=40403),
           ev(1.0, "NCCL INFO comm 0x2 rank 36 nranks 64 cudaDev 4 busId 4000 - Init COMPLETE", kind="comm_init",
              host="node05", pid=40404),
           ev(9.0, "NVRM: Xid (PCI:0000:48:00): 79, pid=40403, name=python, GPU has fallen off the bus.",
              kind="gpu_xid", host="node05")]
    facts = {"nccl_comm": [{"event_id": evs[0]["event_id"], "rank": 35, "bus_id": "48000", "cuda_dev": 3},
                           {"event_id": evs[1]["event_id"], "rank": 36, "bus_id": "4000", "cuda_dev": 4}]}
    fs = run(xid, evs, facts)
    assert len(fs) == 1 and fs[0].gpu and fs[0].rank == 35 and fs[0].host == "node05"
