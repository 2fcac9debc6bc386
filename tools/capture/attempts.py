"""The attempts of a captured run that restarted, from what the harness saw.

A run launched with torchrun --max-restarts, or a Slurm job that was
requeued, is a sequence of attempts: one set of worker processes each. The
ground truth of each attempt (when it began and ended, how it ended, and
the root cause when it failed) is built here from the harness's own
records, never from parsing what the job logged about itself:

- every worker process writes a note when it starts (train.py:
  worker_pid<PID>.json: rank, host, local rank, pid, start time) and the
  harness polls whether each one is still alive (ProcessWatch), so it knows
  each process's life span to 0.25 s;
- every in-process fault writes a note (fault_pid<PID>.json) with its true
  time; faults injected from outside (SIGKILL, a frozen node) are recorded
  by the harness when it sends them;
- the agents' log lines carry their arrival times (line_times.json), which
  date the start of each rendezvous round.

The log lines are only read to date a round's start and, for people, to
say in `boundary` which line marks it.

Stdlib only (capture.py runs with any Python >= 3.9).
"""
import glob
import json
import os
import threading
import time

# how each fault the harness injects shows, in the taxonomy of design.md section 4
FAULT_KINDS = {"exception": "exception", "slowexc": "exception", "segfault": "crash",
               "oom_rlimit": "oom", "grow": "oom", "hang": "hang", "sigkill": "killed",
               "kill_node": "node_failure", "freeze_node": "node_failure",
               "freeze_slurm_node": "node_failure"}


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has ended; its parent just has not reaped it yet
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class ProcessWatch(threading.Thread):
    """Notes the life span (true clock) of every worker process of a run:
    start = the process's own note, end = the first poll that found it gone."""

    def __init__(self, piddir, interval=0.25):
        super().__init__(daemon=True)
        self.piddir, self.interval = piddir, interval
        self.procs = {}
        self._halt = threading.Event()

    def scan(self):
        now = time.time()
        for f in glob.glob(os.path.join(self.piddir, "worker_pid*.json")):
            try:
                d = json.load(open(f))
            except (OSError, ValueError):
                continue  # being written
            self.procs.setdefault(d["pid"], dict(d, ended=None))
        for p in self.procs.values():
            if p["ended"] is None and not _alive(p["pid"]):
                p["ended"] = now

    def run(self):
        while not self._halt.is_set():
            self.scan()
            self._halt.wait(self.interval)

    def stop(self):
        self._halt.set()
        self.join(10)
        self.scan()
        return sorted(self.procs.values(), key=lambda p: (p["started"], p["rank"]))


def group_by_time(procs):
    """Worker processes -> attempts (lists of processes, in time order). A
    new attempt begins with a process that started after every process of
    the current one had ended: a launcher restarts a worker group only once
    the old one is stopped (torchrun re-rendezvouses after stopping its
    workers; Slurm requeues a job once its allocation is released). A
    process still alive at the end (ended None) keeps its attempt open."""
    groups, end, still_open = [], None, False
    for p in sorted(procs, key=lambda p: p["started"]):
        if groups and (still_open or p["started"] <= end):
            groups[-1].append(p)
        else:
            groups.append([p])
            end, still_open = None, False
        if p["ended"] is None:
            still_open = True
        else:
            end = p["ended"] if end is None else max(end, p["ended"])
    return groups


def nth_times(line_times, logs, needle):
    """{host: [arrival time of each line containing needle, in order]}."""
    out = {}
    for host, text in logs.items():
        times = line_times.get(host, [])  # one per line as the harness read them (split at \n only)
        out[host] = [t for line, t in zip(text.split("\n"), times) if needle in line]
    return out


def nodes_of(procs):
    """{host: [ranks]} of an attempt's processes."""
    out = {}
    for p in procs:
        out.setdefault(p["host"], []).append(p["rank"])
    return {h: sorted(set(r)) for h, r in sorted(out.items())}


def culprit_of(faults):
    """The root cause among an attempt's faults: the first in true time."""
    return min(faults, key=lambda f: f["time"]) if faults else None


def verdict_of(fault):
    return {"kind": FAULT_KINDS[fault["kind"]], "rank": fault.get("rank"),
            "local_rank": fault.get("local_rank"), "host": fault.get("host"), "pod": None,
            "pid": fault.get("pid"), "gpu": None, "time": fault["time"]}


def assign_faults(groups, faults):
    """[faults of attempt i] by the pid of the process that failed (a node
    fault: any of the node's processes); a fault with no known process goes
    to the attempt running at its time."""
    out = [[] for _ in groups]
    for f in faults:
        pids = set(f.get("pids") or [f.get("pid")])
        idx = next((i for i, g in enumerate(groups) if pids & {p["pid"] for p in g}), None)
        if idx is None:
            idx = max((i for i, g in enumerate(groups) if min(p["started"] for p in g) <= f["time"]),
                      default=0)
        out[idx].append(f)
    return out


def torchrun_attempts(procs, faults, logs, line_times, agent_exit):
    """The attempts of a torchrun run: one per rendezvous round of the
    worker group. start = the first `Rendezvous'ing worker group` line of
    that round (any agent), end = the last worker process's end (the last
    agent's exit for the final attempt is not counted: the workers are the
    attempt). outcome: failed where a fault hit it, else completed when the
    agents of its nodes all exited 0 (agent_exit: {host: exit code}; the last
    attempt), else cancelled (a restart without a failure: a membership
    change)."""
    groups = group_by_time(procs)
    rounds = nth_times(line_times, logs, "Rendezvous'ing worker group")
    counts = _restart_counts(logs)
    per = assign_faults(groups, faults)
    out = []
    for i, (g, fs) in enumerate(zip(groups, per)):
        starts = [ts[i] for ts in rounds.values() if len(ts) > i]
        ends = [p["ended"] for p in g]
        a = {"id": i + 1,
             "start": min(starts) if starts else min(p["started"] for p in g),
             "end": None if None in ends else max(ends),
             "boundary": _torchrun_boundary(i, logs, counts),
             "nodes": nodes_of(g),
             "pids": {str(p["rank"]): p["pid"] for p in g}}
        c = culprit_of(fs)
        if c:
            a["outcome"], a["verdict"] = "failed", verdict_of(c)
            if len(fs) > 1:
                a["other_faults"] = [verdict_of(f) for f in fs if f is not c]
        elif i == len(groups) - 1:
            a["outcome"] = "completed" if all(agent_exit.get(h) == 0 for h in a["nodes"]) else "failed"
        else:
            a["outcome"] = "cancelled"
        out.append(a)
    return out


def _restart_counts(logs):
    """{host: [restart_count of each rendezvous round that agent logged]}."""
    out = {}
    for host, text in logs.items():
        out[host] = [int(l.rsplit("restart_count=", 1)[1].split()[0]) for l in text.splitlines()
                     if "restart_count=" in l]
    return out


def _torchrun_boundary(i, logs, counts):
    if i == 0:
        return "torchrun agents start; first rendezvous round (restart_count=0 on every agent)"
    how = {"Worker group FAILED": [], "Detected new nodes": []}
    for host, text in sorted(logs.items()):
        rs = [l for l in text.splitlines() if "will restart worker group" in l]
        if len(rs) > i - 1:
            said = "Worker group FAILED" if "Worker group FAILED" in rs[i - 1] else "Detected new nodes"
            how[said].append(host)
    rc = {h: c[i] for h, c in counts.items() if len(c) > i}
    what = "; ".join(f"`{k} ... will restart worker group` on {', '.join(v)}" for k, v in how.items() if v)
    return (f"torchrun restart of the worker group: {what}; new rendezvous round, restart_count per "
            f"agent {json.dumps(rc, sort_keys=True)} (an agent counts only its own workers' failures)")


def slurm_attempts(runs, procs, faults):
    """The attempts of a Slurm job that was requeued: one per run of the
    job as accounting records it (`sacct --duplicates`: one row per run,
    whole seconds), each with the worker processes that started in it.
    A fault goes to the run of its processes. outcome from the run's state:
    COMPLETED -> completed, CANCELLED -> cancelled, RUNNING -> running,
    anything else (NODE_FAIL, FAILED, REQUEUED, TIMEOUT, OUT_OF_MEMORY) ->
    failed."""
    groups = []
    for i, r in enumerate(runs):
        nxt = runs[i + 1]["start"] if i + 1 < len(runs) else float("inf")
        groups.append([p for p in procs if r["start"] - 1 <= p["started"] < nxt])
    per = assign_faults(groups, faults)
    out = []
    for i, (r, g, fs) in enumerate(zip(runs, groups, per)):
        a = {"id": i + 1, "start": r["start"], "end": r["end"],
             "boundary": ("sbatch: the job starts" if i == 0 else
                          f"Slurm requeue: the job (same id) starts again, run {i + 1} (Restarts={i})"),
             "slurm_state": r["state"], "slurm_nodes": r["nodes"],
             "nodes": nodes_of(g), "pids": {str(p["rank"]): p["pid"] for p in g}}
        c = culprit_of(fs)
        state = r["state"].split()[0]
        a["outcome"] = {"COMPLETED": "completed", "CANCELLED": "cancelled", "RUNNING": "running"}.get(
            state, "failed")
        if c:
            a["outcome"], a["verdict"] = "failed", verdict_of(c)
        out.append(a)
    return out


def contract(attempts, utc_iso):
    """The attempts as sample_logs/README.md's contract has them (true
    times as ISO UTC, verdict for failed attempts only)."""
    out = []
    for a in attempts:
        c = {"id": a["id"], "start": utc_iso(a["start"]), "end": utc_iso(a["end"]),
             "outcome": a["outcome"], "boundary": a["boundary"]}
        if a.get("verdict"):
            c["verdict"] = dict(a["verdict"], time=utc_iso(a["verdict"]["time"]))
        out.append(c)
    return out
