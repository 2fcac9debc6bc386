"""Clock alignment: a per-host offset with an uncertainty, from events that must
coincide on every host (queries/align/anchors.sql), and the aligned-time view.

offset_s = how far a host's clock runs AHEAD of the reference host's clock, so
aligned time = logged time - offset_s (design.md section 4).

Estimator, per host H against the reference R, per anchor class (progress step, the
order of a console many hosts write to (arrival_offsets), collective start, rendezvous
completion), best class first: d_k = t(H,k) - t(R,k)
over the anchors k both hosts logged; offset = median(d_k); uncertainty = the class's
own bound (how far apart two hosts may truly log it) plus twice the 90th percentile of
|d_k - offset| (disagreement among anchors). An offset within its uncertainty of 0 is
reported as 0 (not significant). Hosts that share no anchor with R are chained through
a host that does; otherwise they stay at 0 with uncertainty None ("unknown").

`create_aligned_view(con, clock)` makes temp view `aligned_events`: events_id plus
`offset_s` and `ats` (aligned time, TIMESTAMP) and `ts_ok` (the time was written in the
line, not interpolated)."""

from __future__ import annotations

import statistics

import duckdb

from ..clock_key import FILE_CLOCK, clock_key
from .util import has_rows, rows, sql_file, table_exists

# arrival: the order of a shared console; slurm_step: a Slurm step's launch and cancel on each node
CLASS_ORDER = ("progress", "arrival", "collective", "rendezvous", "slurm_step")
MIN_ANCHORS = {"progress": 2, "collective": 1, "rendezvous": 1, "slurm_step": 1}
# Two hosts of one run share most of their anchors (a synchronous loop writes every step on every
# rank). Hosts that share few never ran together: the nodes of a requeued job's first run and those
# of its second, both at steps 6-8 after the resume, are not 3 minutes apart in clock.
SHARED = 0.5
TOL_S = 2.0   # differences of one anchor pairing that agree
# ... and hosts whose logs, as written, are more than this far apart never ran together at all (a
# clock skew larger than a whole run is not what the anchors of two such hosts show: a job requeued on
# other nodes, running its first steps again)
APART_S = 60.0


def _host_lines(con: duckdb.DuckDBPyConnection) -> str:
    """SQL: (host, n) lines per host as logged, from the line groups when they are made
    (queries/align/event_groups.sql: a few thousand rows) rather than every line."""
    if table_exists(con, "event_groups"):
        return "SELECT host, sum(n) AS n FROM event_groups WHERE host IS NOT NULL GROUP BY host"
    return "SELECT host, count(*) AS n FROM events WHERE host IS NOT NULL GROUP BY host"


def reference_host(con: duckdb.DuckDBPyConnection, candidates: set[str] | None = None) -> str | None:
    q = f"SELECT host, n FROM ({_host_lines(con)}) ORDER BY n DESC, host"
    for r in rows(con, q):
        if candidates is None or r["host"] in candidates:
            return r["host"]
    return None


def _pair(a: dict, b: dict, unc0: float):
    """Offset of host a relative to host b from shared anchors (dicts akey -> [t, ...]: a key a host
    wrote in several attempts has several times): (offset, uncertainty, keys that support it), or None.
    Every pairing of a key's times is a candidate difference; the offset is the one the most keys agree
    on (within TOL_S), the smallest in size on a tie: a host that took part only in a later attempt
    agrees as well with the first attempt's steps of the other, shifted by the time between attempts,
    as with the same attempt's, unshifted; both fit, and no clock is minutes off when it need not be."""
    keys = sorted(set(a) & set(b))
    if not keys:
        return None
    cands = sorted((ta - tb, k) for k in keys for ta in a[k] for tb in b[k])
    tol = max(TOL_S, 2 * unc0)
    best = None
    j = 0
    inside: dict[str, int] = {}   # key -> its differences in the window cands[i:j]
    # The window [d0, d0 + tol] slides over the sorted differences: its keys are counted as it moves and
    # its median is its middle element (O(n log n) in all; a median and a set per window made it
    # quadratic: minutes for the 15k steps a host of a long run shares with another)
    for i, (d0, _) in enumerate(cands):
        while j < len(cands) and cands[j][0] <= d0 + tol:
            inside[cands[j][1]] = inside.get(cands[j][1], 0) + 1
            j += 1
        support = len(inside)
        mid = (i + j) // 2   # statistics.median of the window's differences (sorted already)
        centre = cands[mid][0] if (j - i) % 2 else (cands[mid - 1][0] + cands[mid][0]) / 2
        if best is None or (support, -abs(centre)) > (best[0], -abs(best[1])):
            best = (support, centre, i, j)
        k = cands[i][1]
        inside[k] -= 1
        if not inside[k]:
            del inside[k]
    support, centre, lo, hi = best
    win = cands[lo:hi]
    per_key: dict[str, float] = {}
    for d, k in win:   # one difference per key: the one nearest the centre
        if k not in per_key or abs(d - centre) < abs(per_key[k] - centre):
            per_key[k] = d
    d = sorted(per_key.values())
    off = statistics.median(d)
    dev = sorted(abs(x - off) for x in d)
    p90 = dev[min(len(dev) - 1, int(0.9 * len(dev)))]
    return off, unc0 + 2 * p90, len(d)


# A console that pdsh, srun or mpirun fed from many nodes holds their lines in the order they reached it:
# a clock of its own (queries/align/arrival.sql). Its first lines fix the offsets (a clock's offset holds
# for the run); a line reaches the console this soon after it was written; a pair of hosts needs this
# many lines in each order.
ARRIVAL_LINES = 200_000
DELIVERY_S = 1.0
MIN_ARRIVALS = 3


# the kinds of a line's time that the line itself wrote (not one it inherited, nor none)
TIMED = "'exact', 'local', 'year_inferred', 'envelope'"
# lines whose time is not their host's own in a console fed from several clocks: retold from the timed line
# before them (align/interpolated_times.sql). A collector's time (mpirun --timestamp-output) is on mpirun's
# host's clock, whichever host the line is about: like an interpolated one, it is no anchor of its host's.
RETOLD = "('interpolated', 'collector')"


def _mixed_files(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The files whose timed lines name more than one host."""
    src = "event_groups" if table_exists(con, "event_groups") else "events"
    return [f for (f,) in con.execute(
        f"SELECT file FROM {src} WHERE host IS NOT NULL AND ts_kind IN ({TIMED}) "
        "GROUP BY file HAVING count(DISTINCT host) > 1 ORDER BY file").fetchall()]


def arrival_offsets(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], tuple[float, float, int]]:
    """(a, b) -> (offset of a's clock relative to b's, uncertainty, lines read) from the consoles that
    interleave their lines: a's line before b's bounds offset(a) - offset(b) from below, b's before a's
    from above (less the delivery time); the offset is the middle of the two bounds. Pairs whose bounds
    cross (output held in a buffer, not a clock) give nothing."""
    files = _mixed_files(con)
    if not files:
        return {}
    d95 = {(r["host_a"], r["host_b"]): (float(r["d95"]), r["n"])
           for r in rows(con, sql_file("align/arrival.sql"), {"files": files, "max_line": ARRIVAL_LINES})}
    out = {}
    for (a, b), (first, n) in d95.items():
        back = d95.get((b, a))
        if back is None or min(n, back[1]) < MIN_ARRIVALS:
            continue
        lo, hi = first - DELIVERY_S, -back[0] + DELIVERY_S
        if lo <= hi:
            out[(a, b)] = ((lo + hi) / 2, (hi - lo) / 2, n + back[1])
    return out


def _spans(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[float, float]]:
    """Per host, the first and last time it logged (epoch seconds, as logged)."""
    return {h: (lo, hi) for h, lo, hi in con.execute(
        "SELECT host, epoch(min(ts)), epoch(max(max_ts)) FROM event_groups WHERE host IS NOT NULL AND sane "
        "GROUP BY host").fetchall() if lo is not None}


def apart(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool:
    """The two hosts' logs, as written, lie more than APART_S apart."""
    return a is not None and b is not None and max(a[0], b[0]) - min(a[1], b[1]) > APART_S


def same_round(a: dict, b: dict) -> bool:
    """Two hosts' rendezvous anchors (akey -> times) show them in one rendezvous round: they share a
    round's master address and port, which each wrote once (a port each round: the same attempt,
    however far apart their logs read)."""
    keys = [k for k in set(a) & set(b) if k != "rdzv"]
    return bool(keys) and all(len(a[k]) == 1 and len(b[k]) == 1 for k in keys)


def estimate_offsets(con: duckdb.DuckDBPyConnection, offsets: dict[str, float] | None = None) -> list[dict]:
    """The `clock` list of the verdict: [{host, offset_s, uncertainty_s, basis}], sorted by host."""
    if not table_exists(con, "events_id"):
        from .identity import build_identity
        build_identity(con)
    offsets = dict(offsets or {})
    hosts = [r["host"] for r in rows(con, f"SELECT host FROM ({_host_lines(con)}) ORDER BY host")]
    anchors: dict[str, dict[str, dict[str, float]]] = {}   # class -> host -> akey -> t
    unc0: dict[str, float] = {}
    for r in anchor_rows(con):
        if r["t"] is None:
            continue
        anchors.setdefault(r["class"], {}).setdefault(r["host"], {}).setdefault(r["akey"], []).append(float(r["t"]))
        unc0[r["class"]] = float(r["unc_s"])
    arrivals = arrival_offsets(con)
    with_anchors = {h for c in anchors.values() for h, ks in c.items() if ks} | {h for pair in arrivals for h in pair}
    ref = reference_host(con, with_anchors) if with_anchors else reference_host(con)
    out: dict[str, dict] = {}
    if ref is not None:
        out[ref] = {"host": ref, "offset_s": 0.0, "uncertainty_s": 0.0, "basis": "reference host"}

    spans = _spans(con)
    rounds = anchors.get("rendezvous", {})
    allocations = allocated_node_sets(con)

    def estimate(h: str, against: str):
        for cls in CLASS_ORDER:
            if cls == "arrival":
                if (h, against) in arrivals:
                    off, unc, n = arrivals[(h, against)]
                    return off, unc, f"the order of {n} of its lines and {against}'s in one console"
                continue
            per = anchors.get(cls, {})
            if cls == "slurm_step" and allocations and not any(h in a and against in a for a in allocations):
                continue   # a requeued job's step id on other nodes: never one launch
            if h in per and against in per:
                p = _pair(per[h], per[against], unc0.get(cls, 1.0))
                if p and p[2] >= MIN_ANCHORS[cls] and p[2] >= SHARED * min(len(per[h]), len(per[against])) \
                        and (not apart(spans.get(h), spans.get(against))
                             or same_round(rounds.get(h, {}), rounds.get(against, {}))):
                    return p[0], p[1], f"{p[2]} shared {cls} anchors with {against}"
        return None

    pending = [h for h in hosts if h != ref]
    progress = True
    while pending and progress and ref is not None:   # chain through already aligned hosts
        progress = False
        for h in list(pending):
            best = None
            for via in sorted(out):   # deterministic
                e = estimate(h, via)
                if e is None:
                    continue
                off = e[0] + out[via]["offset_s"]
                unc = e[1] + (out[via]["uncertainty_s"] or 0.0)
                if best is None or unc < best[1]:
                    best = (off, unc, e[2] if via == ref else e[2] + f" (chained via {via})")
            if best:
                off, unc, basis = best
                if abs(off) <= unc:
                    basis += f"; estimate {off:+.3f}s is within its uncertainty of 0"
                    off = 0.0
                out[h] = {"host": h, "offset_s": round(off, 3), "uncertainty_s": round(unc, 3), "basis": basis}
                pending.remove(h)
                progress = True
    for h in pending:
        out[h] = {"host": h, "offset_s": 0.0, "uncertainty_s": None,
                  "basis": "no anchor shared with the reference host: assumed 0"}
    for c in controller_clocks(con, out):
        out[c["host"]] = c
    for h, v in offsets.items():
        out[h] = {"host": h, "offset_s": float(v), "uncertainty_s": 0.0, "basis": "pinned by hand (--offset)"}
    return [out[h] for h in sorted(out)]


def allocated_node_sets(con: duckdb.DuckDBPyConnection) -> list[frozenset[str]]:
    """The node sets the Slurm controller allocated (its `sched: Allocate ... NodeList=`): two nodes
    launched or cancelled one step together only if some allocation held both (a requeued job runs the
    same step id on another set of nodes, minutes later). Empty when no controller log was read."""
    from .hostlist import expand_hostlist
    if not table_exists(con, "slurm_alloc"):
        return []
    out = set()
    for (nl,) in con.execute("SELECT DISTINCT coalesce(nodelist, bf_nodelist) FROM slurm_alloc "
                             "WHERE coalesce(nodelist, bf_nodelist) IS NOT NULL").fetchall():
        try:
            out.add(frozenset(expand_hostlist(nl)))
        except ValueError:
            continue
    return sorted(out, key=sorted)


# A file whose lines name no host (a Slurm controller's log) has a clock of its own: its row of
# clock_offsets is keyed '@' + its path (ranktrace.clock_key), and the aligned views join a line's offset
# on clock_key. slurmd starts a job's batch script this soon after the controller allocated it (a prolog aside), and
# the steps on its other nodes within this window
LAUNCH_S = 1.0
LAUNCH_WINDOW_S = 10.0


def controller_clocks(con: duckdb.DuckDBPyConnection, hosts: dict[str, dict]) -> list[dict]:
    """Offsets of the files that name no host but allocate the jobs the hosts ran (slurmctld's log):
    per job, its allocation time less the first line any host wrote of it, on the aligned clock
    (`hosts`: the hosts' offsets); the median over the jobs. A controller whose clock is not known
    was read as if on the reference host's: its allocations, requeues and kills minutes off the job's
    own lines (a cancel after the last step read as a failure before it)."""
    if not table_exists(con, "slurm_alloc"):
        return []
    # file -> job -> its allocation less its first line, per host (batch: of its batch host only)
    per: dict[str, dict[str, list[float]]] = {}
    batch: dict[str, dict[str, list[float]]] = {}
    for r in rows(con, sql_file("align/controller_anchors.sql")):
        h = hosts.get(r["host"])
        if h is None or h["uncertainty_s"] is None:
            continue
        d = r["t_ctld"] - (r["t_host"] - h["offset_s"])
        per.setdefault(r["file"], {}).setdefault(r["job_id"], []).append(d)
        if r["batch"]:
            batch.setdefault(r["file"], {}).setdefault(r["job_id"], []).append(d)
    out = []
    for file, jobs in sorted(per.items()):
        # per job, its batch host's start; without one, the host that started it first (the largest
        # difference) among the hosts that agree with most of them: a host whose offset was read off
        # other lines than its daemon's (a process run under a fake clock) would otherwise seem to start
        # the job before it was allocated
        d = sorted(max(batch[file][job]) if job in batch.get(file, {})
                   else max(x for x in ds if x <= statistics.median(ds) + LAUNCH_WINDOW_S)
                   for job, ds in jobs.items())
        off = statistics.median(d)
        dev = sorted(abs(x - off) for x in d)
        unc = LAUNCH_S + 2 * dev[min(len(dev) - 1, int(0.9 * len(dev)))]
        basis = f"{len(d)} job allocation(s) it logged and each job's first line on its nodes"
        if abs(off) <= unc:
            basis += f"; estimate {off:+.3f}s is within its uncertainty of 0"
            off = 0.0
        out.append({"host": FILE_CLOCK + file, "offset_s": round(off, 3), "uncertainty_s": round(unc, 3),
                    "basis": basis})
    return out


ALIGNED_VIEW = """
    CREATE OR REPLACE TEMP VIEW {name} AS
    SELECT a.*{attempt} FROM (
        SELECT e.*, coalesce(o.offset_s, 0.0) AS offset_s,
               CASE WHEN e.ts >= TIMESTAMP '1990-01-01' AND e.ts < TIMESTAMP '2100-01-01'  -- a bogus year: untimed
                    THEN e.ts - to_microseconds(CAST(round(coalesce(o.offset_s, 0.0) * 1e6) AS BIGINT)) END AS ats,
               e.ts_kind IN ({timed})
                   AND e.ts >= TIMESTAMP '1990-01-01' AND e.ts < TIMESTAMP '2100-01-01' AS ts_ok
        FROM {src} e LEFT JOIN clock_offsets o ON o.host = {key}) a{joins}
"""


def _aligned_view(con: duckdb.DuckDBPyConnection, name: str, src: str, lines: bool) -> None:
    """Temp view `name` over identity view `src`; lines (not the groups, which carry theirs) get their
    attempt from their aligned time and their host's cuts (ranktrace.correlate.attempts), and an
    interpolated time told on their own clock (interpolated_times)."""
    from .attempts import attempt_expr
    attempt, joins = "", ""
    if lines and has_rows(con, "interpolated_times"):
        src = (f"(SELECT s.* REPLACE (coalesce(it.ts, s.ts) AS ts) FROM {src} s "
               "LEFT JOIN interpolated_times it ON it.event_id = s.event_id)")
    if lines:
        untimed = has_rows(con, "untimed_files")
        expr = attempt_expr(con, "a.ats", "ah", "ad", "coalesce(u.attempt, 0)" if untimed else "0")
        attempt = f", {expr} AS attempt"
        if expr != "1":
            joins = (" LEFT JOIN attempt_hosts ah ON ah.host = a.host"
                     " CROSS JOIN (SELECT * FROM attempt_hosts WHERE host IS NULL) ad")
            if untimed:
                joins += " LEFT JOIN untimed_files u ON u.file_id = a.file_id"
    files = con.execute(f"SELECT count(*) FROM clock_offsets WHERE host LIKE '{FILE_CLOCK}%'").fetchone()[0]
    key = clock_key("e") if files else "e.host"
    con.execute(ALIGNED_VIEW.format(name=name, src=src, attempt=attempt, joins=joins, key=key, timed=TIMED))


# The groups of queries/align/event_groups.sql on the aligned clock: a group is one host, so its
# times shift by the one offset of that host (first_ats = ats, the aligned first time; last_ats,
# step_ats, start_ats), and ts_ok holds for every line of the group or for none.
ALIGNED_GROUPS = """
    CREATE OR REPLACE TEMP VIEW aligned_groups_all AS
    SELECT e.* EXCLUDE (max_ts, step_ts, start_ts), e.ats AS first_ats,
           CASE WHEN e.ats IS NOT NULL THEN e.max_ts - e.shift END AS last_ats,
           CASE WHEN e.ats IS NOT NULL THEN e.step_ts - e.shift END AS step_ats,
           CASE WHEN e.ats IS NOT NULL THEN e.start_ts - e.shift END AS start_ats
    FROM (SELECT *, to_microseconds(CAST(round(offset_s * 1e6) AS BIGINT)) AS shift FROM aligned_events_g) e
"""


def create_aligned_view(con: duckdb.DuckDBPyConnection, clock: list[dict]) -> None:
    """Temp view `aligned_events`: events_id + offset_s + ats (aligned time) + ts_ok + attempt; the
    same for the groups of queries/align/event_groups.sql (`aligned_groups`) and for the lines of
    queries/align/hot_events.sql (`hot_events`). Each is a view over its `_all` twin, which
    ranktrace.correlate.attempts.scope points at one attempt's lines."""
    if not table_exists(con, "events_id"):
        from .identity import build_identity
        build_identity(con)
    con.execute("CREATE OR REPLACE TEMP TABLE clock_offsets (host VARCHAR, offset_s DOUBLE, uncertainty_s DOUBLE)")
    if clock:
        con.executemany("INSERT INTO clock_offsets VALUES (?, ?, ?)",
                        [[c["host"], c["offset_s"], c["uncertainty_s"]] for c in clock])
    for z in write_interpolated_times(con):
        _note_zone(clock, z)
    _hot_events(con)
    refresh_aligned(con)


def _note_zone(clock: list[dict], z: dict) -> None:
    """The clock entry of the zone-shifted file's host says how its times were retold (ranktrace.correlate.zones)."""
    from .zones import note
    for c in clock:
        if c["host"] == z["host"]:
            c.setdefault("zones", []).append({"file": z["file"], "shift_s": z["shift_s"]})
            c["basis"] += "; " + note(z["file"], z["shift_s"])


def write_interpolated_times(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Temp table interpolated_times for the clock_offsets of now: the times, told on their own clock,
    of the lines of files on more than one clock that took their time from a line on another clock
    (queries/align/interpolated_times.sql) or that name no host and were written on another clock
    (queries/align/hostless_clocks.sql, also kept as temp table hostless_clocks), and of every line of a
    file written in another zone (ranktrace.correlate.zones: returned, [{file, host, shift_s}]); the groups
    made again when it changed what they were made of (their lines' times: identity.rows_with_keys)."""
    from .identity import base_views, events_views, interpolated_stamp, regroup
    from .zones import zone_shifts
    before = interpolated_stamp(con)
    con.execute("CREATE OR REPLACE TEMP TABLE hostless_clocks (event_id BIGINT, clock VARCHAR, ts TIMESTAMP)")
    hostless = [f for (f,) in con.execute(
        "SELECT file FROM events_id_g GROUP BY file "
        f"HAVING count(DISTINCT host) > 1 AND bool_or(host IS NULL AND ts_kind IN ({TIMED})) ORDER BY file").fetchall()]
    if hostless:
        con.execute("CREATE OR REPLACE TEMP TABLE hostless_src AS " + sql_file("align/hostless_lines.sql"),
                    {"files": hostless})
    else:   # (the views below exist either way: every SQL file of queries/ runs after align)
        con.execute("CREATE OR REPLACE TEMP TABLE hostless_src AS SELECT * FROM events_keyed LIMIT 0")
    base_views(con, "hostless_src", "_x")
    events_views(con, "_x")
    if hostless:
        con.execute("INSERT INTO hostless_clocks " + sql_file("align/hostless_clocks.sql"), {"files": hostless})
    # (the hosts as identity resolves them, events_id_g: an srun --label console's tasks are on their nodes' clocks
    # only once srun's reports name the node each task ran on)
    files = [f for (f,) in con.execute(
        "SELECT file FROM events_id_g GROUP BY file "
        f"HAVING count(DISTINCT {clock_key('events_id_g')}) > 1 AND bool_or(ts_kind IN {RETOLD}) "
        "ORDER BY file").fetchall()]
    con.execute("CREATE OR REPLACE TEMP TABLE interpolated_times (event_id BIGINT, ts TIMESTAMP)")
    if files:
        con.execute("INSERT INTO interpolated_times " + sql_file("align/interpolated_times.sql"), {"files": files})
    con.execute("INSERT INTO interpolated_times SELECT event_id, ts FROM hostless_clocks")
    zones = zone_shifts(con)
    con.execute("CREATE OR REPLACE TEMP TABLE zone_files (file VARCHAR, shift_us BIGINT)")
    if zones:   # every timed line of such a file, its time as told so far moved by the zone's difference
        con.executemany("INSERT INTO zone_files VALUES (?, ?)", [[z["file"], z["shift_s"] * 1_000_000] for z in zones])
        con.execute("CREATE OR REPLACE TEMP TABLE zone_times AS " + sql_file("align/zone_times.sql"))
        con.execute("DELETE FROM interpolated_times WHERE event_id IN (SELECT event_id FROM zone_times)")
        con.execute("INSERT INTO interpolated_times SELECT event_id, ts FROM zone_times")
    # progress bars with no time of their own, at the times their elapsed counters tell (after the above:
    # a bar line's inherited time on its own clock is where its bounds start)
    con.execute("CREATE OR REPLACE TEMP TABLE bar_times AS " + sql_file("align/bar_clock.sql"), {"files": files})
    con.execute("DELETE FROM interpolated_times WHERE event_id IN (SELECT event_id FROM bar_times)")
    con.execute("INSERT INTO interpolated_times SELECT event_id, ts FROM bar_times")
    if interpolated_stamp(con) != before:
        regroup(con)
    return zones


def retimed_classes(con: duckdb.DuckDBPyConnection) -> str:
    """SQL: the classes whose lines write_interpolated_times may tell another time than before: those whose
    time is interpolated, and those of the lines it told another time, now (temp) or in the store's
    ingest (main: a line of no host retold then and not now is told its own time again)."""
    ids = ['SELECT event_id FROM "{}".main.interpolated_times'.format(d.replace('"', '""')) for (d,) in con.execute(
        "SELECT database_name FROM duckdb_tables() WHERE table_name = 'interpolated_times' "
        "AND database_name IN ('temp', current_database()) ORDER BY 1").fetchall()]
    sql = f"SELECT class_id FROM event_classes WHERE ts_kind IN {RETOLD}"
    if ids:
        sql += f" UNION SELECT class_id FROM event_rows WHERE event_id IN ({' UNION ALL '.join(ids)})"
    return sql


def refresh_aligned(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)make the aligned views over the identity views and clock_offsets as they are now (after
    the groups were split by attempt, or the attempts found), every line in scope. A freeze
    (freeze_aligned) is undone: the views read the live identity views again."""
    from .attempts import scope
    for v in FROZEN:
        con.execute(f"DROP TABLE IF EXISTS temp.{v}_frozen")
    _aligned_view(con, "aligned_events_all", "events_id", True)
    _aligned_view(con, "aligned_events_g", "events_id_g", False)
    con.execute(ALIGNED_GROUPS)
    _aligned_view(con, "hot_events_all", "events_id_h", True)
    scope(con, None)


# The views over few rows that every attempt's detectors read again and again: kept as tables by
# freeze_aligned once the attempts are known (each query of a view resolved the identity and the clock
# of every hot line anew: ~30 queries per attempt scope).
FROZEN = ("hot_events_all", "aligned_groups_all")


def freeze_aligned(con: duckdb.DuckDBPyConnection) -> None:
    """Keep the rows of views hot_events_all and aligned_groups_all (the hot lines and the groups, on
    the aligned clock, with their attempt) in temp tables `<view>_frozen`, the views reading them: the
    same rows, the identity views and the clock resolved once per diagnosis, not per query (on the
    1 GB corpus store, 376k hot lines: the attempts' queries 10.3 -> 5.3 CPU-s, the copy 0.5). (Ordered
    by attempt, for the scopes to skip other attempts' row groups, the copy cost twice as much and the
    queries were no faster.) Made after the attempts are found and the identity links are complete
    (align's add_links); whatever makes the aligned views again (refresh_aligned) drops them."""
    from .attempts import scope
    for v in FROZEN:
        if not table_exists(con, v):
            continue
        con.execute(f"CREATE OR REPLACE TEMP TABLE {v}_frozen AS SELECT * FROM {v}")
        con.execute(f"CREATE OR REPLACE TEMP VIEW {v} AS SELECT * FROM {v}_frozen")
    scope(con, None)


# The steps the clock reads: all of them up to this many distinct ones; past it, an even sample of
# them (every k-th distinct step number, the same on every host). A long run's every rank writes tens
# of thousands of steps (15 M lines of a 1.5 GB run): its anchors held every one (windows over 15 M
# rows, past the ingest's memory) and the estimate paired them all, for offsets that a few hundred
# steps fix as well (a host's offset is the median of its differences).
MAX_STEP_ANCHORS = 512


def anchor_views(con: duckdb.DuckDBPyConnection) -> None:
    """Temp view events_id_a, what anchors.sql reads: events_id of the lines of
    queries/align/anchor_lines.sql only (made once: temp table anchor_src, of the lines of temp table
    anchor_ids, anchor_ids.sql's wider filter on integers); temp table anchor_steps (the step numbers
    the clock reads: MAX_STEP_ANCHORS)."""
    from .identity import base_views, events_views
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE anchor_steps AS
        SELECT step FROM (SELECT step, row_number() OVER (ORDER BY step) - 1 AS i, count(*) OVER () AS n
                          FROM (SELECT DISTINCT step FROM event_rows WHERE step IS NOT NULL))
        WHERE i % CAST(ceil(n / {MAX_STEP_ANCHORS}) AS BIGINT) = 0""")
    con.execute("CREATE OR REPLACE TEMP TABLE anchor_ids AS " + sql_file("align/anchor_ids.sql"))
    con.execute("CREATE OR REPLACE TEMP TABLE anchor_src AS " + sql_file("align/anchor_lines.sql"))
    base_views(con, "anchor_src", "_a")
    events_views(con, "_a")


def _hot_lines(con: duckdb.DuckDBPyConnection) -> None:
    """Temp table hot_lines (hot_ids.sql's lines, whole) and temp view hot_line_events: view events over them."""
    from ..store import events_over
    con.execute("CREATE OR REPLACE TEMP TABLE hot_lines AS " + sql_file("align/hot_ids.sql"))
    events_over(con, "temp.hot_lines", "hot_line_events")


def _hot_events(con: duckdb.DuckDBPyConnection) -> None:
    """Temp table hot_src: the events that pass the filter of queries/align/hot_events.sql, made once
    (one scan); refresh_aligned makes temp view hot_events over it. The filter reads only columns
    identity and clock leave as they are, so it runs once on `events`, and identity and clock then
    resolve only the rows a detector reads (row by row, with the links of the whole store: the rows
    the whole view would give)."""
    from .identity import base_views, events_views, events_with_keys
    where = sql_file("align/hot_events.sql").split("\nWHERE ", 1)[1]
    # (on the lines of hot_ids.sql only, taken whole in its one pass: its wider filter reads the lines'
    # integers, marks and raw, not the message view event_rows cuts out of every line; events_keyed's
    # columns over them, so that no second pass looks the lines up by id)
    line_set(con, "hot_src", f"SELECT * FROM ({events_with_keys(con, 'hot_line_events')}) WHERE (" + where + ")",
             prepare=_hot_lines)
    # (no view left over a table gone: readers list the views' columns, report.build.known_hosts)
    con.execute("DROP VIEW IF EXISTS temp.hot_line_events")
    if table_exists(con, "hot_lines"):
        # selected now: the lines are what store_line_sets keeps of hot_src (STORED_AS), taken there with
        # hot_src's event ids (copying them here as well cost 0.25 CPU-s of the 0.55 the slim copy saves);
        # a read-only reader keeps nothing (memory)
        con.execute("DROP TABLE IF EXISTS temp.hot_src_lines")
        if con.execute("SELECT current_setting('access_mode')").fetchone()[0] == "read_only":
            con.execute("DROP TABLE temp.hot_lines")
        else:
            con.execute("ALTER TABLE temp.hot_lines RENAME TO hot_src_lines")
    base_views(con, "hot_src", "_h")
    events_views(con, "_h")


# The lines of hot_events.sql's filter (thousands of rows among millions), kept in the store by the
# ingest that found them (store.refresh_summaries, which runs the attempts, hence the filter): a reader
# then does not scan every line again (with the lines as Parquet, that scan was a third of `diagnose`).
# As for the groups (identity.groups_stamp), a stamp says what they were made of: the SQL that selected
# them (with view events_keyed as this reader makes it) and the store's events; a reader whose SQL or
# store differs selects them anew.
LINE_SETS = ("hot_src",)
# What the store keeps of a line set: its lines as event_lines has them (temp table <name>_lines: a line's
# own columns, its class id and its message as a span of raw), not the rows of view events_keyed, whose
# 17 class columns (event_classes holds them once) and message (raw's text a second time) made the copy
# into the store 1.0 CPU-s of a 1 GB ingest's end (376 k hot lines; the lines alone: 0.45, benchmarks/
# README.md, session 15). A reader makes the rows again from them as the ingest made them from the lines
# (the schema's views over them, then events_with_keys): `_stored_view`. The stamp says so (STORED_AS):
# a store whose set was kept whole selects its lines anew.
STORED_AS = "event_lines"


def _line_set_stamp(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    import hashlib
    view = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'events_keyed' AND temporary").fetchall()
    n_events = con.execute("SELECT count(*) FROM event_rows").fetchone()[0]
    files = con.execute("SELECT count(*), sum(file_id), sum(events) FROM files").fetchone()
    # the classes as they are (their host, kind, role: a store edited after its ingest selects anew)
    classes = con.execute("SELECT count(*), sum(hash(c)) FROM event_classes c").fetchone()
    return hashlib.sha256(f"{view}\0{sql}\0{n_events}\0{files}\0{classes}".encode()).hexdigest()


def line_set(con: duckdb.DuckDBPyConnection, name: str, sql: str, prepare=None) -> None:
    """Temp relation `name` (one of LINE_SETS): the rows of `sql`, read from the store when its ingest
    kept them for the same SQL and events, else selected now (and its stamp noted for store_line_sets);
    `prepare(con)` makes what `sql` reads beside the views, only then."""
    stamp = _line_set_stamp(con, f"{sql}\0{STORED_AS}")
    if table_exists(con, f"{name}_stored"):
        got = con.execute("SELECT value FROM main.meta WHERE key = ?", [f"{name}_stamp"]).fetchone()
        if got and got[0] == stamp:
            _drop_temp(con, name)
            _stored_view(con, name)
            return
    _drop_temp(con, name)
    if prepare is not None:
        prepare(con)
    con.execute(f"CREATE TEMP TABLE {name} AS {sql}")
    con.execute("CREATE TEMP TABLE IF NOT EXISTS line_set_stamps (name VARCHAR PRIMARY KEY, stamp VARCHAR)")
    con.execute("INSERT OR REPLACE INTO line_set_stamps VALUES (?, ?)", [name, stamp])


def _stored_view(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Temp view `name` over the store's kept lines of line set `name` (STORED_AS): the rows `line_set`'s
    SQL selected from the same lines, as its SQL made them (views event_rows and events over them, then
    events_with_keys), less its filter, which those lines passed."""
    from ..store import events_over
    from .identity import events_with_keys
    events_over(con, f"main.{name}_stored", f"{name}_stored_events")
    con.execute(f"CREATE TEMP VIEW {name} AS {events_with_keys(con, f'{name}_stored_events')}")


def _drop_temp(con: duckdb.DuckDBPyConnection, name: str) -> None:
    for (kind,) in con.execute("SELECT 'VIEW' FROM duckdb_views() WHERE temporary AND view_name = ? UNION ALL "
                               "SELECT 'TABLE' FROM duckdb_tables() WHERE temporary AND table_name = ?",
                               [name, name]).fetchall():
        con.execute(f"DROP {kind} temp.{name}")


# Rows that the attempts read from every line on the aligned clock (ranktrace.correlate.attempts.collect:
# the seconds in which the job trained, each rank's steps per minute), kept in the store by the ingest that
# found them, as the line sets are: on a long run they are a pass over every progress line (15 M lines of
# a 1.5 GB run), for a few thousand rows. Their stamp adds what they are made of beyond their SQL: the
# clock offsets and interpolated times they were read with (a diagnosis with --offset pins reads them
# anew), the code that makes what the SQL reads beside the views (`prepare`) and the identity code that
# resolves a line's host and rank (identity_code).
KEPT_ROWS = ("progress_seconds", "step_buckets")


def identity_code() -> tuple:
    """What made_of is told of the code behind the identity views (events_keyed, events_id and their
    twins over a subset): identity.py and what it imports of the package, as code (util.made_of)."""
    from . import identity
    from .util import with_imports
    return with_imports(identity)


def kept_rows(con: duckdb.DuckDBPyConnection, name: str, sql: str, prepare=None) -> list[dict]:
    """The rows of `sql` (one of KEPT_ROWS, over the aligned views), in its order: from the store when
    its ingest kept them for the same SQL, events, clock offsets, interpolated times and code (`prepare`,
    identity_code), else read now (and their stamp noted for store_line_sets)."""
    from .identity import interpolated_stamp
    from .util import made_of
    offsets = con.execute("SELECT * FROM temp.clock_offsets ORDER BY ALL").fetchall()
    made = made_of(sql, *([prepare] if prepare is not None else []), *identity_code())
    stamp = _line_set_stamp(con, f"{made}\0{offsets}\0{interpolated_stamp(con)}")
    if table_exists(con, f"{name}_stored"):
        got = con.execute("SELECT value FROM main.meta WHERE key = ?", [f"{name}_stamp"]).fetchone()
        if got and got[0] == stamp:
            return rows(con, f"SELECT * EXCLUDE (row_no) FROM main.{name}_stored ORDER BY row_no")
    _drop_temp(con, name)
    if prepare is not None:   # what `sql` reads beside the views (made only when the lines are read)
        prepare(con)
    import pyarrow as pa
    got = con.sql(sql).to_arrow_table()   # (in its order: row_no keeps it)
    got = got.append_column("row_no", pa.array(range(got.num_rows), pa.int64()))
    con.register("_kept_rows", got)
    try:
        con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM _kept_rows")
    finally:
        con.unregister("_kept_rows")
    con.execute("CREATE TEMP TABLE IF NOT EXISTS line_set_stamps (name VARCHAR PRIMARY KEY, stamp VARCHAR)")
    con.execute("INSERT OR REPLACE INTO line_set_stamps VALUES (?, ?)", [name, stamp])
    return rows(con, f"SELECT * EXCLUDE (row_no) FROM temp.{name} ORDER BY row_no")


def forget_line_sets(con: duckdb.DuckDBPyConnection) -> None:
    for name in (*LINE_SETS, *KEPT_ROWS, "clock_anchors"):
        con.execute(f"DROP TABLE IF EXISTS main.{name}_stored")
        con.execute("DELETE FROM main.meta WHERE key = ?", [f"{name}_stamp"])


# The anchors of the clock estimate (anchors.sql's rows: per host and key, a few thousand), kept in the
# store by the ingest that found them: anchor_lines.sql keeps every progress line, and a long run whose
# every rank prints its steps (15 M lines of 15.4 M in a 1.5 GB run) made them most of `diagnose`
# (step numbers read from every line, then grouped). The stamp holds what they are made of: the store's
# events, view events_keyed (what anchor_lines.sql reads), the three SQL files, anchor_views (which makes
# the tables and views they read, and its constant MAX_STEP_ANCHORS) and the identity code that resolves
# a line's host (identity_code). (Not every temporary view: those of the attempts differ between an
# ingest, which finds the attempts after the clock, and a reader.)
def _anchors_stamp(con: duckdb.DuckDBPyConnection) -> str:
    from .util import made_of
    files = (sql_file(f"align/{f}.sql") for f in ("anchor_ids", "anchor_lines", "anchors"))
    return _line_set_stamp(con, made_of(*files, anchor_views, *identity_code()))


def anchor_rows(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """anchors.sql's rows: from the store when its ingest kept them with the same stamp, else read from
    the lines (anchor_views), and their stamp noted for store_line_sets."""
    stamp = _anchors_stamp(con)
    if table_exists(con, "clock_anchors_stored"):
        got = con.execute("SELECT value FROM main.meta WHERE key = 'clock_anchors_stamp'").fetchone()
        if got and got[0] == stamp:
            return rows(con, "SELECT * FROM main.clock_anchors_stored ORDER BY ALL")
    anchor_views(con)
    con.execute("CREATE OR REPLACE TEMP TABLE clock_anchors AS " + sql_file("align/anchors.sql"))
    con.execute("CREATE TEMP TABLE IF NOT EXISTS line_set_stamps (name VARCHAR PRIMARY KEY, stamp VARCHAR)")
    con.execute("INSERT OR REPLACE INTO line_set_stamps VALUES ('clock_anchors', ?)", [stamp])
    return rows(con, "SELECT * FROM clock_anchors ORDER BY ALL")


def store_line_sets(con: duckdb.DuckDBPyConnection) -> None:
    """Keep the line sets this connection just selected (temp tables of line_set) in the store."""
    if not table_exists(con, "line_set_stamps"):
        return
    for name, stamp in con.execute("SELECT name, stamp FROM temp.line_set_stamps ORDER BY name").fetchall():
        if name in LINE_SETS:   # a line set: its lines (STORED_AS), those of its rows
            con.execute(f"CREATE OR REPLACE TABLE main.{name}_stored AS SELECT * FROM temp.{name}_lines "
                        f"WHERE event_id IN (SELECT event_id FROM temp.{name})")
            con.execute(f"DROP TABLE temp.{name}_lines")   # (memory: the rest of the ingest reads temp.{name})
        else:
            con.execute(f"CREATE OR REPLACE TABLE main.{name}_stored AS SELECT * FROM temp.{name}")
        con.execute("INSERT OR REPLACE INTO main.meta VALUES (?, ?)", [f"{name}_stamp", stamp])


def align(con: duckdb.DuckDBPyConnection, offsets: dict[str, float] | None = None) -> list[dict]:
    """Identity + clock + aligned view in one call; returns the clock list."""
    from .identity import add_links, build_identity
    from .util import rows
    build_identity(con)
    clock = estimate_offsets(con, offsets)
    create_aligned_view(con, clock)
    # launcher exit reports (Root Cause / Failures entries line by line) link host+pid to rank
    add_links(con, rows(con, "SELECT DISTINCT host, rank, local_rank, pid FROM ("
                   + sql_file("detect/worker_exits.sql").replace("aligned_events", "hot_events")
                   + ") WHERE host IS NOT NULL AND pid IS NOT NULL"), "launcher_exits")
    return clock
