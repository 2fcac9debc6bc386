"""`none` needs proof: the verdict when no cause or symptom was seen (issue 13).

A store with no failure line is not yet a clean run: the excerpt may stop before the failure, or
its failure lines may be in a layout no format reads. `none` is given only with positive evidence
of a normal end (queries/detect/clean_end.sql: worker group SUCCEEDED, COMPLETED, exit code 0,
Succeeded); otherwise `unknown` at low confidence, saying what is missing."""

from __future__ import annotations

import re

from .detectors.base import query
from .util import iso, rows, short

# Lines no rule classified (or classified as lifecycle/info) that still read like failures: an
# input with error lines, abnormal exits, restarts or kills never gets `none`.
_FAILURE_TEXT = (r"Traceback \(most recent|[A-Za-z]Error:|Exception:|\bFATAL\b|\bKilled\b|\berror: |"
                 r"(?i:timed out|segmentation fault|out of memory|watchdog caught|\baborted\b|\bOOMKilled\b|"
                 r"\bEvicted\b|CrashLoopBackOff|Back-off restarting|\bBackOff\b|FailedCreatePodSandBox|"
                 r"FailedScheduling|NodeNotReady|fallen off the bus|NCCL WARN|\bSIGKILL\b|\bSIGTERM\b|\bSIGABRT\b|"
                 r"Caught signal|exit(?:ed)? (?:with )?(?:exit )?(?:code|status) [1-9]|exitcode\s*[:=]\s*-?[1-9]|"
                 r"will restart worker group|restarting (?:the )?workers?\b|\bXid\b|\bnot responding\b|"
                 r"unknown error)|"
                 # absl::Status::ToString's code name (StatusCodeToString) before its message: XLA / JAX / TF
                 r"\b(?:UNAVAILABLE|DEADLINE_EXCEEDED|INTERNAL|RESOURCE_EXHAUSTED|DATA_LOSS|ABORTED): ")


def failure_like(con, limit: int = 5) -> list[dict]:
    """Failure-reading lines that no rule classified (a rule that calls a line lifecycle or info, such
    as c10d's 'uv_loop_close failed' at shutdown, is trusted)."""
    return rows(con, """
        SELECT file, line, ats, host, rank, pid, pod, message FROM aligned_events
        WHERE (kind IS NULL OR kind = 'daemon_error')
          AND regexp_matches(message, ?)
        ORDER BY ats NULLS LAST, file, line LIMIT ?""", [_FAILURE_TEXT, limit])


def clean_ends(con) -> list[dict]:
    """The lines in scope that prove a normal end (queries/detect/clean_end.sql): over hot_events, which
    holds them (a running attempt's end was looked for in every line of it), when diagnose made it."""
    return query(con, "clean_end")


def rank_hosts(con) -> set[str]:
    """The hosts in scope that ran ranks."""
    return {h for (h,) in con.execute("SELECT DISTINCT host FROM aligned_groups WHERE host IS NOT NULL "
                                      "AND rank IS NOT NULL").fetchall()}


# the lines a launcher or framework writes for a normal end (classified, not words in a message: "last
# completed NCCL work" is no end), and a scheduler's end of a step that says it exited 0 (a step_end
# such as slurmstepd's "done with job" or slurmctld's "JobId=N done" follows a failure too)
END_KINDS = ("worker_group_done", "training_done")
STEP_SUCCESS = re.compile(r"WEXITSTATUS 0\b|exit(?:ed)? with (?:exit )?code 0\b|job_rc = 0\b|\bCOMPLETED\b")


def ended_normally(con) -> list[dict]:
    """The lines that say the whole job in scope ended normally (the scheduler's successful end of it,
    or a launcher's or framework's end from every host that ran ranks: each agent's worker group
    SUCCEEDED), else []. A job that ended so did not fail, whatever it warned about on the way."""
    ends = [r for r in clean_ends(con) if r["kind"] in END_KINDS
            or (r["kind"] == "step_end" and STEP_SUCCESS.search(r["message"] or ""))]
    if any(r["host"] is None and r["kind"] == "step_end" for r in ends):
        return ends
    hosts = rank_hosts(con)
    return ends if hosts and hosts <= {r["host"] for r in ends if r["host"]} else []


def no_failure_verdict(con, empty: dict, n_events: int) -> tuple[dict, list[dict], list[str]]:
    """(verdict, evidence, missing) for a store where no detector found anything."""
    missing: list[str] = []
    if not n_events:
        return dict(empty, kind="unknown", summary="the store holds no events"), [], ["logs: the store is empty"]
    unread = failure_like(con)
    if unread:
        v = dict(empty, kind="unknown", confidence=0.2,
                 summary=f"failure-like lines that no rule ties to the job (e.g. {short(unread[0]['message'], 120)}); "
                         "root cause not established")
        missing.append("a log format or rule for these lines (ranktrace formats check FILE shows what is unclaimed)")
        # whom their own identities name: the one process they agree on (naming.one_identity)
        from .naming import one_identity, put_words, said_words, text_names
        v.update(one_identity(unread, ("host", "rank", "pid", "pod")))
        # what their words name, for a column their own identity left empty (naming.words_named: one
        # value across the lines, or none)
        said = put_words(v, [r["message"] or "" for r in unread], tuple(k for k in ("rank", "pid", "host", "gpu")
                                                                         if v.get(k) in (None, "")))
        if said:
            missing.append(f"the failed process's own line in a format ranktrace knows: {said_words(said)} read "
                           "from the words of these lines")
        # a column still empty: the one value the whole text names (naming.text_names)
        text_names(con, v, missing)
        ev = [{"file": r["file"], "line": r["line"], "time": iso(r["ats"]), "role": "unclassified",
               "text": short(r["message"], 240)} for r in unread]
        return v, ev, missing
    ends = clean_ends(con)
    if not ends:
        v = dict(empty, kind="unknown", confidence=0.3,
                 summary="no failure line, but no line shows a normal end either (no worker group SUCCEEDED, "
                         "COMPLETED, exit code 0 or Succeeded): the logs may stop before the job ended")
        missing.append("the end of the job: the launcher's or scheduler's final lines (torchrun agent, sacct/"
                       "scontrol state, kubectl describe) or every rank's last lines")
        return v, [], missing
    hosts = rank_hosts(con)
    ended = {r["host"] for r in ends if r["host"]}
    conf = 0.85
    if hosts and ended and not hosts <= ended and not any(r["host"] is None for r in ends):
        conf = 0.6
        missing.append("a normal end from every node: no end line from " + ", ".join(sorted(hosts - ended)[:8]))
    ev = [{"file": r["file"], "line": r["line"], "time": iso(r["ats"]), "role": "lifecycle",
           "text": short(r["message"], 240)} for r in ends[:3]]
    v = dict(empty, confidence=conf, summary=f"no failure found; the job ended normally ({short(ends[0]['message'], 120)})")
    return v, ev, missing


def coverage_caps(con, direct: bool, t_cause=None) -> list[tuple[float, str]]:
    """How much of the incident the input covers, as (confidence cap, what is missing) pairs: an
    excerpt with no times, one that starts after the first error, or one host's lines of a
    multi-host job cannot carry a confident verdict that rests on order or absence."""
    n, timed, hosts, ranks, first_role, first_ts = con.execute("""
        SELECT coalesce(sum(n), 0), coalesce(sum(n) FILTER (WHERE first_ats IS NOT NULL), 0),
               count(DISTINCT host), count(DISTINCT rank),
               arg_min(role, struct_pack(t := first_ats, f := file, l := first_line)) FILTER (WHERE first_ats IS NOT NULL),
               min(first_ats)
        FROM aligned_groups""").fetchone()   # groups of lines: queries/align/event_groups.sql
    caps: list[tuple[float, str]] = []
    if n and not timed:
        caps.append((0.6, "times: no line carries a time, so the order of failures is only the order of the lines"))
    if not direct and first_role in ("cause", "symptom"):
        caps.append((0.5, "the start of the incident: the excerpt starts after the first error"))
    elif direct and first_role == "symptom" and t_cause is not None and first_ts is not None and first_ts < t_cause:
        # the first line is already a complaint about someone else: the cause line may itself be a consequence,
        # or the real first failure is before the excerpt
        caps.append((0.7, "the start of the incident: the excerpt starts with a symptom, before the cause line"))
    if not direct and hosts <= 1 and ranks > 1:
        caps.append((0.6, "the other hosts' logs: only one host's lines, the culprit may be elsewhere"))
    return caps
