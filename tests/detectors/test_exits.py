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


# DeepSpeed's launcher (deepspeed/launcher/launch.py sigkill_handler): 'Killing subprocess {pid}' for
# every subprocess, then '{cmd} exits with return code = {code}', cmd being the last one it spawned.
def _ds_kill(t, pid, line):
    # deepspeed/launcher/launch.py sigkill_handler, through DeepSpeed's logger
    return ev(t, f"Killing subprocess {pid}", kind="sigterm_sent", file="ds.log", line=line,
              raw=f"[2024-05-02 10:00:01,100] [INFO] [launch.py:315:sigkill_handler] Killing subprocess {pid}")


def _ds_exit(t, code, lr, line):
    return ev(t, f"['/usr/bin/python3', '-u', 'train.py', '--local_rank={lr}'] exits with return code = {code}",
              kind="worker_failed", file="ds.log", line=line)


def test_deepspeed_launcher_names_its_only_subprocess():
    # one subprocess killed: the command the handler prints is that process's own (its --local_rank)
    got = run(worker_exits, [_ds_kill(1.0, 20741, 1), _ds_exit(1.1, -9, 0, 2)])
    assert [(f.kind, f.pid, f.local_rank, f.direct, f.extra["source"]) for f in got] == \
        [("killed", 20741, 0, True, "launcher")]


def test_deepspeed_launcher_of_several_names_no_process():
    # two subprocesses killed: the one that failed is not said, and the cmd's --local_rank is the last one's
    got = run(worker_exits, [_ds_kill(1.0, 2914633, 1), _ds_kill(1.0, 2914634, 2), _ds_exit(1.1, 1, 4, 3)])
    assert [(f.kind, f.pid, f.local_rank) for f in got] == [("exception", None, None)]
    assert got[0].score < 0.3


def test_ray_worker_death_names_the_worker():
    # the raylet's report (src/ray/raylet/node_manager.cc), as Ray's driver logs it
    text = ("A worker died or was killed while executing a task by an unexpected system error. Worker ID: 4e0c "
            "Node ID: 2c8d Worker IP address: 10.62.7.19 Worker port: 37523 Worker PID: {pid} Worker exit type: {t} "
            "Worker exit detail: x.")
    got = run(worker_exits, [ev(1.0, text.format(pid=6218, t="SYSTEM_ERROR"), kind="worker_failed", host="driver"),
                             ev(2.0, text.format(pid=6219, t="INTENDED_USER_EXIT"), kind="worker_failed", host="driver"),
                             ev(3.0, text.format(pid=6220, t="NODE_OUT_OF_MEMORY"), kind="host_oom", host="driver")])
    assert sorted((f.pid, f.host, f.kind, f.direct) for f in got) == \
        [(6218, "10.62.7.19", "unknown", False), (6220, "10.62.7.19", "oom", True)]


WATCHDOG = ("[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2130, OpType=ALLREDUCE, "
            "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.")


def test_sigabrt_after_its_own_watchdog_timeout_is_a_victim():
    # torch's watchdog takes its process down (std::abort) after the timeout it reported: the SIGABRT
    # the agent or srun reports then is no crash; a SIGABRT with no timeout of its own before is one
    got = run(worker_exits, [
        ev(1, "local_ranks=[0, 1]", host="cn2", file="cn2.log", line=1),
        ev(1, "global_ranks=[4, 5]", host="cn2", file="cn2.log", line=2),
        ev(5, WATCHDOG.format(r=4), kind="collective_timeout", host="cn2", rank=4, file="r4.log"),
        agent(4.0, "cn2", -6, 0, 7451), agent(6.0, "cn2", -6, 1, 7452)])
    by = {f.pid: f for f in got}
    assert by[7451].kind == "killed" and not by[7451].direct and by[7451].extra.get("watchdog"), by[7451]
    assert by[7452].kind == "crash" and by[7452].direct


def test_srun_aborted_task_after_its_watchdog_timeout_is_a_victim():
    # srun's report has no time of its own (it may show an earlier one): no time is compared
    got = run(task_exits, [ev(30, WATCHDOG.format(r=4), kind="collective_timeout", host="g3", rank=4),
                           ev(30, WATCHDOG.format(r=0), kind="collective_timeout", host="g1", rank=0),
                           ev(20, "srun: error: g3: task 4: Aborted", host="g3"),
                           ev(21, "srun: error: g1: task 0: Aborted", host="g1"),
                           ev(22, "srun: error: g2: task 2: Aborted", host="g2"),
                           ev(23, "srun: error: g1: tasks 1,3,5: Terminated", host="g1")])
    by = {f.rank: f for f in got}
    assert by[4].kind == "killed" and by[0].kind == "killed" and by[4].extra.get("watchdog")
    assert by[2].kind == "crash" and by[2].direct
