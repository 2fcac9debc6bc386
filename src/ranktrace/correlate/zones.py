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
    for clock drift), and one shift by whole quarter hours puts nearly all of them inside: the one
    shift that does, or the one that brings its lines naming a pod or pid next to the first or last
    line of that pod or pid (a kubelet's ContainerStarted by the container's first line), or the one
    the other such files took (one cluster, one zone), or the one on the coarsest step (whole hours,
    then half, then quarter hours: most zones are whole hours); else no shift, and no guess.
Its lines are then told that shift later or earlier (temp table interpolated_times, as any retold
time), and the verdict's clock says so, with the `--tz` that would have read it right.
"""

from __future__ import annotations

import statistics
from functools import lru_cache

import duckdb

from .util import rows, sql_file

QUARTER_S = 900               # zone offsets are whole quarter hours (UTC+5:45, +8:45 the finest)
MAX_ZONE_S = 14 * 3600        # UTC-12 .. UTC+14: two zones differ by at most 26 h; 14 h covers any one vs UTC
MARGIN_S = 600                # clock drift between hosts (ranktrace.correlate.clock aligns the rest)
INSIDE = 0.95                 # the share of a file's lines that must fall outside, then inside
# once its zone is right, a line sits by its pod's or pid's edge (the same node, the same clock: a kubelet
# logs a container's start within a second of its first line); a wrong zone still finds some group's edge
# within a minute or two (a pod's lines come in many groups): the right one is near and clearly nearer
PAIR_S = 60
PAIR_FLOOR_S = 10


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


def zone_fits(groups: list[tuple[float, float, int]], lo: float, hi: float) -> list[int]:
    """The shifts in seconds (whole quarter hours, not 0) that put a file's lines inside the span [lo, hi]
    of the lines that name their zone; none when they are inside already."""
    lo, hi = lo - MARGIN_S, hi + MARGIN_S
    if not groups or share_inside(groups, lo, hi, 0) > 1 - INSIDE:
        return []
    return [k * QUARTER_S for k in range(-MAX_ZONE_S // QUARTER_S, MAX_ZONE_S // QUARTER_S + 1)
            if k and share_inside(groups, lo, hi, k * QUARTER_S) >= INSIDE]


# the steps of zone offsets, the most common first: whole hours, then half hours (India, Iran, parts of
# Australia and Canada), then quarter hours (Nepal, Chatham, Eucla)
STEPS_S = (3600, 1800, 900)


def best_fit(fits: list[int]) -> int | None:
    """The one fit at the coarsest step any fit is on (a whole hour before a half hour), or None."""
    for step in STEPS_S:
        on = [s for s in fits if s % step == 0]
        if on:
            return on[0] if len(on) == 1 else None
    return None


def pair_gap(pairs: list[tuple[float, float, float]], shift: int) -> float | None:
    """How far, once shifted, a file's lines that name a pod or pid sit from the nearest edge (first or
    last line) of that pod's or pid's lines that name their zone: the median over its lines of each one's
    nearest. `pairs`: (the line's time, an edge group's first, its last). None without pairs."""
    near: dict[float, float] = {}
    for t, first, last in pairs:
        d = min(abs(t + shift - first), abs(t + shift - last))
        near[t] = min(d, near.get(t, d))
    return statistics.median(near.values()) if near else None


def by_pairs(fits: list[int], pairs: list[tuple[float, float, float]]) -> int | None:
    """The fit that brings the file's lines nearest their pods' and pids' edges, when it is near and
    clearly nearer than any other fit (see PAIR_S)."""
    gaps = sorted((g, s) for s in fits if (g := pair_gap(pairs, s)) is not None)
    if gaps and gaps[0][0] <= PAIR_S and (len(gaps) == 1 or gaps[1][0] >= 3 * gaps[0][0] + PAIR_FLOOR_S):
        return gaps[0][1]
    return None


def decide(fits: dict[str, list[int]], pairs: dict[str, list[tuple[float, float, float]]] | None = None
           ) -> dict[str, int]:
    """file -> its shift, from each file's fits. A file is sure of a shift when it is its one fit, or the
    one that brings its lines near the lines of the same pods and pids (`pairs`, see by_pairs); else, with
    no sure file, of its one fit at the coarsest step. The nodes of one cluster are set to one zone as a
    rule, so a file more than one shift fits (a frozen node's journal, cut short) takes the shift most
    sure files took, when it fits; else no shift: no guess."""
    pairs = pairs or {}
    sure = {f: x[0] if len(x) == 1 else by_pairs(x, pairs.get(f, [])) for f, x in fits.items() if x}
    sure = {f: s for f, s in sure.items() if s is not None}
    if not sure:
        sure = {f: b for f, x in fits.items() if (b := best_fit(x)) is not None}
    if not sure:
        return {}
    counts: dict[int, int] = {}
    for x in sure.values():
        counts[x] = counts.get(x, 0) + 1
    common = min(counts, key=lambda x: (-counts[x], abs(x), x))
    return {f: sure.get(f, common) for f, x in fits.items() if f in sure or common in x}


def zone_shifts(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """[{file, host, shift_s}] for the files read as written in another zone (see the module's text),
    sorted by file."""
    con.execute("CREATE OR REPLACE TEMP TABLE zone_kinds AS " + sql_file("align/zone_kinds.sql"),
                {"zoned_envelopes": list(zoned_envelopes())})
    files = rows(con, sql_file("align/zone_files.sql"))
    if not files:
        return []
    groups: dict[int, list[tuple[float, float, int]]] = {}
    for r in rows(con, sql_file("align/zone_lines.sql"), {"file_ids": [f["file_id"] for f in files]}):
        groups.setdefault(r["file_id"], []).append((r["ts"], r["max_ts"], int(r["n"])))
    pairs: dict[str, list[tuple[float, float, float]]] = {}
    name = {f["file_id"]: f["file"] for f in files}
    for r in rows(con, sql_file("align/zone_pairs.sql"), {"file_ids": list(name)}):
        pairs.setdefault(name[r["file_id"]], []).append((r["t"], r["first"], r["last"]))
    shifts = decide({f["file"]: zone_fits(groups.get(f["file_id"], []), f["lo"], f["hi"]) for f in files}, pairs)
    return [{"file": f["file"], "host": f["host"], "shift_s": shifts[f["file"]]} for f in files if f["file"] in shifts]


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
