"""Files written in another time zone than the lines around them.

A time written with no zone is read in the zone `ingest --tz` names (UTC by default). Where a bundle
mixes such times with times that name their zone, a file written in another zone reads hours off: a
Kubernetes node's journal (its kernel's OOM kill or Xid, the kubelet) in the node's local time beside
its pods' CRI logs in UTC puts the kill hours before the death it caused, and the verdict then blames
the death (`killed`, `cuda_error`) instead of its cause. Host clocks drift by seconds or minutes
(ranktrace.correlate.clock); zones differ by whole quarter hours (every zone in use: tzdata), up to
14 hours. So a file is read as written in another zone only when all of this holds:
  - every timed line of it was written with no zone, and lines elsewhere in the bundle name theirs;
  - it names a pod or pid that those lines name on the same host (it belongs to this incident);
  - nearly all of its lines lie outside the span of the lines that name their zone (with a margin
    for clock drift), and exactly one shift by whole quarter hours (whole hours first) puts nearly
    all of them inside.
Its lines are then told that shift later or earlier (temp table interpolated_times, as any retold
time), and the verdict's clock says so, with the `--tz` that would have read it right.
"""

from __future__ import annotations

from functools import lru_cache

import duckdb

from .util import rows, sql_file

QUARTER_S = 900               # zone offsets are whole quarter hours (UTC+5:45, +8:45 the finest)
MAX_ZONE_S = 14 * 3600        # UTC-12 .. UTC+14: two zones differ by at most 26 h; 14 h covers any one vs UTC
MARGIN_S = 600                # clock drift between hosts (ranktrace.correlate.clock aligns the rest)
INSIDE = 0.95                 # the share of a file's lines that must fall outside, then inside


@lru_cache(maxsize=1)
def zoned_envelopes() -> tuple[str, ...]:
    """The catalog's envelopes whose time names its zone (UTC or an offset); read once a process."""
    from ..formats import load_catalog
    cat = load_catalog(check_samples=False)
    return tuple(sorted(e.name for e in cat.envelopes if e.ts is not None and e.ts.zone in ("utc", "offset")))


def share_inside(groups: list[tuple[float, float, int]], lo: float, hi: float, shift: float) -> float:
    """The share of the lines (groups of (first, last, lines), epoch seconds) inside [lo, hi] once shifted."""
    total = sum(n for _, _, n in groups)
    inside = sum(n for a, b, n in groups if lo <= a + shift and b + shift <= hi)
    return inside / total if total else 0.0


def zone_shift(groups: list[tuple[float, float, int]], lo: float, hi: float) -> int | None:
    """The shift in seconds (whole quarter hours, not 0) that puts a file's lines inside the span [lo, hi]
    of the lines that name their zone, or None: when they are inside already, or no shift or more than
    one (whole hours preferred) puts them there."""
    lo, hi = lo - MARGIN_S, hi + MARGIN_S
    if not groups or share_inside(groups, lo, hi, 0) > 1 - INSIDE:
        return None
    fits = [k * QUARTER_S for k in range(-MAX_ZONE_S // QUARTER_S, MAX_ZONE_S // QUARTER_S + 1)
            if k and share_inside(groups, lo, hi, k * QUARTER_S) >= INSIDE]
    hours = [s for s in fits if s % 3600 == 0]
    pick = hours if hours else fits
    return pick[0] if len(pick) == 1 else None


def zone_shifts(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """[{file, host, shift_s}] for the files read as written in another zone (see the module's text),
    sorted by file."""
    files = rows(con, sql_file("align/zone_files.sql"), {"zoned_envelopes": list(zoned_envelopes())})
    if not files:
        return []
    groups: dict[int, list[tuple[float, float, int]]] = {}
    for r in rows(con, sql_file("align/zone_lines.sql"), {"file_ids": [f["file_id"] for f in files]}):
        groups.setdefault(r["file_id"], []).append((r["ts"], r["max_ts"], int(r["n"])))
    out = []
    for f in files:
        s = zone_shift(groups.get(f["file_id"], []), f["lo"], f["hi"])
        if s is not None:
            out.append({"file": f["file"], "host": f["host"], "shift_s": s})
    return out


def note(file: str, shift_s: int) -> str:
    """What the verdict's clock says of a file read in another zone: 'journal/n1.log: written with no zone,
    5 h behind the lines that name theirs: read as UTC-05:00 (`ingest --tz Etc/GMT+5` reads it so)'. A
    whole hour has a fixed-offset zone name (tzdata's Etc/GMT+5 is UTC-05:00: its sign is POSIX's, the
    other way round); a zone of a half or quarter hour has a city's name only."""
    h, m = divmod(abs(shift_s) // 60, 60)
    ahead = shift_s < 0
    zone = f"UTC{'+' if ahead else '-'}{h:02d}:{m:02d}"
    name = f"Etc/GMT{'-' if ahead else '+'}{h}" if not m else f"<the zone of {zone}>"
    return (f"{file}: written with no zone, {h} h{f' {m} min' if m else ''} {'ahead of' if ahead else 'behind'} "
            f"the lines that name theirs: read as {zone} (`ingest --tz {name}` reads it so)")
