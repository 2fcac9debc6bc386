from ranktrace.correlate.detectors import first_cause

from .helpers import ev, run, steps

NODES = {"n1": [0, 1], "n2": [2, 3]}


def test_earliest_cause_wins_not_the_loudest_symptom():
    evs = steps(NODES, 5) + [
        ev(10.0, "Watchdog caught collective operation timeout", kind="collective_timeout", host="n1", rank=0),
        ev(11.0, "RuntimeError: bad batch", kind="python_exception", host="n2", rank=3),
        ev(14.0, "RuntimeError: other", kind="python_exception", host="n1", rank=1),
    ]
    got = run(first_cause, evs)
    assert [f.rank for f in got] == [3, 1]
    assert got[0].kind == "exception" and got[0].score > got[1].score


def test_order_is_on_the_aligned_clock():
    # n2's clock runs 30 s ahead: its exception at logged 35 s is really at 5 s, before n1's at 8 s
    evs = steps(NODES, 10, skew={"n2": 30.0}) + [
        ev(8.0, "RuntimeError: n1", kind="python_exception", host="n1", rank=0),
        ev(35.0, "RuntimeError: n2", kind="python_exception", host="n2", rank=2),
    ]
    got = run(first_cause, evs)
    assert got[0].rank == 2
    unaligned = run(first_cause, evs, offsets={"n2": 0.0})
    assert unaligned[0].rank == 0


def test_no_causes_no_findings():
    assert run(first_cause, steps(NODES, 3)) == []


def test_exception_about_a_lost_peer_is_weak_even_if_classified_cause():
    evs = steps(NODES, 3) + [
        ev(5.0, "RuntimeError: Connection closed by peer [127.0.0.1]:5044", kind="python_exception", host="n1", rank=0),
        ev(6.0, "RuntimeError: corrupted batch", kind="python_exception", host="n2", rank=2)]
    got = {f.rank: f for f in run(first_cause, evs)}
    assert not got[0].direct and got[0].score < 0.3
    assert got[2].direct and got[2].score >= 0.8


def test_an_srun_task_exit_names_the_node_its_task_ran_on():
    # srun writes on the batch host (n2's job output, no host of its own): the node it names is the
    # culprit's, not the batch host whose requeue notice comes a second later
    evs = steps(NODES, 5) + [
        ev(10.0, "n1: task 1: Segmentation fault", kind="crash_signal", program="srun", file="slurm-7.out",
           raw="srun: error: n1: task 1: Segmentation fault"),
        ev(11.0, "*** JOB 7 ON n2 CANCELLED AT 2026-03-02T01:42:09 DUE TO JOB REQUEUE ***", kind="cancelled",
           program="slurmstepd", host="n2"),
    ]
    got = run(first_cause, evs)
    assert got[0].kind == "crash" and got[0].host == "n1" and got[0].rank is None


def test_srun_reporting_tasks_aborted_or_terminated_is_weak_a_fault_is_not():
    # SIGABRT is how a rank's watchdog takes it down after a collective timeout, SIGTERM the teardown's:
    # srun's report of either says nothing of who failed first; a segfault it reports does
    def srun(state):
        return ev(10.0, f"n1: tasks 0-1: {state}", kind="crash_signal", program="srun", file="slurm-7.out",
                  raw=f"srun: error: n1: tasks 0-1: {state}")
    for state in ("Aborted", "Terminated"):
        (f,) = run(first_cause, steps(NODES, 5) + [srun(state)])
        assert not f.direct and "brought down" in f.why
    (f,) = run(first_cause, steps(NODES, 5) + [srun("Segmentation fault")])
    assert f.direct and f.host == "n1"
