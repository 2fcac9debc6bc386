"""Warnings the job survived are context, not causes (issue 13: noise in long runs).

Long runs carry warnings they survive: IB port flaps, retried socket and store connections, NCCL WARNs, a
slow rank. A cause-role line is the root cause only if progress stopped after it (or the cascade follows
it, which it does when progress stopped). So a finding whose own scope kept making progress well after
it, its rank's progress for a rank, the progress of its host's ranks for a host-only line, the job's for a
line naming nobody, is demoted: not direct, a small score, and says why.

Without progress lines the cascade decides: a real failure is followed by the job coming down (watchdog
timeouts, aborts, the launcher's teardown) within CASCADE_WINDOW_S; a cause line that nothing of the kind
follows, while a later cause line is followed by it, was survived. With neither, nothing is demoted."""

from __future__ import annotations

import datetime as dt
import statistics
import weakref

from .detectors.base import NEXT_TIMED_ATS, Finding, query

MIN_WINDOW_S = 120.0     # progress this long after a line, at least, before it counts as survived
STEPS = 5                # ... and at least this many of the job's typical step intervals
CASCADE_WINDOW_S = 1200.0   # a collective timeout (default 10 min) and the teardown after it fit in this
CASCADE_KINDS = ("collective_timeout", "watchdog_abort", "sigterm_sent", "signal_received", "worker_failed",
                 "failure_summary", "job_exit", "step_cancelled", "comm_abort")


# What this module read in a connection's current scope (the lines of one attempt): the detectors of an
# attempt ask healthy_until and training_stop again and again (21 times an attempt on a long run, each a
# read of the groups). attempts.scope starts a new memo whenever it points the views at other lines; a
# connection never scoped (views made by hand) has none and reads every time. Per connection, weakly:
# nothing outlives the connection or leaks into another one.
_SCOPED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def new_scope(con) -> None:
    """The views now show other lines (attempts.scope): forget what was read through them."""
    _SCOPED[con] = {}


def _memo(con, key: str, read):
    memo = _SCOPED.get(con)
    if memo is None:
        return read()
    if key not in memo:
        memo[key] = read()
    return memo[key]


def _spans(con) -> list[dict]:
    return _memo(con, "spans", lambda: query(con, "progress_spans"))


def progress_spans(con) -> list[dict]:
    """queries/detect/progress_spans.sql's rows in the current scope (read once per scope; do not modify)."""
    return _spans(con)


def step_s(spans: list[dict]) -> float | None:
    """The job's typical interval between two progress lines of a rank (s), None when unknown."""
    steps = [(s["last_ats"] - s["first_ats"]).total_seconds() / (s["n"] - 1) for s in spans if s["n"] > 2]
    return statistics.median(steps) if steps else None


def window_s(spans: list[dict]) -> float:
    """How long after a line progress must go on for the line to count as survived."""
    step = step_s(spans)
    return max(MIN_WINDOW_S, STEPS * step) if step is not None else MIN_WINDOW_S


def last_progress(spans: list[dict], f: Finding) -> dt.datetime | None:
    """The last progress of the finding's scope: its rank, else (the rank prints none: many frameworks
    log from rank 0 only) its host's ranks, else the job. A synchronous job makes no step without every
    rank, so the job's progress speaks for a rank that prints none."""
    ts: list = []
    if f.rank is not None:
        ts = [s["last_ats"] for s in spans if s["rank"] == f.rank and (f.host is None or s["host"] in (f.host, None))]
    if not ts and f.host is not None:
        ts = [s["last_ats"] for s in spans if s["host"] == f.host]
    if not ts:
        ts = [s["last_ats"] for s in spans]
    return max(ts) if ts else None


def _followers(con, times: list[dt.datetime]) -> dict[dt.datetime, int]:
    """For each time t: the processes that took part in a job-wide teardown in the
    CASCADE_WINDOW_S after t. One query for all of them (a query per finding was 25 ms each
    on a large store, and a store can hold hundreds of direct findings: one per GPU's Xid)."""
    got = con.execute(
        "SELECT t.t, count(DISTINCT (coalesce(e.host, ''), coalesce(CAST(e.rank AS VARCHAR), e.file))) "
        "FROM (SELECT DISTINCT unnest(?::TIMESTAMP[]) AS t) t JOIN aligned_events e "
        "ON e.ats > t.t AND e.ats <= t.t + to_seconds(?) WHERE e.kind IN (SELECT unnest(?)) GROUP BY t.t",
        [times, CASCADE_WINDOW_S, list(CASCADE_KINDS)]).fetchall()
    counts = dict(got)
    return {t: counts.get(t, 0) for t in times}


def _demote_by_cascade(con, findings: list[Finding]) -> int:
    direct = sorted((f for f in findings if f.direct and f.time is not None), key=lambda f: f.time)
    if len(direct) < 2:
        return 0
    at = _followers(con, [f.time for f in direct])
    follow = {id(f): at[f.time] for f in direct}
    n = 0
    for i, f in enumerate(direct):
        later = [g for g in direct[i + 1:] if follow[id(g)] >= 2
                 and (g.time - f.time).total_seconds() > CASCADE_WINDOW_S]
        if follow[id(f)] == 0 and later:
            f.direct = False
            f.score = min(f.score, 0.1)
            f.extra["survived"] = True
            f.why += (" — survived: no teardown followed it within "
                      f"{CASCADE_WINDOW_S / 60:.0f} min, the job came down after a later one (context, not the cause)")
            n += 1
    return n


def demote_survived(con, findings: list[Finding]) -> int:
    """Demote, in place, direct findings followed by healthy progress of their scope (without progress
    data: followed by no teardown while a later one is). Returns how many."""
    spans = _spans(con)
    if not spans:
        return _demote_by_cascade(con, findings)
    w = window_s(spans)
    latest = _latest_times(con, [f for f in findings if f.direct and f.time is not None])
    n = 0
    for f in findings:
        if not f.direct or f.time is None:
            continue
        last = last_progress(spans, f)
        t = latest.get(id(f), f.time)
        if last is None or t is None or (last - t).total_seconds() <= w:
            continue
        f.direct = False
        f.score = min(f.score, 0.1)
        f.extra["survived"] = True
        f.why += (f" — survived: its {'rank' if f.rank is not None else 'node' if f.host else 'job'} made progress "
                  f"until {(last - f.time).total_seconds() / 60:.0f} min later (context, not the cause)")
        n += 1
    return n


# the latest time each of some lines can have been written (detectors.base.NEXT_TIMED_ATS)
NEXT_TIMED = f"""
    SELECT e.event_id, {NEXT_TIMED_ATS} AS next_ats
    FROM hot_events_all e WHERE e.event_id IN (SELECT unnest(?))
"""


def _latest_times(con, findings: list[Finding]) -> dict[int, dt.datetime | None]:
    """id(finding) -> the latest time its line can have been written, for findings whose time is
    inherited (`ts_ok` false): the file's next timed line (None: nothing bounds it). Survival is
    judged at that time: a line of unknown time is survived only if it is whenever it was written."""
    untimed = [f for f in findings if f.extra.get("ts_ok") is False and f.evidence]
    if not untimed:
        return {}
    got = dict(con.execute(NEXT_TIMED, [[f.evidence[0] for f in untimed]]).fetchall())
    return {id(f): got.get(f.evidence[0]) for f in untimed}


def training_stop(con) -> tuple[dt.datetime | None, dt.timedelta]:
    """When the job (in scope) last made progress, and the slack of a step or two around it (a
    synchronous job's ranks stop within one step of each other: the others block at the next
    collective). (None, slack) without progress lines."""
    return _memo(con, "training_stop", lambda: _training_stop(con))


def _training_stop(con) -> tuple[dt.datetime | None, dt.timedelta]:
    spans = _spans(con)
    stop = max((s["last_ats"] for s in spans), default=None)
    return stop, dt.timedelta(seconds=max(5.0, 2 * (step_s(spans) or 0.0)))


def healthy_until(con) -> dt.datetime | None:
    """The time up to which the job (in scope) was making progress, less the survival window: failure
    lines before it were survived (the job made steps after them); None when no progress is known.
    When the logs end while the job still trains (its last progress is within a few steps of the
    scope's last line), STEPS steps after a line are enough: nothing stopped, the logs did."""
    return _memo(con, "healthy_until", lambda: _healthy_until(con))


def _healthy_until(con) -> dt.datetime | None:
    spans = _spans(con)
    if not spans:
        return None
    last = max(s["last_ats"] for s in spans)
    step = step_s(spans)
    end = con.execute("SELECT max(last_ats) FROM aligned_groups WHERE ts_ok").fetchone()[0]
    if step is not None and end is not None and (end - last).total_seconds() <= 2 * step:
        return last - dt.timedelta(seconds=STEPS * step)
    return last - dt.timedelta(seconds=window_s(spans))
