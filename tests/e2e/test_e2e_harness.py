"""Checks of the capture harness that need neither Slurm nor torch."""
import subprocess
import sys

import pytest

from e2e_support import CAPTURE_DIR, capture_mod as mod


def test_capture_list_names_every_scenario_with_a_taxonomy_kind():
    r = subprocess.run([sys.executable, str(CAPTURE_DIR / "capture.py"), "list"],
                       capture_output=True, text=True, check=True)
    listed = {line.split()[0] for line in r.stdout.splitlines()}
    assert listed == set(mod.SCENARIOS)
    kinds = {sc["kind"] for sc in mod.SCENARIOS.values()}
    assert kinds <= set(mod.KINDS)
    # the incidents issue 3 asks for are all there
    assert {"none", "exception", "crash", "killed", "oom", "hang", "node_failure",
            "rendezvous_timeout", "time_limit", "cancelled"} <= kinds
    assert sum(1 for sc in mod.SCENARIOS.values() if sc.get("skew")) >= 2
    assert any(sc["launcher"] == "slurm_torchrun" for sc in mod.SCENARIOS.values())


@pytest.mark.parametrize("script", ["install.sh", "slurm_up.sh", "slurm_down.sh", "node_launch.sh"])
def test_shell_scripts_parse(script):
    subprocess.run(["bash", "-n", str(CAPTURE_DIR / script)], check=True)


# ---------------------------------------------------------------- attempts.py (runs that restart)
def _proc(rank, host, started, ended, pid=None):
    return {"rank": rank, "host": host, "local_rank": rank % 2, "pid": pid or 1000 + int(started) + rank,
            "started": started, "ended": ended}


def test_worker_processes_split_into_attempts_where_one_group_ended_before_the_next():
    att = mod.att  # tools/capture/attempts.py, as capture.py imports it
    first = [_proc(r, f"h{r // 2}", 10 + r, 30 + r) for r in range(4)]
    # rank 0 of the second group starts while nothing of the first is alive; the
    # others start later; a process still alive at the end keeps its group open
    second = [_proc(0, "h0", 40, 60), _proc(1, "h0", 45, None), _proc(2, "h1", 61, 70)]
    groups = att.group_by_time(second[::-1] + first)
    assert [sorted(p["rank"] for p in g) for g in groups] == [[0, 1, 2, 3], [0, 1, 2]]
    # a process that starts while one of the current group still runs belongs to it
    overlap = [_proc(0, "h0", 10, 30), _proc(1, "h0", 29, 50), _proc(2, "h1", 49, 60)]
    assert len(att.group_by_time(overlap)) == 1


def test_torchrun_attempts_take_the_first_fault_and_date_rounds_by_the_agents_lines():
    att = mod.att  # tools/capture/attempts.py, as capture.py imports it
    procs = [_proc(r, f"h{r // 2}", 10 + r, 30) for r in range(4)] + \
            [_proc(r, f"h{r // 2}", 50 + r, 80) for r in range(4)]
    logs = {"h0": "start\nRendezvous'ing worker group\nx\nDetected 1 new nodes; will restart worker group\n"
                  "Rendezvous'ing worker group\n  restart_count=0\nend",
            "h1": "Rendezvous'ing worker group\nWorker group FAILED. 2/2 attempts left; will restart worker group\n"
                  "Rendezvous'ing worker group\n"}
    times = {"h0": [1, 2, 3, 31, 32, 33, 90], "h1": [1.5, 29, 29.5]}
    faults = [{"kind": "exception", "pid": procs[3]["pid"], "rank": 3, "local_rank": 1, "host": "h1", "time": 25},
              {"kind": "segfault", "pid": procs[0]["pid"], "rank": 0, "local_rank": 0, "host": "h0", "time": 26}]
    a = att.torchrun_attempts(procs, faults, logs, times, {"h0": 0, "h1": 0})
    assert [x["outcome"] for x in a] == ["failed", "completed"]
    assert (a[0]["verdict"]["kind"], a[0]["verdict"]["rank"]) == ("exception", 3)  # the first in time
    assert [x["kind"] for x in a[0]["other_faults"]] == ["crash"]
    assert (a[0]["start"], a[1]["start"]) == (1.5, 29.5)   # the earliest agent's n-th round
    assert (a[0]["end"], a[1]["end"]) == (30, 80)
    assert "Worker group FAILED ... will restart worker group` on h1" in a[1]["boundary"]
    assert "Detected new nodes ... will restart worker group` on h0" in a[1]["boundary"]
    # an agent of the last attempt's nodes that did not exit 0: the run did not complete
    b = att.torchrun_attempts(procs, faults, logs, times, {"h0": 0, "h1": 1})
    assert b[-1]["outcome"] == "failed" and "verdict" not in b[-1]
    c = att.contract(b, lambda t: None if t is None else f"T{t}")
    assert c[0]["verdict"]["time"] == "T25" and "verdict" not in c[1]


def test_slurm_attempts_follow_the_accounting_runs():
    att = mod.att  # tools/capture/attempts.py, as capture.py imports it
    runs = [{"state": "NODE_FAIL", "nodes": "n[1-2]", "start": 100, "end": 150},
            {"state": "COMPLETED", "nodes": "n[3-4]", "start": 300, "end": 360}]
    # run 1's frozen processes outlive its end; they still belong to run 1
    procs = [_proc(0, "n1", 110, 151), _proc(2, "n2", 111, 301), _proc(0, "n3", 310, 359)]
    fault = {"kind": "freeze_slurm_node", "pids": [procs[1]["pid"]], "pid": None, "rank": None, "host": "n2",
             "time": 140}
    a = att.slurm_attempts(runs, procs, [fault])
    assert [x["outcome"] for x in a] == ["failed", "completed"]
    assert a[0]["verdict"]["kind"] == "node_failure" and a[0]["verdict"]["host"] == "n2"
    assert a[0]["nodes"] == {"n1": [0], "n2": [2]} and a[1]["nodes"] == {"n3": [0]}
