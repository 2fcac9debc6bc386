"""first_cause: the earliest cause-role event on the aligned clock, per culprit.

The loud lines are symptoms (role symptom); only cause-role events compete here. Each
culprit's first cause becomes a finding; earlier ones score higher, and a culprit whose
cause comes after another culprit's cause by more than the clock's uncertainty is
scored as a probable consequence."""

from __future__ import annotations

import re

from ..util import rows, table_exists
from .base import OWN_NODE_KINDS, SELF_FAULT_STATES, Finding, query

DIRECT = 0.85
# a cause line whose time it inherited from a neighbouring line: its order among the others is less sure
INHERITED_TIME = 0.9


def _weak_reason(r: dict) -> str | None:
    """Why a cause-role line is only weak evidence of the root cause (None: it is direct)."""
    fmt = r["format"] or ""
    if r["program"] == "srun" and r["reported"] and _SRUN_BROUGHT_DOWN.search(r["message"] or ""):
        return "srun's report of tasks brought down (task_exits tells a watchdog's abort from a fault)"
    if fmt == "openmpi_signal" and _MPIRUN_BROUGHT_DOWN.match(r["message"] or ""):
        return "mpirun's report of a process brought down (a watchdog's SIGABRT, or a fault its own lines tell)"
    if r["kind"] == "process_exit" and (r["program"] in SCHEDULER_PROGRAMS or fmt.startswith(("slurm", "kube"))):
        return "a scheduler's report of an exit code (the process's own line says why)"
    if r["failure"] in ("time_limit", "cancelled") and r["program"] not in SCHEDULER_PROGRAMS \
            and not fmt.startswith(("slurm", "kube", "sacct")):
        return "the application, not the scheduler, says so"   # "Time limit of 1d reached. Stopping training."
    if r["failure"] in ("exception", "unknown") and _SYMPTOM_TEXT.search(r["message"] or ""):
        return "the message reads like a consequence of a lost peer (connection closed / timed out)"
    return None


# 'n1: tasks 0-3: Aborted': how a job's watchdogs (SIGABRT) and its teardown (SIGTERM) bring its
# tasks down, as srun reports them (a memory fault, a kill (the OOM killer's too) or an exit code stay direct)
_SRUN_BROUGHT_DOWN = re.compile(r": tasks? [\d,-]+: (?:Aborted|Terminated)\b")
# the same as Open MPI's launcher reports it ('mpirun noticed that process rank 3 with PID 0 on node n2 exited on
# signal 6 (Aborted).', openmpi_signal.noticed: the message from 'exited')
_MPIRUN_BROUGHT_DOWN = re.compile(r"exited on signal (?:6|15) ")


# An exception whose text is about a lost peer is almost always the cascade, whatever the
# format's rules said (a safety net against a confident wrong blame).
_SYMPTOM_TEXT = re.compile(r"(?i)connection (?:closed|reset|refused)|closed by peer|reset by peer|broken pipe|"
                           r"timed out|timeout|watchdog|socket.*(?:closed|error)|ncclRemoteError|remote process exited")


def first_cause(con) -> list[Finding]:
    """Each culprit's first cause line, and its first once the job had stopped training when that
    differs: the first of those (a warning the job trained past is not the failure's first) is the
    strongest, the others weaker by how late they came."""
    from ..survival import healthy_until
    healthy = healthy_until(con)
    rs = query(con, "first_cause", {"healthy": healthy})
    weak = [_weak_reason(r) for r in rs]

    def past(r) -> bool:   # before the job's last healthy progress: it trained on after this line
        return healthy is not None and r["ats"] is not None and r["ats"] < healthy

    t0 = next((r["ats"] for r, w in zip(rs, weak) if r["ats"] is not None and w is None and not past(r)), None)
    out = []
    n_direct = 0
    for i, (r, w) in enumerate(zip(rs, weak)):
        lag = (r["ats"] - t0).total_seconds() if r["ats"] is not None and t0 is not None else None
        if w is None and past(r):
            score = DIRECT * 0.35
        elif w is None:
            score = _direct_score(n_direct, lag)
            n_direct += 1
        else:
            score = 0.2
        if not r["ts_ok"]:
            score *= INHERITED_TIME
        ident = dict(rank=r["rank"], local_rank=r["local_rank"], host=r["host"], pid=r["pid"], pod=r["pod"],
                     gpu=r["gpu"])
        if r["failure"] == "node_failure" and r["kind"] not in OWN_NODE_KINDS:
            # "node n2 not responding", "JOB 7 ON n1 CANCELLED ... DUE TO NODE FAILURE": the line's own
            # host is a reporter; node_events names the node
            ident = dict.fromkeys(ident)
        who = (f"rank {r['rank']}" if r["rank"] is not None else "") + (f" on {r['host']}" if r["host"] else "")
        first = w is None and not past(r) and n_direct == 1
        out.append(Finding(
            detector="first_cause", kind=r["failure"] if r["failure"] else "unknown", score=score,
            why=f"{'earliest' if first else 'a'} cause line"
                f"{(' of ' + who.strip().removeprefix('on ')) if who.strip() else ''}: "
                f"{r['kind']} ({(r['message'] or '').strip()[:120]})" + (f" — weak: {w}" if w else ""),
            **ident, time=r["ats"], evidence=[r["event_id"]], direct=w is None,
            extra={"order": i, "lag_s": lag, "event_kind": r["kind"], "ts_ok": r["ts_ok"], "n_causes": r["n_causes"],
                   "reported": r["reported"], "past": past(r), "first": first, "state": _fault_state(r)}))
    return out


def _fault_state(r: dict) -> str | None:
    """The memory or instruction fault a crash line names ('Fatal Python error: Segmentation fault', 'mpirun
    noticed that process rank 3 ... exited on signal 11 (Segmentation fault)'): the process died of its own
    fault, not of a peer it waited on (choose.py's `victim`), whatever it complained of before."""
    if r["kind"] != "crash_signal":
        return None
    return next((s for s in SELF_FAULT_STATES if s in (r["message"] or "")), None)


def _direct_score(n_direct: int, lag: float | None) -> float:
    """The score of the n-th direct cause line that the job did not train past (0: the first), `lag` s after
    the first: within the clock's grain of it, nearly as strong; later, a probable consequence."""
    if n_direct == 0:
        return DIRECT
    return DIRECT * 0.8 if lag is not None and lag <= 1.0 else DIRECT * 0.35


def rescore_after_demotions(findings: list[Finding]) -> int:
    """When the line first_cause took for the first failure was demoted since (its rank trained on after
    it: survival.demote_survived; a port that blinked: network.uncorroborated_port_errors), the direct
    cause lines that stand are scored, in place, as first_cause would have scored them without it: the
    first of them is the earliest, the others' lag counts from it. Returns how many were scored again."""
    fc = [f for f in findings if f.detector == "first_cause"]
    if not any(f.extra.get("first") and not f.direct for f in fc):
        return 0
    live = sorted((f for f in fc if f.direct and not f.extra.get("past")), key=lambda f: f.extra["order"])
    t0 = next((f.time for f in live if f.time is not None), None)
    for n, f in enumerate(live):
        lag = (f.time - t0).total_seconds() if f.time is not None and t0 is not None else None
        f.score = _direct_score(n, lag) * (1.0 if f.extra["ts_ok"] else INHERITED_TIME)
        f.extra["lag_s"] = lag
        if n == 0:
            f.extra["first"] = True
            f.why = "earliest" + f.why.removeprefix("a")
    return len(live)


SCHEDULER_PROGRAMS = ("slurmctld", "slurmd", "slurmstepd", "srun", "sbatch", "sacct", "scontrol", "pbs_server", "kubelet",
                      "kubectl", "kube-scheduler")


def first_symptom(con) -> list[Finding]:
    """The first rank to complain (weak; a fallback when no cause and no absence rule decides)."""
    rs = query(con, "first_symptom")
    out = []
    for i, r in enumerate(rs[:4]):
        net = r["kind"] in ("nccl_error_chain", "comm_abort")
        out.append(Finding(detector="first_symptom", kind="network_error" if net else "unknown",
                           score=0.15 if i == 0 else 0.05,
                           why=f"{'first' if i == 0 else 'a later'} rank/process to report a failure: {r['kind']} "
                               f"({(r['message'] or '')[:100]}) — a symptom, weak evidence of the culprit",
                           rank=r["rank"], local_rank=r["local_rank"], host=r["host"], pid=r["pid"], pod=r["pod"],
                           gpu=r["gpu"], time=r["ats"], evidence=[r["event_id"]], extra={"order": i}))
    return out


def step_cancels(con) -> list[Finding]:
    """A step/job cancelled by the scheduler with no reason given (`*** STEP 42929.0 ON cn109
    CANCELLED AT ... ***`): weak on its own (teardown after a failure looks the same), it decides
    only when nothing else does."""
    rs = rows(con, r"""
        SELECT event_id, ats, host, message,
               nullif(regexp_extract(message, '(?:STEP|JOB) \S+ ON (\S+) CANCELLED', 1), '') AS node,
               regexp_matches(message, '(?i)DUE TO|PREEMPT') AS has_reason
        FROM hot_events_or_aligned WHERE kind = 'step_cancelled'
        ORDER BY ats NULLS LAST, file, line LIMIT 20""".replace(
        "hot_events_or_aligned", "hot_events" if table_exists(con, "hot_events") else "aligned_events"))
    rs = [r for r in rs if not r["has_reason"] and r["node"]]
    if not rs:
        return []
    r = rs[0]
    return [Finding(detector="step_cancels", kind="cancelled", score=0.3,
                    why=f"the scheduler cancelled the step with no reason given ({(r['message'] or '').strip()[:100]})",
                    host=r["node"] or r["host"], time=r["ats"], evidence=[r["event_id"]])]


def outside_stops(con) -> list[Finding]:
    """The job was training when its launcher's agents were signalled to stop (torch's elastic agent:
    'Received 15 death signal, shutting down workers'): stopped from outside (scancel, preemption, a
    resubmit), not by a failure of its own, which would have stopped its progress first
    (survival.trained_to_the_end). Weak on its own: a failure's line before it decides."""
    from ..survival import trained_to_the_end
    if trained_to_the_end(con) != "stopped from outside":
        return []
    r = rows(con, f"""
        SELECT event_id, ats, host, message FROM {"hot_events" if table_exists(con, "hot_events") else "aligned_events"}
        WHERE kind = 'signal_received' AND ats IS NOT NULL ORDER BY ats, file, line LIMIT 1""")
    if not r:
        return []   # the scheduler's own cancel or time limit said so: first_cause has it
    r = r[0]
    return [Finding(detector="outside_stops", kind="cancelled", score=0.3,
                    why=f"the launcher was signalled to stop while the job was still training "
                        f"({(r['message'] or '').strip()[:100]}): stopped from outside (a user, preemption, a resubmit)",
                    time=r["ats"], evidence=[r["event_id"]])]
