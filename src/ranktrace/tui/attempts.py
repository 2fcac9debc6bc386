"""A run of several attempts in the TUI (issue 27): the boundaries the timeline marks and the
incidents (failed attempts) the user steps between.

Plain Python, no textual (the headless-core test imports it) and no store access (data.py reads
the `attempts` table and hands the rows here). Times are aligned epoch seconds, as everywhere in
the TUI. Two sources of the same shape: the store's `attempts` table (queries/store/attempts.sql:
on the ingest's clock, which the first screen uses) until the diagnosis is in, then the verdict's
`attempts` list (on the diagnosis' clock, which the TUI uses from then on).
"""

from __future__ import annotations

from dataclasses import dataclass

from .data import failure_window, parse_time

# An attempt longer than this many times its failure's tail (failure to the attempt's end) opens
# on the failure's window, as the first screen does: a 3-hour attempt drawn whole in 80 columns
# would hide the minute that matters. A shorter one is shown whole, its start's rule in view.
WHOLE_ATTEMPT_MAX_TAILS = 3.0
MIN_TAIL_S = 5.0


@dataclass(frozen=True)
class Attempt:
    id: int
    start: float | None          # None: the logs begin inside it
    end: float | None
    outcome: str                 # failed | completed | cancelled | running
    basis: str = ""              # how its start was recognised
    file: str | None = None      # where (the first sign of its start)
    line: int | None = None
    max_step: int | None = None
    verdict: dict | None = None  # a failed (or cancelled) attempt's verdict: kind, rank, host, ..., confidence
    cost: dict | None = None     # its impact: gpus, seconds, gpu_hours, ...

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    @property
    def culprit(self) -> tuple[str | None, int | None]:
        v = self.verdict or {}
        return v.get("host"), v.get("rank")

    @property
    def failure_time(self) -> float | None:
        return parse_time((self.verdict or {}).get("time"))


def _int(v) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


def from_rows(rows: list[tuple]) -> list[Attempt]:
    """The store's rows (attempt, start, end, outcome, basis, file, line, max_step; times as epoch
    seconds), in attempt order."""
    out = [Attempt(id=int(r[0]), start=r[1], end=r[2], outcome=str(r[3] or ""), basis=str(r[4] or ""),
                   file=r[5], line=_int(r[6]), max_step=_int(r[7])) for r in rows if r[0] is not None]
    return sorted(out, key=lambda a: a.id)


def from_verdict(doc: dict | None) -> list[Attempt] | None:
    """The verdict JSON's `attempts` (None when it has none: an older diagnosis, or a run the
    verdict was not cut for). Malformed entries are skipped, never raised on: the JSON is data."""
    raw = (doc or {}).get("attempts")
    if not isinstance(raw, list) or not raw:
        return None
    out = []
    for e in raw:
        if not isinstance(e, dict) or _int(e.get("id")) is None:
            continue
        b = e.get("boundary")
        b = b if isinstance(b, dict) else {"basis": b}   # a bundle's answer file writes it as text
        prog = e.get("progress") if isinstance(e.get("progress"), dict) else {}
        v = e.get("verdict") if isinstance(e.get("verdict"), dict) else None
        cost = e.get("cost") if isinstance(e.get("cost"), dict) else None
        out.append(Attempt(id=_int(e["id"]), start=parse_time(e.get("start")), end=parse_time(e.get("end")),
                           outcome=str(e.get("outcome") or ""), basis=str(b.get("basis") or ""),
                           file=b.get("file"), line=_int(b.get("line")), max_step=_int(prog.get("max_step")),
                           verdict=v, cost=cost))
    return sorted(out, key=lambda a: a.id) or None


def top_attempt(doc: dict | None, attempts: list[Attempt]) -> Attempt | None:
    """The attempt the top-level verdict is about: the one it names (`verdict.attempt`), else the
    failed attempt with the same culprit and time, else the one its time falls in."""
    vd = (doc or {}).get("verdict") or {}
    named = _int(vd.get("attempt"))
    if named is not None:
        hit = next((a for a in attempts if a.id == named), None)
        if hit is not None:
            return hit
    t = parse_time(vd.get("time"))
    same = [a for a in attempts if a.verdict and a.culprit == (vd.get("host"), vd.get("rank"))
            and a.failure_time == t]
    if same:
        return same[-1]
    return attempt_at(attempts, t) if t is not None else None


def attempt_at(attempts: list[Attempt], t: float) -> Attempt | None:
    """The attempt running at time t: the last to start at or before it (the first when t comes
    before every start)."""
    hit = None
    for a in attempts:
        if a.start is None or a.start <= t:
            hit = a
    return hit or (attempts[0] if attempts else None)


def step(attempts: list[Attempt], current: int | None, d: int) -> Attempt | None:
    """The next (d > 0) or previous failed attempt from attempt id `current` (None: from before the
    first / after the last)."""
    failed = [a for a in attempts if a.failed]
    if d > 0:
        return next((a for a in failed if current is None or a.id > current), None)
    return next((a for a in reversed(failed) if current is None or a.id < current), None)


def window(a: Attempt, extent: tuple[float, float]) -> tuple[float, float]:
    """The timeline window that shows attempt `a`: the whole attempt with a margin when it is short
    next to its failure, else the failure's window (data.failure_window) within it."""
    lo = a.start if a.start is not None else extent[0]
    hi = a.end if a.end is not None else extent[1]
    ff = a.failure_time
    if ff is not None:
        lo, hi = min(lo, ff), max(hi, ff)   # the verdict's line may come just before the cut
        if hi - lo > WHOLE_ATTEMPT_MAX_TAILS * max(hi - ff, MIN_TAIL_S):
            return failure_window((lo, max(hi, extent[1])), ff, hi)
    pad = max((hi - lo) * 0.05, 0.5)
    return lo - pad, hi + pad


def whole(a: Attempt, extent: tuple[float, float]) -> tuple[float, float]:
    """The timeline window that shows attempt `a` whole, its start's rule in view (an open start or
    end: the store's extent), with a margin of 5% each side."""
    lo = a.start if a.start is not None else extent[0]
    hi = a.end if a.end is not None else extent[1]
    hi = max(hi, lo + 1.0)
    pad = max((hi - lo) * 0.05, 0.5)
    return lo - pad, hi + pad
