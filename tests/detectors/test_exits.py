from ranktrace.correlate.detectors import task_exits, worker_exits

from .helpers import ev, run


def agent(t, host, code, lr, pid):
    return ev(t, f"failed (exitcode: {code}) local_rank: {lr} (pid: {pid}) of binary: python",
              kind="worker_failed", host=host)


def test_sigkill_is_direct_exit1_is_teardown():
    got = run(worker_exits, [
        ev(1, "local_ranks=[0, 1]", host="cn2", file="cn2.log", line=1),
        ev(1, "global_ranks=[4, 5]", host="cn2", file="cn2.log", line=2),
        agent(2.0, "cn2", -9, 1, 7451), agent(3.5, "cn1", 1, 1, 7463)])
    by = {f.pid: f for f in got}
    assert by[7451].kind == "killed" and by[7451].direct and by[7451].score > 0.7
    assert by[7463].kind == "exception" and not by[7463].direct and by[7463].score < 0.3


def test_sigsegv_is_crash_and_sigterm_is_ignored_teardown():
    got = run(worker_exits, [agent(2.0, "d4", -11, 0, 7850), agent(1.9, "d4", -15, 1, 7856)])
    by = {f.pid: f for f in got}
    assert by[7850].kind == "crash"
    assert by[7856].score < 0.1


def test_root_cause_entry_is_weak():
    block = ("Root Cause (first observed failure):\n[0]:\n  time      : 2026-03-02_03:17:41\n"
             "  host      : trn-node07\n  rank      : 13 (local_rank: 5)\n  exitcode  : 1 (pid: 48213)\n")
    got = run(worker_exits, [ev(5, "ChildFailedError", kind="failure_summary", host="trn-node07", raw=block)])
    assert len(got) == 1 and got[0].rank == 13 and got[0].score <= 0.3 and got[0].extra["source"] == "root_cause"


def test_srun_gap_names_the_task():
    got = run(task_exits, [ev(5, "srun: error: n1: tasks 0-57,59-63: Terminated", host="n1")])
    assert [f.rank for f in got] == [58]
    assert got[0].extra.get("gap")


def test_srun_oom_task_is_direct():
    got = run(task_exits, [ev(5, "srun: error: nid7: task 3: Out Of Memory", host="nid7"),
                           ev(6, "srun: error: nid7: tasks 0-2: Terminated", host="nid7")])
    assert [(f.rank, f.kind) for f in got] == [(3, "oom")]


def test_sacct_maxrss_names_the_task_that_grew_only_with_an_oom():
    from ranktrace.correlate.detectors import sacct_maxrss
    hdr = "JobID|JobName|State|MaxRSS|MaxRSSNode|MaxRSSTask|ReqMem"
    rows_ = [hdr, "9|pretrain|FAILED||||3000M", "9.batch|batch|FAILED|12284K|n1|0|", "9.0|launch.sh|CANCELLED|1311140K|n1|1|"]
    evs = [ev(None, r, file="sacct_P.txt", line=i + 1, kind="job_state") for i, r in enumerate(rows_)]
    assert run(sacct_maxrss, evs) == []          # no OOM in the store: sacct says nothing about a culprit
    got = run(sacct_maxrss, evs + [ev(5, "StepId=9.0 exceeded memory limit, being killed", kind="host_oom", host="n1")])
    assert [(f.rank, f.host, f.kind) for f in got] == [(1, "n1", "oom")]
