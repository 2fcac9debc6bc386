"""Warnings the job survived are context, not causes (issue 13: noise in long runs).

Long runs carry warnings they survive: IB port flaps, retried socket and store connections, NCCL WARNs, a
slow rank. A cause-role line is the root cause only if progress stopped after it (or the cascade follows
it, which it does when progress stopped). So a finding whose own scope kept making progress well after
it, its rank's progress for a rank, the progress of its host's ranks for a host-only line, the job's for a
line naming nobody, is demoted: not direct, a small score, and says why. Without progress lines in the
logs nothing is demoted (absence of progress data is not evidence of survival)."""

from __future__ import annotations

import datetime as dt
import statistics

from .detectors.base import Finding, query

MIN_WINDOW_S = 120.0     # progress this long after a line, at least, before it counts as survived
STEPS = 5                # ... and at least this many of the job's typical step intervals


def _spans(con) -> list[dict]:
    return query(con, "progress_spans")


def window_s(spans: list[dict]) -> float:
    """How long after a line progress must go on for the line to count as survived."""
    steps = [(s["last_ats"] - s["first_ats"]).total_seconds() / (s["n"] - 1) for s in spans if s["n"] > 2]
    return max(MIN_WINDOW_S, STEPS * statistics.median(steps)) if steps else MIN_WINDOW_S


def last_progress(spans: list[dict], f: Finding) -> dt.datetime | None:
    """The last progress of the finding's scope: its rank, else its host's ranks, else the job."""
    if f.rank is not None:
        ts = [s["last_ats"] for s in spans if s["rank"] == f.rank and (f.host is None or s["host"] in (f.host, None))]
    elif f.host is not None:
        ts = [s["last_ats"] for s in spans if s["host"] == f.host]
    else:
        ts = [s["last_ats"] for s in spans]
    return max(ts) if ts else None


def demote_survived(con, findings: list[Finding]) -> int:
    """Demote, in place, direct findings followed by healthy progress of their scope. Returns how many."""
    spans = _spans(con)
    if not spans:
        return 0
    w = window_s(spans)
    n = 0
    for f in findings:
        if not f.direct or f.time is None:
            continue
        last = last_progress(spans, f)
        if last is None or (last - f.time).total_seconds() <= w:
            continue
        f.direct = False
        f.score = min(f.score, 0.1)
        f.extra["survived"] = True
        f.why += (f" — survived: its {'rank' if f.rank is not None else 'node' if f.host else 'job'} made progress "
                  f"until {(last - f.time).total_seconds() / 60:.0f} min later (context, not the cause)")
        n += 1
    return n
