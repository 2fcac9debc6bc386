"""The verdict: combine the detectors' findings into one root cause (design.md section 4).

1. identity + clock -> temp view aligned_events (ranktrace.correlate.clock.align);
2. every rule of ranktrace.correlate.detectors.RULES -> findings;
3. findings are completed from the identity table (host+pid -> rank, ...) and grouped per
   culprit (rank, else host, else the job); a culprit's kind comes from its most specific
   direct finding, else from absence evidence (half-dead node, named/behind/silent ranks);
4. the first direct cause on the aligned clock leads; when two culprits cannot be
   separated (close scores, or their order rests within the clock uncertainty) the
   confidence stays below 0.8 and both are listed;
5. `none` only with proof of a normal end (clean_end.py), `unknown` (with what is missing) when
   nothing decides.
"""

from __future__ import annotations

import datetime as dt
import re

import duckdb

from . import identity as ident
from .clean_end import coverage_caps, ended_normally, no_failure_verdict
from .attempts import find_attempts, scope
from .clock import align, freeze_aligned
from .detectors import Finding, run_all
from .detectors.base import SPECIFICITY, query
from .controlplane import apply as _controlplane
from .gang import gang as _gang
from .hostlist import compress_ranges
from .impact import absent_ranks, impact as _impact
from .choose import calibrated, features, load_weights, rank
from .naming import from_words as _from_words, review as _review_names, text_names as _text_names, who as _who
from .stranded import apply as _stranded
from .detectors.causes import rescore_after_demotions
from .detectors.network import uncorroborated_port_errors
from .survival import (OUTSIDE_STOP_FAILURES, complaints_survived_until, demote_stops_after_stall, demote_survived,
                       healthy_until, own_window_s, progress_spans, trained_to_the_end, window_s)
from .topology import topology as _topology
from .util import ensure_kind_catalog, iso, platforms, rows, short, sql_file, table_exists

JOB_LEVEL = {"time_limit", "cancelled", "rendezvous_timeout", "scheduling"}
NODE_LEVEL = {"node_failure"}
MAX_EVIDENCE = 10
# a verdict with no cause line of its own while ranks of the world have no line at all: a lead, not certain
ABSENT_RANKS_CAP = 0.6
# launchers that report one local worker's failure by its own identity (torchrun's agent 'failed (exitcode: N)
# local_rank: L (pid: P)', paddle's 'Container rank L status failed ... code N'): a traceback that names nobody
# is that worker's when it is the only one they saw fail
LAUNCHER_REPORTS = ("agent", "paddle")
# a later direct finding of the same culprit may explain the first one (the Xid behind a CUDA
# error, the OOM kill behind a SIGKILL); nothing else overrides the first cause's kind
_HW = ("gpu_fault", "oom", "gpu_oom", "node_failure")
EXPLAINS = {"exception": _HW + ("cuda_error", "crash"), "killed": _HW, "crash": _HW + ("cuda_error",),
            "cuda_error": ("gpu_fault",), "unknown": _HW + ("crash", "cuda_error", "killed", "hang", "exception"),
            "hang": ("gpu_fault", "node_failure"), "network_error": ("gpu_fault", "node_failure")}
MAX_CASCADE = 40
# a link error the process went on from (NCCL logs a port error and keeps its communicators) is
# superseded by the process's own later report of its death, which says what broke
SUPERSEDES = {"network_error": ("exception", "oom", "gpu_oom", "cuda_error")}


# ---------------------------------------------------------------- candidates

class Candidate:
    def __init__(self, key):
        self.key = key
        self.findings: list[Finding] = []

    @property
    def direct(self) -> list[Finding]:
        return [f for f in self.findings if f.direct]

    def field(self, name):
        for f in sorted(self.findings, key=lambda f: (-f.direct, -f.score)):
            v = getattr(f, name)
            if v is not None:
                return v
        return None

    @property
    def score(self) -> float:
        p = 1.0
        for f in self.findings:
            p *= 1.0 - min(f.score, 0.97)
        return 1.0 - p

    @property
    def time(self):
        ts = [f.time for f in self.direct if f.time is not None] or [f.time for f in self.findings if f.time is not None]
        return min(ts) if ts else None

    @property
    def time_written(self) -> bool:
        """Its first direct cause carries a time written in the line (not inherited)."""
        d = [f for f in self.direct if f.time is not None]
        if not d:
            return False
        first = min(d, key=lambda f: f.time)
        return first.extra.get("ts_ok", True) is not False

    @property
    def order_time(self):
        """When the culprit failed, for ordering culprits. A traceback has no time of its own (it
        inherits the previous line's); then the launcher's report of that worker's death, which
        has one, orders better (two tracebacks after one shared 'reloading' line look
        simultaneous; their workers' exit reports are seconds apart)."""
        if self.time_written or not self.direct:
            return self.time
        agent = [f.time for f in self.findings
                 if f.detector == "worker_exits" and f.extra.get("source") == "agent" and f.time is not None]
        return min(agent) if agent else self.time

    def kind(self, node_failed: set[str]) -> str:
        d = [f for f in self.direct if f.kind not in ("unknown", None)]
        if d:
            # the first direct finding, upgraded by a more specific one that explains it
            d.sort(key=lambda f: (f.time is None, f.time or dt.datetime.max, SPECIFICITY.get(f.kind, 99)))
            best = d[0].kind
            for f in d[1:]:
                if f.kind in EXPLAINS.get(best, ()) and SPECIFICITY.get(f.kind, 99) < SPECIFICITY.get(best, 99):
                    best = f.kind
                elif f.kind in SUPERSEDES.get(best, ()):
                    best = f.kind
            if best == "hang" and self.field("host") in node_failed:
                return "node_failure"   # a stall report (soft lockup) of a host that went quiet: the node froze
            return best
        host = self.field("host")
        if host in node_failed:
            return "node_failure"
        kinds = {f.kind for f in self.findings}
        dets = {f.detector for f in self.findings}
        if "hang" in kinds or "silent_ranks" in dets or any(f.extra.get("absent") for f in self.findings):
            return "hang"   # peers waited for it, or it went silent, and it wrote no error of its own
        exits = [f for f in self.findings if f.detector == "worker_exits" and f.extra.get("signal") == 15]
        if exits and dets & {"silent_ranks", "named_ranks", "watchdog"}:
            return "hang"   # alive until its own launcher SIGTERMed it, silent meanwhile
        others = [f.kind for f in self.findings if f.kind not in ("unknown", None)]
        return others[0] if others else "unknown"


def _complete(con, f: Finding) -> None:
    got = ident.lookup(con, host=f.host, pid=f.pid, rank=f.rank, local_rank=f.local_rank, pod=f.pod)
    for k in ("host", "pid", "rank", "local_rank"):
        if getattr(f, k) is None and got.get(k) is not None:
            setattr(f, k, got[k])
    if f.gpu is None and got.get("gpu") is not None:
        f.gpu = got["gpu"]
    if f.pod is None and got.get("pod") is not None:
        f.pod = got["pod"]


def _group(findings: list[Finding]) -> dict:
    cands: dict = {}
    for f in findings:
        if f.kind in JOB_LEVEL and not (f.kind == "scheduling" and f.pod):
            # the job failed as a whole: the line's own host/rank is a reporter, not the culprit
            if f.detector != "rendezvous":
                f.rank = f.local_rank = f.pid = None
                if f.kind == "rendezvous_timeout":
                    f.host = None   # the agent that gave up is not the node that never came
            key = ("job", None)
        else:
            key = f.key()
        cands.setdefault(key, Candidate(key)).findings.append(f)
    # host-only findings with one rank candidate on that host: same culprit
    for key in [k for k in cands if k[0] == "host"]:
        host = key[1]
        if any(f.kind in NODE_LEVEL for f in cands[key].findings):
            continue
        # (a rank its watchdog took down is a process of that host too: the host's report may be of its end)
        ranks = [c for k, c in cands.items() if k[0] == "rank" and c.field("host") == host
                 and (c.direct or any(f.extra.get("watchdog") for f in c.findings))]
        if len(ranks) != 1:
            # the one rank on that host that another source ties to the same failure kind
            # (sacct's MaxRSSTask for a step over its memory limit)
            kinds = {f.kind for f in cands[key].findings if f.direct}
            ranks = [c for k, c in cands.items() if k[0] == "rank" and c.field("host") == host
                     and any(f.kind in kinds for f in c.findings)]
        if len(ranks) == 1:
            ranks[0].findings.extend(cands.pop(key).findings)
    # findings that name nobody (a cgroup OOM line of the step) join the one candidate that has a
    # direct finding of the same kind
    anon = cands.get(("job", None))
    if anon:
        movable = [f for f in anon.findings if f.kind not in JOB_LEVEL]
        kinds = {f.kind for f in movable}
        same = [c for k, c in cands.items() if k != ("job", None) and any(f.direct and f.kind in kinds
                                                                          for f in c.findings)]
        if not same:   # a traceback without identity + the one worker its launcher saw fail
            same = [c for k, c in cands.items() if k != ("job", None) and any(
                f.detector == "worker_exits" and f.extra.get("source") in LAUNCHER_REPORTS and f.kind in kinds
                and f.extra.get("signal") != 15 for f in c.findings)]
        if movable and len(same) == 1:
            same[0].findings.extend(movable)
            anon.findings = [f for f in anon.findings if f.kind in JOB_LEVEL]
            if not anon.findings:
                del cands[("job", None)]
    return cands


# ---------------------------------------------------------------- evidence, cascade

def _event_rows(con, ids: list[int]) -> dict[int, dict]:
    """The lines of `ids` in scope. Evidence lines are hot lines nearly always: looked up among them
    first (resolved once per diagnosis: clock.freeze_aligned), then among every line (the identity and
    clock views over all of a store's lines: 0.1 CPU-s a call on a 15 M-line run) for the ids not found
    there. The same rows: hot_events is aligned_events' rows that pass a filter, each resolved as
    aligned_events resolves it."""
    if not ids:
        return {}
    cols = "event_id, file, line, ats, role, kind, message, raw, host, rank"
    out: dict[int, dict] = {}
    if table_exists(con, "hot_events"):
        out = {r["event_id"]: r for r in rows(con, f"SELECT {cols} FROM hot_events "
                                                   "WHERE event_id IN (SELECT unnest(?))", [list(ids)])}
    rest = [e for e in ids if e not in out]
    if rest:
        out.update({r["event_id"]: r for r in rows(con, f"SELECT {cols} FROM aligned_events "
                                                        "WHERE event_id IN (SELECT unnest(?))", [rest])})
    return out


def _cascade(con, t0, exclude_rank, exclude_host) -> list[dict]:
    q = """
        WITH s AS (
            SELECT event_id, ats, host, rank, kind, file, line, message FROM hot_events
            WHERE role = 'symptom' AND (CAST($t0 AS TIMESTAMP) IS NULL OR ats IS NULL
                                        OR ats >= CAST($t0 AS TIMESTAMP) - INTERVAL 2 SECOND)
        ), f AS (   -- first symptom per (host, rank): an aggregate, cheap on millions of lines
            SELECT arg_min(event_id, struct_pack(t := coalesce(ats, TIMESTAMP '9999-12-31'), f := file, l := line))
                   AS event_id
            FROM s GROUP BY host, rank
        )
        SELECT s.* FROM s JOIN f USING (event_id) ORDER BY ats NULLS LAST, host, rank, file, line LIMIT $n
    """
    out = []
    for r in rows(con, q, {"t0": t0, "n": MAX_CASCADE}):
        out.append({"time": iso(r["ats"]), "host": r["host"], "rank": r["rank"], "kind": r["kind"],
                    "file": r["file"], "line": r["line"], "event_id": r["event_id"], "text": short(r["message"], 160)})
    return out


# ---------------------------------------------------------------- next steps

# What a step needs to be worth suggesting: a command of that scheduler.
STEP_PLATFORM = (("slurm", re.compile(r"\b(?:sacct|seff|scontrol|sinfo|srun)\b")), ("k8s", re.compile(r"\bkubectl\b")))


def for_platforms(steps: list[str], plats: set[str]) -> list[str]:
    """The steps whose commands the incident's platforms have (no `sacct` for a
    torchrun run on bare hosts, no `kubectl` for a Slurm job)."""
    return [s for s in steps if all(p in plats or not rx.search(s) for p, rx in STEP_PLATFORM)]


def next_steps(kind: str, v: dict, job_id: str | None, extra: dict, plats: set[str] | None = None) -> list[str]:
    """What to run next; `plats` (util.platforms) leaves out the schedulers the
    store does not show (None: keep every step)."""
    steps = _next_steps(kind, v, job_id, extra)
    return steps if plats is None else for_platforms(steps, plats)


def _next_steps(kind: str, v: dict, job_id: str | None, extra: dict) -> list[str]:
    host, pid, pod, rank = v.get("host") or "NODE", v.get("pid"), v.get("pod"), v.get("rank")
    job = job_id or "JOB"
    steps: list[str] = []
    if kind == "oom":
        if pod:
            steps.append(f"kubectl describe pod {pod}   # Last State: OOMKilled, limits")
        steps += [f"sacct -j {job} --format=JobID,State,ExitCode,MaxRSS,ReqMem", f"seff {job}",
                  f"ssh {host} 'dmesg -T | grep -iE \"oom|killed process\"'"]
    elif kind == "gpu_oom":
        steps += [f"ssh {host} nvidia-smi", "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  # or a smaller batch"]
    elif kind == "gpu_fault":
        reason = f"Xid {extra['xid']}" if extra.get("xid") else "GPU fault"
        steps += [f"scontrol update NodeName={host} State=DRAIN Reason=\"{reason}\"",
                  f"ssh {host} nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER"]
        if extra.get("action"):
            steps.append(f"# Xid catalogue: {extra['action']}")
    elif kind == "cuda_error":
        steps += [f"ssh {host} 'dmesg -T | grep -i xid'   # a GPU fault behind the CUDA error?",
                  "CUDA_LAUNCH_BLOCKING=1  # rerun to get the failing kernel"]
    elif kind == "hang":
        steps += [f"ssh {host} py-spy dump --pid {pid or 'PID'}   # where rank {rank if rank is not None else '?'} is stuck",
                  "TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_DISTRIBUTED_DEBUG=DETAIL  # flight recorder on the next run"]
    elif kind == "node_failure":
        steps += [f"ssh {host} 'uptime; journalctl -k -b -1 | tail -50'   # did it reboot, and why",
                  f"scontrol show node {host}", "sinfo -R", f"kubectl describe node {host}"]
    elif kind == "killed":
        steps += [f"ssh {host} 'dmesg -T | grep -iE \"oom|killed process\"'   # OOM killer or a person?",
                  f"sacct -j {job} --format=JobID,State,ExitCode,MaxRSS"]
    elif kind == "crash":
        steps += [f"ssh {host} coredumpctl list  # or the core file of pid {pid or 'PID'}",
                  "python -X faulthandler ...  # Python stack at the crash"]
    elif kind == "rendezvous_timeout":
        miss = ", ".join(extra.get("missing") or []) or "the missing node"
        steps += [f"ssh {miss} pgrep -af 'torchrun|torch.distributed'   # did {miss} start its launcher?",
                  f"srun -w {miss} hostname   # does Slurm reach {miss}?",
                  "nc -z RDZV_HOST RDZV_PORT   # is the rendezvous store reachable?"]
    elif kind == "network_error":
        steps += [f"ssh {host} ibstat; ssh {host} ibv_devinfo", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET  # rerun"]
    elif kind == "desync":
        steps += ["TORCH_DISTRIBUTED_DEBUG=DETAIL  # rerun: names the mismatched collective",
                  "look for rank-dependent code paths around the collective (if rank == 0: ...)"]
    elif kind == "time_limit":
        steps += [f"sacct -j {job} --format=JobID,Elapsed,Timelimit,State", "raise --time or checkpoint more often"]
    elif kind == "cancelled":
        steps += [f"sacct -j {job} --format=JobID,State,ExitCode,Reason", f"scontrol show job {job}",
                  "grep -i 'kill\\|preempt' slurmctld.log   # who cancelled"]
    elif kind == "scheduling":
        steps += [f"kubectl describe pod {pod or 'POD'}", "kubectl get events --sort-by=.lastTimestamp"]
    elif kind == "exception":
        steps += [f"ranktrace sql \"SELECT file, line, message FROM events WHERE rank = {rank if rank is not None else 'N'} "
                  "AND role = 'cause'\"   # the full traceback"]
    elif kind == "unknown":
        steps += ["ranktrace sql queries/canned/last_words_per_rank.sql   # who stopped first",
                  "collect the missing logs named under 'missing' and rerun diagnose"]
    return steps


# ---------------------------------------------------------------- main entry

# temp tables the first attempt's diagnosis makes and the others read (the job id, network.ib_peers'
# addresses and port recoveries, identity.world_comms)
ONCE_PER_DIAGNOSIS = ("any_job", "oob_hosts", "port_recoveries", "nccl_world")


def _failure_seen(con, findings: list[Finding]) -> bool:
    """A failure the job did not survive: a finding, or a failure line, after the job's last progress
    (less the survival window) or with no progress to compare. Lines and findings before it were
    survived: the job made steps after them (an attempt that trains on through noise has not failed)."""
    healthy = healthy_until(con)
    complaints = complaints_survived_until(con)   # a complaint (symptom line) may be survived sooner
    # when the logs end while every rank trains, what was judged context (a port that blinked, another
    # host's link) or a complaint is not what stopped the job: nothing stopped it
    training = trained_to_the_end(con) == "the logs end"
    if healthy is None and training:
        # no progress line has a time, and untimed progress goes on to the end of the logs with nothing
        # coming down after it: the job trained past every line, as far as the logs can tell
        healthy = complaints
    elif healthy is None and findings:
        return True
    past = [f for f in findings if f.extra.get("survived") or (training and not f.direct)]
    gone = {id(f) for f in past}
    if healthy is not None and any(
            (f.direct or f.time is None or f.time >= (complaints if f.detector == "first_symptom" else healthy))
            for f in findings if id(f) not in gone):
        return True
    # lines no finding was made of; a group whose last line a finding judged past is not one
    survived = [e for f in past for e in f.evidence]
    return con.execute(FAILURE_LINES, {"healthy": healthy, "complaints": complaints,
                                       "survived": survived}).fetchone()[0] > 0


# failure lines written after the time up to which the job trained on past them (for a complaint, a
# symptom line: every rank did, when the logs end while it trains)
FAILURE_LINES = """
    WITH g AS (
        SELECT last_ats, last_event_id,
               CASE WHEN role = 'symptom' THEN CAST($complaints AS TIMESTAMP) ELSE CAST($healthy AS TIMESTAMP) END AS until
        FROM aligned_groups
        WHERE role IN ('cause', 'symptom') OR (severity IN ('error', 'critical') AND role <> 'info'))
    SELECT count(*) FROM g
    WHERE (until IS NULL OR last_ats IS NULL OR last_ats >= until)
      AND last_event_id NOT IN (SELECT unnest($survived::BIGINT[]))
"""


def _outside_stop_only(con, findings: list[Finding]) -> list[Finding] | None:
    """The findings of the stop, when the job trained until it was stopped from outside (a cancel, a
    preemption, a time limit, its agents' death signal: survival.trained_to_the_end) and nothing it
    did not survive failed before the stop: the lines after it are its teardown. None otherwise."""
    if trained_to_the_end(con) != "stopped from outside":
        return None
    stops = [f for f in findings if f.kind in OUTSIDE_STOP_FAILURES]   # the scheduler's untimed records too
    if not any(f.time is not None for f in stops):
        return None
    first = min(f.time for f in stops if f.time is not None)
    if any(f.direct and not f.extra.get("survived") and f.kind not in OUTSIDE_STOP_FAILURES
           and (f.time is None or f.time < first) for f in findings):
        return None
    return stops


def diagnose(con: duckdb.DuckDBPyConnection, *, offsets: dict[str, float] | None = None) -> dict:
    """The verdict JSON of design.md section 4 for the store behind `con` (read-only is fine:
    only temp tables/views are created). Extra keys: missing, next_steps, identity.

    The run is cut into attempts first (ranktrace.correlate.attempts); each is diagnosed on its
    own lines (survival, silence and sequence numbers mean something only within one attempt);
    the top-level verdict is the last failed attempt's (incidents.py)."""
    from .incidents import assemble, lead
    ensure_kind_catalog(con)
    for t in ONCE_PER_DIAGNOSIS:   # what the attempts share, made again for this diagnosis
        con.execute(f"DROP TABLE IF EXISTS temp.{t}")
    clock = align(con, offsets)
    found = find_attempts(con)
    freeze_aligned(con)   # the attempts' detectors read the hot lines and groups resolved once
    detected_lines(con)
    if len(found) == 1:
        _scope(con, None)
        doc = diagnose_scope(con, clock)
        scope(con, None)
        return assemble(con, found, [doc])
    docs = []
    for a in found:
        _scope(con, a.id)
        docs.append(diagnose_scope(con, clock))
    # the lines without a time (snapshots taken after the fact) join the attempt whose verdict leads
    top = lead(found, docs)
    if con.execute("SELECT count(*) FROM aligned_groups_all WHERE attempt = 0").fetchone()[0]:
        _scope(con, found[top].id, timeless=True)
        docs[top] = diagnose_scope(con, clock)
    scope(con, None)   # (every hot line in view hot_events again)
    return assemble(con, found, docs)


# The hot lines that only the attempts' markers read (hot_events.sql's term of the kinds queries/attempts/
# markers.sql reads), which the attempts read before the scopes (find_attempts): left out of what an attempt
# scope's detectors read. A scheduler retells its launches: the 1 GB corpus holds 289,600 slurmd `launch task`
# lines among its 376k hot lines, and each of the ~30 queries of each scope scanned them again (its four
# attempt scopes, same moment: 2.9 -> 1.5 CPU-s; this table 0.3). Every other reader of hot_events filters on
# a term of hot_events.sql of its own (the file's rule: each term is one detector's WHERE), so each finds the
# same rows; the lines still pass when another term passes them (the 86,600 `sched: Allocate ... NodeList=`
# lines that rendezvous.sql reads). (tests/correlate/test_hot_events.py: every detector the same rows in both.)
MARKERS_TERM = "OR kind IN ('worker_start', 'group_restart', 'job_requeue', 'step_start', 'job_state')"


def detected_lines(con: duckdb.DuckDBPyConnection) -> None:
    """Temp table hot_detect: the rows of view hot_events_all (frozen) that pass hot_events.sql's filter
    without its markers' term (MARKERS_TERM); _scope points view hot_events at them."""
    con.execute("DROP TABLE IF EXISTS temp.hot_detect")
    if not table_exists(con, "hot_events_all"):
        return
    where = sql_file("align/hot_events.sql").split("\nWHERE ", 1)[1]
    if where.count(MARKERS_TERM) != 1:
        raise RuntimeError("queries/align/hot_events.sql: its markers' term is not verdict.MARKERS_TERM")
    con.execute("CREATE TEMP TABLE hot_detect AS SELECT * FROM hot_events_all WHERE "
                + where.replace(MARKERS_TERM, ""))


def _scope(con: duckdb.DuckDBPyConnection, attempt: int | None, timeless: bool = False) -> None:
    """attempts.scope, view hot_events then over the lines the detectors read (hot_detect)."""
    scope(con, attempt, timeless)
    if table_exists(con, "hot_detect"):
        where = "" if attempt is None else f" WHERE attempt IN ({int(attempt)}{', 0' if timeless else ''})"
        con.execute(f"CREATE OR REPLACE TEMP VIEW hot_events AS SELECT * FROM hot_detect{where}")


def diagnose_scope(con: duckdb.DuckDBPyConnection, clock: list[dict]) -> dict:
    """The verdict document of the lines in scope (one attempt, or the whole store)."""
    findings = run_all(con)
    for f in findings:
        _complete(con, f)
    demote_survived(con, findings)   # warnings followed by healthy progress are context (survival.py)
    # once the job assembled, a rendezvous error is not the cause: after it, teardown; before it, a
    # retry the rendezvous got past
    from .detectors.rendezvous import job_started
    started = job_started(con)
    if started is not None:
        for f in findings:
            if f.kind == "rendezvous_timeout" and f.detector == "first_cause" and f.time is not None:
                f.direct, f.score = False, 0.05
                f.why += (" (after the job had started: teardown)" if f.time > started else
                          " (the job assembled after it: a retry the rendezvous got past)")
    uncorroborated_port_errors(con, findings)   # a port error no failed work request followed (network.py)
    demote_stops_after_stall(con, findings)   # a cancel of a job that had hung is its answer (survival.py)
    rescore_after_demotions(findings)   # the first cause line that stands is the earliest (causes.py)
    cands = _group(_outside_stop_only(con, findings) or findings)
    node_failed = {f.host for f in findings if f.kind == "node_failure" and f.host}
    # a job that ended normally everywhere did not fail: what it logged on the way was survived, unless
    # a failure line with a time of its own says otherwise (an end told after a missed restart)
    failure = _failure_seen(con, findings) and (
        any(f.direct and f.extra.get("ts_ok") is not False for f in findings) or not ended_normally(con))
    unc = {c["host"]: c["uncertainty_s"] for c in clock}
    n_events = con.execute("SELECT coalesce(sum(n), 0) FROM aligned_groups").fetchone()[0]

    empty = {"kind": "none", "rank": None, "local_rank": None, "host": None, "pod": None, "pid": None,
             "gpu": None, "time": None, "confidence": 0.0, "summary": ""}
    missing: list[str] = []
    if not failure:
        # `none` needs proof of a normal end (correlate/clean_end.py)
        v, evidence, missing = no_failure_verdict(con, empty, n_events)
        # nothing failed: nothing was lost either (impact counts from the first failure)
        return {"verdict": v, "hypotheses": [], "evidence": evidence, "cascade": [], "clock": clock,
                "missing": missing,
                "next_steps": next_steps(v["kind"], v, None, {}, platforms(con)) if v["kind"] != "none" else [],
                "impact": None, "gang": None, "control_plane": None, "topology": None,
                "stranded": None, "failure_seen": False}

    # one score per candidate (choose.py): the most probable is the culprit, its probability the confidence
    cand_list = list(cands.values())
    spans = progress_spans(con)
    lanes = [((r["host"], r["rank"]), r["first_ats"])
             for r in query(con, "symptom_lanes", {"window_s": window_s(spans), "own_window_s": own_window_s(spans)})]
    scored = rank(cand_list, features(cand_list, node_failed, unc, lanes), load_weights())
    best: Candidate | None = scored[0].candidate if scored else None
    hyps = []
    for sc in scored:
        c = sc.candidate
        hyps.append({"kind": c.kind(node_failed), "rank": c.field("rank"), "host": c.field("host"),
                     "score": round(sc.probability, 2), "evidence": round(c.score, 2),
                     "features": {k: round(x, 3) for k, x in sc.features.items()},
                     "why": "; ".join(dict.fromkeys(f.why for f in sorted(c.findings, key=lambda f: -f.score)))[:600],
                     "_c": c})
    if best is None or best.score < 0.25:
        v = dict(empty, kind="unknown", confidence=round(min(best.score, 0.3), 2) if best else 0.0,
                 summary="a failure was seen but no rule separates a root cause")
        if best is not None:   # name the weak lead, with its low confidence
            if round(best.score, 9) >= 0.2:   # (one finding of 0.2 scores 1 - 0.8 = 0.19999...)
                v["kind"] = best.kind(node_failed)
            for k in ("rank", "local_rank", "host", "pod", "pid", "gpu"):
                v[k] = best.field(k)
            v["time"] = iso(best.time)
            v["summary"] += f"; weak lead: {_who(v)} ({best.findings[0].why[:160]})"
        missing.append("a cause line (traceback, exit status, scheduler record) from the rank that failed first")
        best_kind = "unknown"
    else:
        best_kind = best.kind(node_failed)
        conf = min(calibrated(scored[0].probability, best_kind), 0.97)
        second = next((h for h in hyps if h["_c"] is not best), None)
        if second:
            sc = second["_c"]
            if scored[1].probability >= scored[0].probability / 2:
                missing.append(f"evidence separating {_who({'rank': best.field('rank'), 'host': best.field('host')})}"
                               f" from {_who({'rank': sc.field('rank'), 'host': sc.field('host')})}")
            if best.direct and sc.direct and not (best.time_written and sc.time_written):
                conf = min(conf, 0.75)
                missing.append("timestamps on the tracebacks: the order of the first two failures rests on "
                               "inherited times and the launchers' exit reports")
            # ordering that rests on the clock estimate
            if best.direct and sc.direct and best.time and sc.time:
                gap = abs((sc.time - best.time).total_seconds())
                u = max((unc.get(best.field("host")) or 0.0), (unc.get(sc.field("host")) or 0.0))
                if u and gap <= u:
                    conf = min(conf, 0.55)
                    missing.append(f"a better clock alignment: the first two causes are {gap:.2f}s apart, "
                                   f"within the clock uncertainty {u:.2f}s")
        if best_kind == "unknown":
            conf = min(conf, 0.5)
            missing.append("the culprit's own log (it wrote no cause line): kernel log / scheduler record / "
                           "its stdout+stderr")
        if not best.direct:
            conf = min(conf, 0.75)
        for cap, what in coverage_caps(con, bool(best.direct), best.time):
            if conf > cap:
                conf = cap
                missing.append(what)
        if any(f.extra.get("inferred") for f in best.findings):
            conf = min(conf, 0.7)
            missing.append("the expected node list (Slurm node list / hostfile / pod list): the missing node's "
                           "name is inferred from the host name sequence")
        v = {"kind": best_kind, "rank": best.field("rank"), "local_rank": best.field("local_rank"),
             "host": best.field("host"), "pod": best.field("pod"), "pid": best.field("pid"), "gpu": best.field("gpu"),
             "time": iso(best.time), "confidence": round(conf, 2), "summary": ""}
        if best_kind in ("hang", "node_failure", "killed"):
            # the culprit went quiet before anyone reported it: its last line is the better time
            quiet = [f.extra.get("last_ats") or f.time for f in best.findings
                     if f.detector in ("silent_ranks", "half_dead_nodes") and (f.extra.get("last_ats") or f.time)]
            if quiet and best_kind != "killed":
                v["time"] = iso(min(quiet))
        rank_level = best_kind in ("exception", "crash", "killed", "oom", "gpu_oom", "cuda_error", "hang")
        if rank_level and v["rank"] is None and v["pod"] is None:
            # the job's ranks, not only those the logs tie to that host: the tie may be what is missing;
            # a pid alone (the kernel's OOM report) names the process, not which rank it ran
            n_ranks = con.execute("SELECT count(DISTINCT rank) FROM aligned_groups WHERE rank IS NOT NULL").fetchone()[0]
            if n_ranks > 1:
                v["confidence"] = min(v["confidence"], 0.7)
                missing.append(f"which rank pid {v['pid']} ran: no line ties the pid to a rank" if v["pid"] is not None
                               else "which rank it was: the logs name only the node/step "
                                    "(sacct MaxRSS per task, the kernel log's oom-kill line with the pid)")
        if best_kind in JOB_LEVEL:
            for k in ("rank", "local_rank", "pid", "gpu"):
                v[k] = None
            v["host"] = best.field("host")   # the node named (missing node; where the limit hit)
        if best_kind in NODE_LEVEL and best.key[0] == "host":
            v["rank"] = v["local_rank"] = v["pid"] = None
            # a process the node's own failure line says died with it (a Ray actor the GCS destroyed with its
            # node): named as the line names it, not through the identity joins
            died = {f.pid for f in best.findings if f.detector == "node_events" and f.pid is not None}
            if len(died) == 1:
                v["pid"] = died.pop()

    # ranks of the job's world with no line in the input (a dead node's logs not collected): the culprit may
    # be among them, so a verdict that rests on no cause line of its own is no better than a lead
    gone = absent_ranks(con) if best is not None else None
    if gone:
        on = f" (on {gone['host']}, the rendezvous master: rank 0's node)" if gone["host"] else ""
        missing.append(f"the logs of rank(s) {compress_ranges(gone['missing'])}{on}: the job's world has "
                       f"{gone['world']} ranks and the input has lines of {gone['seen']}; the culprit may be among them")
        if not best.direct:
            v["confidence"] = min(v["confidence"], ABSENT_RANKS_CAP)

    # whom the text names (a name cut off is none; a verdict naming nobody is capped): correlate/naming.py
    # (a scheduler's act may rest on a finding that is no direct cause, srun's cancel banner: its lines name the job)
    said = (best.direct or (best.findings if v.get("kind") in JOB_LEVEL else [])) if best else []
    if best is not None and best.direct:
        # a column still empty: what the words of the culprit's own cause lines name (naming.py)
        _from_words(con, v, [e for f in best.direct for e in f.evidence], missing)
    if best is not None:
        # a column still empty: the one value the whole text names (a paste from one machine: naming.py)
        _text_names(con, v, missing)
    who_words = _review_names(con, v, [e for f in said for e in f.evidence], missing)

    # evidence
    ev_ids: list[int] = []
    roles: dict[int, str] = {}
    if best is not None:
        for f in sorted(best.findings, key=lambda f: (-f.direct, -f.score)):
            for e in f.evidence:
                if e not in ev_ids:
                    ev_ids.append(e)
                    roles[e] = "cause" if f.direct else "support"
    cascade = _cascade(con, best.time if best else None, v.get("rank"), v.get("host"))
    for c in cascade[:3]:
        if c["event_id"] not in ev_ids:
            ev_ids.append(c["event_id"])
            roles[c["event_id"]] = "symptom"
    for h in hyps[1:3]:
        for f in h["_c"].findings[:1]:
            for e in f.evidence[:1]:
                if e not in ev_ids:
                    ev_ids.append(e)
                    roles[e] = "alternative"
    evr = _event_rows(con, ev_ids[: MAX_EVIDENCE * 2])
    evidence = []
    seen_text = set()
    for e in ev_ids:
        r = evr.get(e)
        if not r:
            continue
        text = short(r["message"] or r["raw"], 240)
        if (text, roles[e]) in seen_text:
            continue   # the same traceback in the tee'd node log and the --log-dir file
        seen_text.add((text, roles[e]))
        evidence.append({"file": r["file"], "line": r["line"], "time": iso(r["ats"]),
                         "role": r["role"] if roles[e] in ("cause", "symptom") else roles[e], "text": text})
        if len(evidence) >= MAX_EVIDENCE:
            break

    # summary
    n_casc = len({(c["host"], c["rank"]) for c in cascade})
    if v["kind"] != "unknown" or best is not None:
        lead = next((f for f in sorted(best.findings, key=lambda f: (-f.direct, -f.score))), None) if best else None
        what = lead.why if lead else ""
        v["summary"] = (f"{v['kind']}: {who_words}" + (f" at {v['time']}" if v["time"] else "")
                        + (f" — {what}" if what else "")
                        + (f"; {n_casc} other process(es) then failed (cascade)" if n_casc else ""))[:400]
    extra = next((f.extra for f in (best.findings if best else []) if f.detector == "xid"), {})
    extra = dict(extra)
    extra["missing"] = next((f.extra.get("missing") for f in (best.findings if best else [])
                             if f.extra.get("missing")), None)
    # the same for every attempt: read once per diagnosis (a scan of every line's job id)
    con.execute("CREATE TEMP TABLE IF NOT EXISTS any_job AS "
                "SELECT any_value(job_id) AS job_id FROM events WHERE job_id IS NOT NULL")
    job_id = con.execute("SELECT job_id FROM any_job").fetchone()[0]
    for h in hyps:
        h.pop("_c")
    doc = {"verdict": v, "hypotheses": hyps[:8], "evidence": evidence,
           "cascade": [{k: c[k] for k in ("time", "host", "rank", "kind", "file", "line")} for c in cascade],
           "clock": clock, "missing": missing, "next_steps": next_steps(v["kind"], v, job_id, extra, platforms(con))}
    _controlplane(con, doc)   # may re-attribute a NotReady node to a saturated control plane
    doc.update(impact=_impact(con, v), gang=_gang(con, v))
    doc["topology"] = _topology(con, doc)
    _stranded(con, doc)   # may name the pod that was never placed behind a rendezvous timeout
    doc["failure_seen"] = True
    return doc
