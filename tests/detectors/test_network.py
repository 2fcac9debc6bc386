"""The host a fabric failure points at (detectors/network.py): the peers' IB completion errors name the
lost host's address (NCCL's `NET/IB : Using ...; OOB iface:ip<port>` says whose), its own port event says
so first-hand, and a port error of any other host is context."""

from __future__ import annotations

from ranktrace.correlate.clock import align
from ranktrace.correlate.detectors import first_cause, ib_peers
from ranktrace.correlate.detectors.network import uncorroborated_port_errors

from correlate.fixtures import ev, steps, store

IP = {"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"}


def _bundle(hosts, port_errors, completions, train_until=100, port_active=(), pids=False):
    """Ranks 2h, 2h+1 on each host train to `train_until` s; port_errors and port_active (the port came
    back): (t, host, rank, timed); completions: (t, reporter host, rank, named host); `pids`: NCCL's
    lines name their process (pid 1000 + rank)."""
    nodes = {h: [2 * i, 2 * i + 1] for i, h in enumerate(hosts)}
    evs = steps(nodes, int(train_until), step_time=1.0)
    facts = {"nccl_oob": [], "nccl_ib_completion": [], "nccl_ib_port_event": []}
    for h in hosts:
        e = ev(0.5, f"NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:{IP[h]}<0>", host=h, rank=nodes[h][0])
        evs.append(e)
        facts["nccl_oob"].append({"event_id": e["event_id"], "iface": "ib0", "ip": IP[h]})
    events = sorted([(*p[:4], "port error", 10, *p[4:]) for p in port_errors]
                    + [(*p[:4], "port active", 9, *p[4:]) for p in port_active])
    first_step = {h: min(e["line"] for e in evs if e["file"] == f"{h}.log") for h in hosts}
    for t, h, r, timed, what, code, *before in events:
        # its place in its file: after the steps (the fixture's order), or `before` lines before the first step
        e = ev(t, f"NET/IB : mlx5_0:1 Got non-fatal async event: {what}({code})",
               kind="network_error" if what == "port error" else None, host=h, rank=r,
               ts_kind=None if timed else "inherited", line=first_step[h] - before[0] if before else None,
               pid=1000 + r if pids else None)
        evs.append(e)
        facts["nccl_ib_port_event"].append({"event_id": e["event_id"], "device": "mlx5_0", "port": 1,
                                            "event": what, "code": code})
    for t, h, r, named in completions:
        e = ev(t, f"NET/IB: Got completion from peer {IP[named]}<4000> with status=IBV_WC_RETRY_EXC_ERR(12)",
               kind="peer_closed", host=h, rank=r, pid=1000 + r if pids else None)
        evs.append(e)
        facts["nccl_ib_completion"].append({"event_id": e["event_id"], "peer": IP[named], "port": 4000,
                                            "error": 12})
    con = store(evs, {k: v for k, v in facts.items() if v})
    align(con)
    return con


def test_the_host_other_hosts_lost_with_its_own_port_event_is_the_cause():
    con = _bundle(["n1", "n2", "n3"], [(95, "n2", 2, True)],
                  [(105, "n1", 1, "n2"), (105.2, "n3", 4, "n2"), (105.4, "n2", 2, "n3")])
    got = ib_peers(con)
    assert [(f.host, f.direct) for f in got] == [("n2", True)]
    assert got[0].extra["reporters"] == ["n1", "n3"]


def test_two_hosts_that_lost_each_other_the_later_port_event_is_the_link_that_went_down():
    # n1's port blinked 90 s before the completion errors; n2's went down 10 s before them
    con = _bundle(["n1", "n2"], [(15, "n1", 0, True), (95, "n2", 2, True)],
                  [(105, "n1", 1, "n2"), (105.3, "n2", 2, "n1")])
    got = ib_peers(con)
    assert [(f.host, f.direct) for f in got] == [("n2", True)]
    # with no port event of either, the errors do not point at one link
    con = _bundle(["n1", "n2"], [], [(105, "n1", 1, "n2"), (105.3, "n2", 2, "n1")])
    assert ib_peers(con) == []


def test_a_port_event_with_an_inherited_time_counts_until_its_files_next_timed_line():
    # the port error's line carries no time (it shows the time of the line before it, long ago); the
    # peers name n2: its port event still speaks for it
    con = _bundle(["n1", "n2", "n3"], [(20, "n2", 2, False)],
                  [(105, "n1", 1, "n2"), (105.2, "n3", 4, "n2")])
    got = ib_peers(con)
    assert [(f.host, f.direct) for f in got] == [("n2", True)]
    assert got[0].extra["ts_ok"] is False


def test_a_port_error_of_another_host_is_context_when_the_peers_name_the_lost_one():
    con = _bundle(["n1", "n2", "n3"], [(90, "n1", 0, True), (95, "n2", 2, True)],
                  [(105, "n1", 1, "n2"), (105.2, "n3", 4, "n2"), (105.4, "n2", 2, "n3")])
    findings = first_cause(con) + ib_peers(con)
    ports = {f.host: f for f in findings if f.detector == "first_cause" and f.kind == "network_error"}
    assert ports["n1"].direct and ports["n2"].direct
    assert uncorroborated_port_errors(con, findings) == 1
    assert not ports["n1"].direct and "name n2, not this host" in ports["n1"].why
    assert ports["n2"].direct


def test_two_hosts_that_lost_each_other_the_port_that_stayed_down_over_one_that_came_back():
    # n1's port error is the later one, but its port said 'port active' right after; n2's never came back
    con = _bundle(["n1", "n2"], [(60, "n2", 2, True), (95, "n1", 0, True)],
                  [(105, "n1", 1, "n2"), (105.3, "n2", 2, "n1")], port_active=[(95.5, "n1", 0, True)])
    got = ib_peers(con)
    assert [(f.host, f.direct) for f in got] == [("n2", True)]


def test_a_port_error_that_came_back_and_was_trained_past_is_context():
    # n1's port blinked at 50 s and came back; the job trained on to 100 s (under the survival window,
    # so survival alone keeps it), then IB work requests failed: the flap is not why
    con = _bundle(["n1", "n2"], [(50, "n1", 0, True)], [(105, "n2", 2, "n1")],
                  port_active=[(50.2, "n1", 0, True)])
    findings = first_cause(con)
    port = next(f for f in findings if f.kind == "network_error")
    assert port.direct
    assert uncorroborated_port_errors(con, findings) == 1
    assert not port.direct and "came back" in port.why
    # its 'port active' line carries no time of its own and no timed line of its file bounds it: when the
    # port came back is not known, and IB work requests failed after the port error: it stays the cause
    con = _bundle(["n1", "n2"], [(50, "n1", 0, True)], [(105, "n2", 2, "n1")],
                  port_active=[(50.2, "n1", 0, False)])
    findings = first_cause(con)
    assert uncorroborated_port_errors(con, findings) == 0
    # ... unless its file goes on with the job's steps after it (file order, whatever the times)
    con = _bundle(["n1", "n2"], [(50, "n1", 0, True, 2)], [(105, "n2", 2, "n1")],
                  port_active=[(50.2, "n1", 0, False, 1)])
    findings = first_cause(con)
    assert uncorroborated_port_errors(con, findings) == 1
    # the same port error without its port coming back stays the cause
    con = _bundle(["n1", "n2"], [(50, "n1", 0, True)], [(105, "n2", 2, "n1")])
    findings = first_cause(con)
    assert uncorroborated_port_errors(con, findings) == 0


def test_two_hosts_that_lost_each_other_a_port_error_its_process_trained_past_is_a_flap():
    # neither line carries a time of its own: n1's shows a later one than n2's, but n1's process wrote its
    # steps on after it (its file's order says so); n2's came after its last step: n2's link went down
    con = _bundle(["n1", "n2"], [(95, "n1", 0, False, -60), (60, "n2", 2, False)],
                  [(105, "n1", 1, "n2"), (105.3, "n2", 2, "n1")])
    got = ib_peers(con)
    assert [(f.host, f.direct) for f in got] == [("n2", True)]


def test_two_hosts_that_lost_each_other_the_port_error_its_own_process_failed_on_at_once():
    # neither line carries a time of its own: n1's shows the later one, but its process went on with other
    # work; n2's process wrote its completion error next: n2's port went down, n1's blinked before
    con = _bundle(["n1", "n2"], [(95, "n1", 0, False), (60, "n2", 2, False)],
                  [(105, "n1", 1, "n2"), (105.3, "n2", 2, "n1")], pids=True)
    got = ib_peers(con)
    assert [(f.host, f.direct) for f in got] == [("n2", True)]


def test_of_a_hosts_port_errors_the_last_before_the_errors_is_its_link_going_down():
    # n2 logged two port errors the peers' errors follow, the first without a time of its own; the
    # evidence is the later one, the one its process did not train past
    con = _bundle(["n1", "n2", "n3"], [(20, "n2", 2, False, -60), (95, "n2", 2, True)],
                  [(105, "n1", 1, "n2"), (105.2, "n3", 4, "n2")])
    got = ib_peers(con)
    assert [(f.host, f.extra["ts_ok"]) for f in got] == [("n2", True)]
