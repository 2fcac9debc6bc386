"""Launcher exit reports: torchrun agent `failed (exitcode: N)` lines and Root Cause /
Failures entries; srun `tasks 0-57,59-63: Terminated` lines.

An exit by SIGKILL/SIGSEGV/... is the culprit's own death certificate even when the
culprit wrote nothing. Exit code 1 after a peer error, or SIGTERM (the agent tearing down
siblings), is teardown. The Root Cause block is weak (per node, 1 s resolution, can name
a healthy sibling). For srun, the culprit is the task with a different state, or the
gap in a 'Terminated' range."""

from __future__ import annotations

import re

from ..hostlist import compress_ranges, expand_ranges
from ..util import on, rows, table_exists
from .base import SIGNALS, Finding, query, signal_kind


# Ray's worker exit types (src/ray/protobuf/common.proto WorkerExitType) -> (kind, score, direct). The
# raylet writes SYSTEM_ERROR when the worker's connection ended without an exit of its own ("(1) killed
# by SIGKILL by OOM killer ... (2) ray stop --force ... (3) crashed ... SIGSEGV"): a death certificate
# naming the worker, with no cause; INTENDED_* exits are no failure. Ray 1.x named the same system-level death
# SYSTEM_ERROR_EXIT (the enum's first value before 2.0; public: ray-project/ray#25382, a JaxTrainer actor's
# 'Worker exit type: SYSTEM_ERROR_EXIT').
RAY_EXIT = {"SYSTEM_ERROR": ("unknown", 0.45, False), "SYSTEM_ERROR_EXIT": ("unknown", 0.45, False),
            "USER_ERROR": ("exception", 0.3, False), "NODE_OUT_OF_MEMORY": ("oom", 0.75, True)}


# torch's watchdog takes its own process down after a collective timed out (ProcessGroupNCCL: "To avoid data
# inconsistency, we are taking the entire process down", then std::abort): a rank that reported a timeout
# in this attempt and died of SIGABRT is a victim of whatever it waited for, not a crash. No time is
# compared: a dead process writes nothing, so its timeout line came first, whatever the clocks of the
# report (a launcher's, srun's: often a line without a time of its own) say.
def watchdog_ranks(con) -> set[tuple]:
    """(host, rank) of the ranks that said their watchdog caught a timeout or aborted."""
    src = "hot_events" if table_exists(con, "hot_events") else "aligned_events"
    return set(con.execute(f"SELECT DISTINCT host, rank FROM {src} WHERE kind IN ('collective_timeout', "
                           "'watchdog_abort') AND rank IS NOT NULL").fetchall())


def watchdog_abort(ranks: set[tuple], host, rank, sig, source: str | None = None) -> bool:
    """The exit by `sig` of rank `rank` on `host` (None: unknown) is its watchdog's own abort. The DeepSpeed
    launcher's report names no rank when it killed several subprocesses: they are all its node's, so a
    SIGABRT it reports on a node where a rank's watchdog fired is that watchdog's."""
    if sig == 6 and rank is None and source == "launcher" and host is not None:
        return any(h == host for h, _ in ranks)
    return sig == 6 and rank is not None and any(
        r == rank and (host is None or h is None or h == host) for h, r in ranks)


def worker_exits(con) -> list[Finding]:
    rs = query(con, "worker_exits")
    out: list[Finding] = []
    wd = watchdog_ranks(con) if any(r["signal"] == 6 for r in rs) else set()
    agent = [r for r in rs if r["source"] == "agent"]
    first_host_time = {}
    for r in agent:
        if r["ats"] is not None:
            first_host_time.setdefault(r["host"], r["ats"])
    t0 = min(first_host_time.values()) if first_host_time else None
    rc_times = sorted({r["ats"] for r in rs if r["source"] == "root_cause" and r["ats"] is not None})
    seen = set()
    for r in rs:
        sig = r["signal"]
        kind = signal_kind(sig)
        key = (r["host"], r["pid"], r["source"])
        if key in seen:
            continue
        seen.add(key)
        name = f"{SIGNALS.get(sig, 'signal ' + str(sig))}" if sig else f"exit code {r['exitcode']}"
        if r["source"] == "ray":
            m = re.search(r"Worker exit type: (\w+)", r["text"] or "")
            if not m or m.group(1) not in RAY_EXIT:
                continue
            kind, score, direct = RAY_EXIT[m.group(1)]
            out.append(Finding(detector="worker_exits", kind=kind, score=score, direct=direct,
                               why=f"Ray's raylet reports worker pid {r['pid']}{on(r['host'])} died ({m.group(1)})",
                               host=r["host"], pid=r["pid"], time=r["ats"], evidence=[r["event_id"]],
                               extra={"source": "ray", "exit_type": m.group(1)}))
            continue
        if r["source"] == "vllm":
            # vLLM's monitor names the worker it lost (its pid and exit code, or its rank): the signal says
            # how it died; without one, it died of a cause the monitor did not see (as Ray's SYSTEM_ERROR)
            who = f"rank {r['rank']}" if r["rank"] is not None else f"pid {r['pid']}"
            out.append(Finding(detector="worker_exits", kind=kind or "unknown", score=0.5 if kind else 0.45,
                               direct=bool(kind), why=f"vLLM's worker monitor{on(r['host'])} reports worker {who} died"
                               + (f" of {name}" if r["exitcode"] is not None else ""),
                               rank=r["rank"], host=r["host"], pid=r["pid"], time=r["ats"], evidence=[r["event_id"]],
                               extra={"source": "vllm", "exitcode": r["exitcode"], "signal": sig}))
            continue
        rank = r["rank"]
        if sig == 6 and rank is None and wd:   # an agent names the local rank and pid: the links the rank
            from ..identity import lookup
            rank = lookup(con, host=r["host"], pid=r["pid"], local_rank=r["local_rank"]).get("rank")
        if watchdog_abort(wd, r["host"], rank, sig, r["source"]):
            out.append(Finding(detector="worker_exits", kind="killed", score=0.03,
                               why=f"{'rank ' + str(rank) if rank is not None else 'a worker'}{on(r['host'])} died "
                                   "of SIGABRT after its own watchdog caught a collective timeout (the watchdog "
                                   "takes the process down: a victim)",
                               rank=rank, local_rank=r["local_rank"], host=r["host"], pid=r["pid"],
                               evidence=[r["event_id"]], extra={"source": r["source"], "signal": 6, "watchdog": True}))
            continue
        if r["source"] in ("agent", "launcher", "paddle"):
            if sig == 15:
                score, kind = 0.05, "killed"
            elif kind:
                score = 0.75
            elif r["source"] == "launcher" and r["exitcode"] is None:
                # the DeepSpeed launcher's report cut before its return code: a subprocess failed, of what
                # the text does not say
                kind, score, name = "unknown", 0.2, "a return code the text cut off"
            else:
                # a non-zero exit code: the process ended of its own error (exception). The DeepSpeed
                # launcher's 'exits with return code = 1' is the whole job's account of it (the weak lead
                # names the kind, at its low confidence); a torchrun agent's is one worker among its peers'
                kind, score = "exception", 0.2 if r["source"] == "launcher" else 0.15
            first = r["ats"] is not None and t0 is not None and r["ats"] == first_host_time.get(r["host"])
            if first and r["ats"] == t0 and sig != 15:
                score += 0.1
            why = (f"the launcher{on(r['host'])} reports local_rank {r['local_rank']} (pid {r['pid']}) died of {name}"
                   if r["source"] == "agent" else
                   f"paddle's launcher{on(r['host'])} reports its container of local rank {r['local_rank']} failed "
                   f"with {name}" if r["source"] == "paddle" else
                   f"the DeepSpeed launcher{on(r['host'])} reports a subprocess"
                   + (f" (pid {r['pid']}, the only one it killed)" if r["pid"] is not None else
                      " (which one it does not say: it prints the last one it started)") + f" died of {name}")
        else:
            if sig == 15:   # a sibling SIGTERMed by its agent: teardown (alive until then: a hang?)
                out.append(Finding(detector="worker_exits", kind="killed", score=0.02,
                                   why=f"rank {r['rank']}{on(r['host'])} was SIGTERMed by its launcher (teardown)",
                                   rank=r["rank"], local_rank=r["local_rank"], host=r["host"], pid=r["pid"],
                                   evidence=[r["event_id"]], extra={"source": r["source"], "signal": 15}))
                continue
            weight = 0.22 if r["source"] == "root_cause" else 0.1
            if r["source"] == "root_cause" and len(rc_times) > 1 and r["ats"] == rc_times[0]:
                weight += 0.05   # the earliest of several nodes' Root Cause blocks
            score = weight + (0.3 if kind else 0.0)
            kind = kind or "exception"
            why = (f"torchrun {'Root Cause' if r['source'] == 'root_cause' else 'Failures'} entry (weak: per node, "
                   f"1 s resolution) names rank {r['rank']}{on(r['host'])} ({name})")
        out.append(Finding(detector="worker_exits", kind=kind, score=min(score, 0.95), why=why,
                           rank=r["rank"], local_rank=r["local_rank"], host=r["host"], pid=r["pid"],
                           time=r["ats"] if r["source"] in ("agent", "paddle") else None, evidence=[r["event_id"]],
                           direct=bool(sig and sig != 15),
                           extra={"source": r["source"], "exitcode": r["exitcode"], "signal": sig}))
    return out


_STATE_KIND = [
    (r"(?i)out of memory|oom", "oom", 0.85),
    (r"(?i)segmentation fault|bus error|aborted|floating point|illegal instruction|core dumped", "crash", 0.8),
    (r"(?i)^killed", "killed", 0.5),
    (r"(?i)exited with exit code", "exception", 0.4),
    (r"(?i)terminated", None, 0.0),
]


def _state(state: str):
    for pat, kind, score in _STATE_KIND:
        if re.search(pat, state):
            return kind, score
    return "unknown", 0.2


def task_exits(con) -> list[Finding]:
    rs = query(con, "task_exits")
    if not rs:
        return []
    out: list[Finding] = []
    terminated: set[int] = set()
    term_by_node: dict[str | None, set[int]] = {}
    others: dict[int, tuple] = {}
    for r in rs:
        try:
            tasks = expand_ranges(r["ranges"])
        except ValueError:
            continue
        kind, score = _state(r["state"])
        if kind is None:
            terminated.update(tasks)
            term_by_node.setdefault(r["node"], set()).update(tasks)
            continue
        for t in tasks:
            others.setdefault(t, (kind, score, r))
    from ..identity import srun_runs_agents
    if srun_runs_agents(con):
        # srun runs one torchrun agent per node: a task is an agent, its exit is the launcher's
        # teardown (the worker that failed is in the agent's own report). Out Of Memory is the
        # step's memory cgroup on that node (slurmstepd counted its oom-kill events): where the
        # OOM happened, whichever worker of the agent it killed
        return [Finding(detector="task_exits", kind=kind, score=0.1 if kind in ("oom", "crash") else 0.03,
                        why=f"srun: the launcher task {t} on {r['node']} ended '{r['state']}'",
                        host=r["node"], time=r["ats"], evidence=[r["event_id"]], direct=kind == "oom",
                        extra={"state": r["state"]})
                for t, (kind, score, r) in sorted(others.items())]
    # tasks reported with a state other than Terminated
    n_other_tasks = len(others)
    # srun writes a task's exit when the step's exit message for it arrives: of two tasks ending the same
    # way with no time of their own, in one file, the one written first ended first (rows come in file order)
    untimed = [t for t, (k, _, r) in others.items() if r["ats"] is None]
    written_after = {t for t in untimed
                     if any(u != t and others[u][0] == others[t][0] and others[u][2]["file"] == others[t][2]["file"]
                            and others[u][2]["line"] < others[t][2]["line"] for u in untimed)}
    wd = watchdog_ranks(con) if any(k == "crash" for k, _, _ in others.values()) else set()
    for t, (kind, score, r) in sorted(others.items()):
        if kind == "crash" and re.search(r"(?i)aborted", r["state"]) and watchdog_abort(wd, r["node"], t, 6):
            out.append(Finding(detector="task_exits", kind="killed", score=0.03,
                               why=f"srun: task {t} on {r['node']} ended '{r['state']}' after its own watchdog caught "
                                   "a collective timeout (the watchdog takes the process down: a victim)",
                               rank=t, host=r["node"], time=r["ats"], evidence=[r["event_id"]],
                               extra={"state": r["state"], "watchdog": True}))
            continue
        if n_other_tasks > 1 and kind in ("killed", "exception"):
            score *= 0.6   # several tasks killed: a whole-step kill (OOM of the step, cancel)
        if t in written_after:
            score *= 0.9
        out.append(Finding(detector="task_exits", kind=kind, score=score,
                           why=f"srun: task {t} on {r['node']} ended '{r['state']}' while others were terminated",
                           rank=t, host=r["node"], time=r["ats"], evidence=[r["event_id"]], direct=kind in ("oom", "crash"),
                           extra={"state": r["state"]}))
    # the gap: tasks missing from the Terminated ranges, when nobody else reported them
    if terminated and not others:
        universe = range(0, max(terminated | set(others)) + 1)
        gap = [t for t in universe if t not in terminated and t not in others]
        if 0 < len(gap) <= max(1, len(universe) // 8):
            r0 = next(r for r in rs if _state(r["state"])[0] is None)
            for t in gap:
                # srun writes one line per node and state ('srun: error: n4: tasks 0-57,59-63: Terminated'): a
                # gap between the lowest and highest task of exactly one node is that node's (a block layout gives
                # each node a run of task ids; a cyclic one interleaves them, so the gap falls inside several
                # nodes' spans and none is named); a gap at an edge may be another node's
                inside = [n for n, ts in term_by_node.items() if n and min(ts) < t < max(ts)]
                host = inside[0] if len(inside) == 1 else None
                out.append(Finding(detector="task_exits", kind="unknown", score=0.45,
                                   why=f"srun reports tasks {compress_ranges(terminated)} Terminated: task {t} is "
                                       f"the gap (it ended before the teardown)"
                                       + (f", inside {host}'s tasks" if host else ""),
                                   rank=t, host=host, time=None, evidence=[r0["event_id"]], extra={"gap": True}))
    return out


def _bytes(s: str) -> float:
    m = re.fullmatch(r"([\d.]+)([KMGT]?)", (s or "").strip())
    if not m:
        return -1.0
    return float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2)]


def sacct_maxrss(con) -> list[Finding]:
    """With a step over its memory limit, srun names no task (`tasks 0-3: Killed`); sacct -P's
    MaxRSSTask / MaxRSSNode of the step say which task grew. Used only when the store has an OOM."""
    from ..identity import srun_runs_agents
    if not con.execute("SELECT count(*) FROM events WHERE kind = 'host_oom'").fetchone()[0]:
        return []
    if srun_runs_agents(con):
        return []   # a task is a torchrun agent, not a rank
    heads = rows(con, "SELECT file_id, line, raw FROM events WHERE raw LIKE 'JobID|%' AND raw LIKE '%|MaxRSSTask%'")
    best = None
    for h in heads:
        cols = h["raw"].strip().split("|")
        try:
            i_rss, i_task, i_node, i_id = (cols.index("MaxRSS"), cols.index("MaxRSSTask"), cols.index("MaxRSSNode"),
                                           cols.index("JobID"))
        except ValueError:
            continue
        for r in rows(con, "SELECT event_id, raw FROM events WHERE file_id = ? AND line > ? ORDER BY line",
                      [h["file_id"], h["line"]]):
            f = r["raw"].strip().split("|")
            if len(f) != len(cols) or not re.fullmatch(r"\d+(?:_\d+)?\.\d+", f[i_id]) or not f[i_task].isdigit():
                continue
            rss = _bytes(f[i_rss])
            if best is None or rss > best[0]:
                best = (rss, int(f[i_task]), f[i_node] or None, r["event_id"], f[i_id])
    if best is None:
        return []
    rss, task, node, eid, step = best
    return [Finding(detector="sacct_maxrss", kind="oom", score=0.3,
                    why=f"sacct: the largest memory of step {step} was task {task} on {node} "
                        f"(MaxRSS {rss / (1 << 20):.0f} MiB): the task that grew",
                    rank=task, host=node, evidence=[eid], extra={"maxrss_bytes": rss})]
