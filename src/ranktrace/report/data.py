"""Store queries for the report and the exports (read-only SQL on the store).

Every function takes a DuckDB connection (read-only is enough) and returns
plain Python values; times are naive UTC datetimes. "Aligned" times are the
logged time minus the host's clock offset from the verdict's `clock` list
(design.md section 4): aligned = ts - offset_s.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from ..clock_key import clock_key
from ..correlate.util import has_rows
from ..store import EVENT_TABLES, PART_FACTS

# Events that say how a process / task / node ended (the "exit" column).
EXIT_KINDS = ("process_exit", "killed_signal", "crash_signal", "host_oom", "gpu_oom", "task_exit",
              "worker_failed", "step_end", "step_cancelled", "container_state", "watchdog_abort",
              "time_limit", "cancelled", "node_failure")
# Lifecycle kinds that mark phases (slices in the Perfetto export, rows of the timeline).
PHASE_KINDS = ("rdzv_join", "rdzv_complete", "worker_start", "comm_init", "step_start", "progress")


# ---------------------------------------------------------------- time helpers

# A time outside these years is a bogus one (a year 0001 or 9999 in a log line):
# the report treats it as no time (never aligned, ordered or drawn).
SANE_YEARS = (1990, 2100)


def plausible(dt: datetime | None) -> bool:
    return dt is not None and SANE_YEARS[0] <= dt.year < SANE_YEARS[1]


def parse_time(v) -> datetime | None:
    """An ISO 8601 string (verdict JSON) or a datetime -> naive UTC datetime."""
    if v is None or v == "":
        return None
    if isinstance(v, datetime):
        dt = v
    else:
        s = str(v).strip().replace(" ", "T", 1)
        if s.endswith("Z") or s.endswith("z"):
            s = s[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(s)
        except ValueError:
            return None
    if dt.tzinfo is not None:
        try:
            dt = dt.astimezone(timezone.utc).replace(tzinfo=None)
        except (OverflowError, ValueError):
            return None
    return dt if plausible(dt) else None


def iso(dt: datetime | None) -> str | None:
    """2026-03-02T03:17:41.200Z (milliseconds, UTC)."""
    if dt is None:
        return None
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def hms(dt: datetime | None, date: bool = False) -> str:
    if dt is None:
        return "—"
    s = dt.strftime("%H:%M:%S.") + f"{dt.microsecond // 1000:03d}"
    return (dt.strftime("%Y-%m-%d ") + s) if date else s


def offsets_from_verdict(verdict: dict | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for c in (verdict or {}).get("clock") or []:
        h = c.get("host")
        if h is not None and c.get("offset_s") is not None:
            try:
                out[str(h)] = float(c["offset_s"])
            except (TypeError, ValueError):
                pass
    return out


def align(ts: datetime | None, host: str | None, offsets: dict[str, float]) -> datetime | None:
    if not plausible(ts):
        return None
    off = offsets.get(host or "", 0.0) if host is not None else 0.0
    return ts - timedelta(seconds=off) if off else ts


def _off_cte(offsets: dict[str, float]) -> tuple[str, list]:
    if not offsets:
        return "off(host, offset_s) AS (SELECT NULL::VARCHAR, 0.0::DOUBLE WHERE false)", []
    vals = ", ".join("(?, ?::DOUBLE)" for _ in offsets)
    params: list = []
    for h, o in sorted(offsets.items()):
        params += [h, float(o)]
    return f"off(host, offset_s) AS (VALUES {vals})", params


# A line's offset: its host's, or its file's when it names no host (a Slurm controller's log: the verdict's
# clock keys it '@' + path, ranktrace.correlate.clock.controller_clocks).
OFF_JOIN = f"LEFT JOIN off o ON o.host = {clock_key('e')}"
ATS = ("CASE WHEN e.ts >= TIMESTAMP '1990-01-01' AND e.ts < TIMESTAMP '2100-01-01' "   # SANE_YEARS: else NULL
       "THEN e.ts - to_microseconds(CAST(round(coalesce(o.offset_s, 0) * 1e6) AS BIGINT)) END")
# A timed event: its time is not a bogus year (SANE_YEARS); the others are left out of
# the timeline, the lanes and the trace like untimed ones.
TIMED = "(e.ts >= TIMESTAMP '1990-01-01' AND e.ts < TIMESTAMP '2100-01-01')"

# A progress marker: kind 'progress', or (until every format classifies its step
# lines) a message that names a step / iteration number.
PROGRESS = (r"(e.kind = 'progress' OR (coalesce(e.role, 'info') = 'info' AND regexp_matches(e.message, "
            r"'(?i)\b(step|iter|iteration|global_step|epoch)\b\s*[:=#]?\s*\d+')))")


def events_source(con) -> str:
    """`events_id` (events with rank / local_rank / host filled from the identity
    links of ranktrace.correlate) when the connection has it, else `events`.
    The identity table is built here if correlate is installed and the
    connection does not have it yet (temp objects only: read-only is fine)."""
    def have() -> bool:
        return bool(con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = 'events_id'").fetchone()[0])
    if not have():
        try:
            from ranktrace.correlate.identity import build_identity  # optional: the diagnose side
            build_identity(con)
        except Exception:  # not installed, or an older store: plain events
            pass
    src = "events_id" if have() else "events"
    if has_rows(con, "interpolated_times"):   # an interpolated time told on the line's own clock, as diagnose does
        con.execute(f"CREATE OR REPLACE TEMP VIEW report_lines AS SELECT e.* REPLACE (coalesce(it.ts, e.ts) AS ts) "
                    f"FROM {src} e LEFT JOIN interpolated_times it ON it.event_id = e.event_id")
        src = "report_lines"
    # --tee copies of a line (table echoes, queries/store/echoes.sql) are shown once
    if con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'echoes'").fetchone()[0]:
        con.execute(f"CREATE OR REPLACE TEMP VIEW report_events AS SELECT * FROM {src} "
                    "WHERE event_id NOT IN (SELECT event_id FROM echoes)")
        return "report_events"
    return src


def _rows(con, sql: str, params: list | None = None) -> list[dict]:
    cur = con.execute(sql, params or [])
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def tables(con) -> set[str]:
    return {r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
        "AND table_type = 'BASE TABLE'").fetchall()}


def fact_tables(con) -> list[str]:
    """Typed fact tables: every base table with an event_id column, but the
    events' own (view `events`: store.EVENT_TABLES), and the views over the
    parts' files of those kept there (store.PART_FACTS)."""
    rows = con.execute(
        "SELECT DISTINCT c.table_name FROM information_schema.columns c JOIN information_schema.tables t "
        "ON t.table_name = c.table_name AND t.table_schema = c.table_schema "
        "WHERE c.table_schema = 'main' AND c.column_name = 'event_id' AND (t.table_type = 'BASE TABLE' "
        f"OR t.table_name IN ({', '.join(repr(t) for t in PART_FACTS)})) "
        "ORDER BY 1").fetchall()
    return [r[0] for r in rows if r[0] not in ("events", *EVENT_TABLES)]


# ---------------------------------------------------------------- the job

def job_info(con) -> dict:
    one = con.execute(
        f"SELECT count(*), count(DISTINCT host), count(DISTINCT rank), min(ts) FILTER (WHERE {TIMED}), "
        f"max(ts) FILTER (WHERE {TIMED}), count(*) FILTER (WHERE format = 'raw') FROM events e").fetchone()
    files = con.execute("SELECT count(*) FROM files").fetchone()[0]
    jobs = [r[0] for r in con.execute(
        "SELECT job_id FROM events WHERE job_id IS NOT NULL AND job_id <> '' "
        "GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 5").fetchall()]
    hosts = [r[0] for r in con.execute(
        "SELECT DISTINCT host FROM events WHERE host IS NOT NULL ORDER BY 1").fetchall()]
    formats = [r[0] for r in con.execute(
        "SELECT format FROM events GROUP BY 1 ORDER BY count(*) DESC, 1").fetchall()]
    paths = [r[0] for r in con.execute("SELECT path FROM files ORDER BY path").fetchall()]
    world = con.execute("SELECT max(rank) FROM events").fetchone()[0]
    return {
        "job_ids": jobs, "files": files, "events": one[0], "hosts": hosts, "n_hosts": one[1],
        "n_ranks": one[2], "max_rank": world, "first_ts": one[3], "last_ts": one[4], "unparsed": one[5],
        "formats": formats, "paths": paths,
    }


def common_root(paths: list[str]) -> str:
    """The directory prefix all file paths share ('' when none): the report shows
    paths relative to it (the analyst's own directories are noise in a ticket)."""
    if not paths:
        return ""
    split = [p.replace("!", "/").split("/")[:-1] for p in paths]
    pre = split[0]
    for s in split[1:]:
        n = 0
        while n < min(len(pre), len(s)) and pre[n] == s[n]:
            n += 1
        pre = pre[:n]
    return "/".join(pre) + "/" if pre else ""


# ---------------------------------------------------------------- lookups

def event_at(con, file: str, line: int | None, src: str = "events") -> dict | None:
    """The event of file:line (the file name may be given shorter than stored)."""
    if file is None or line is None:
        return None
    sql = ("SELECT event_id, file, line, end_line, ts, ts_kind, host, rank, local_rank, pid, kind, role, "
           "severity, message, raw FROM " + src + " WHERE {} AND line <= ? AND end_line >= ? "
           "ORDER BY line DESC LIMIT 1")
    r = _rows(con, sql.format("file = ?"), [file, int(line), int(line)])
    if not r:
        r = _rows(con, sql.format("(file LIKE ? OR file LIKE ?)"),
                  ["%/" + file, "%!" + file, int(line), int(line)])
    return r[0] if r else None


def context(con, file: str, line: int, before: int = 3, after: int = 3, max_block: int = 16) -> list[dict]:
    """Lines around file:line from the store: [{line, text, hit}] (blocks expanded;
    a block longer than max_block lines keeps its head and tail, line None between)."""
    ev = event_at(con, file, line)
    if ev is None:
        return []
    f = ev["file"]
    lo, hi = int(ev["line"]) - before, int(ev["end_line"]) + after
    rows = con.execute(
        "SELECT line, end_line, raw FROM events WHERE file = ? AND end_line >= ? AND line <= ? ORDER BY line",
        [f, lo, hi]).fetchall()
    out: list[dict] = []
    for ln, end, raw in rows:
        for i, text in enumerate(str(raw).split("\n")):
            n = ln + i
            if lo <= n <= hi:
                out.append({"line": n, "text": text.rstrip("\r"),
                            "hit": ev["line"] <= n <= ev["end_line"]})
    hit = [o for o in out if o["hit"]]
    if len(hit) > max_block:  # a long block (traceback, summary): its head and its tail
        head, tail = hit[:max_block - 6], hit[-6:]
        gap = {"line": None, "text": f"⋮ ({len(hit) - len(head) - len(tail)} more lines)", "hit": True}
        out = ([o for o in out if o["line"] < ev["line"]] + head + [gap] + tail
               + [o for o in out if o["line"] > ev["end_line"]])
    return out


# ---------------------------------------------------------------- status per rank / node

def status(con, offsets: dict[str, float], src: str = "events") -> list[dict]:
    """One row per (host, rank): events, first/last time (aligned), last progress,
    last line, how it ended, first cause. Node-level lines (agents, daemons,
    kernel) have rank NULL."""
    cte, params = _off_cte(offsets)
    kinds = ", ".join(f"'{k}'" for k in EXIT_KINDS)
    sql = f"""
    WITH {cte},
    ev AS (
        SELECT e.host, e.rank, e.local_rank, e.file, e.line, e.kind, e.role, e.message, e.raw,
               {ATS} AS ats, {PROGRESS} AS is_progress
        FROM {src} e {OFF_JOIN}
        WHERE e.host IS NOT NULL OR e.rank IS NOT NULL
    ),
    keyed AS (
        -- a lane's last line is the one that says something (a '=====' separator is not a last
        -- word), then the latest, then the highest line and file: the largest of this key, unique
        -- per line, kept as the scan goes (a window over every line held them all in memory:
        -- 2.2 GB for a 512 MB corpus)
        SELECT *, (regexp_matches(raw, '[A-Za-z0-9]'), coalesce(ats, TIMESTAMP '-infinity'), line, file) AS last_key
        FROM ev
    )
    SELECT host, rank, max(local_rank) AS local_rank, count(*) AS events,
           min(ats) AS first_ts, max(ats) AS last_ts,
           max(ats) FILTER (WHERE is_progress) AS last_progress_ts,
           -- ties (the same line in two files) go to the first file by name: no dependence on ingest order
           last(message ORDER BY ats, file DESC, line) FILTER (WHERE is_progress AND ats IS NOT NULL) AS last_progress,
           arg_max(raw, last_key) AS last_line,
           arg_max(file, last_key) AS last_file,
           arg_max(line, last_key) AS last_line_no,
           last(coalesce(message, raw) ORDER BY ats, file DESC, line)
               FILTER (WHERE kind IN ({kinds}) AND ats IS NOT NULL) AS exit,
           first(kind ORDER BY ats, file, line) FILTER (WHERE role = 'cause' AND ats IS NOT NULL) AS first_cause,
           count(*) FILTER (WHERE role = 'cause') AS causes,
           count(*) FILTER (WHERE role = 'symptom') AS symptoms
    FROM keyed
    GROUP BY host, rank
    ORDER BY host NULLS LAST, rank NULLS FIRST
    """
    return _rows(con, sql, params)


def agent_exits(con, src: str = "events") -> dict[tuple, str]:
    """(host, local_rank) -> the agent's exit line for that worker, from node-level
    lines that name a local rank ("failed (exitcode: -9) local_rank: 1 (pid: 3532)"):
    the rank itself often says nothing about how it ended."""
    rows = con.execute(rf"""
        SELECT host, CAST(regexp_extract(message, 'local_rank:? *(\d+)', 1) AS INTEGER) AS lr,
               last(message ORDER BY coalesce(ts, TIMESTAMP '1970-01-01'), file DESC, line) AS msg
        FROM {src}
        WHERE host IS NOT NULL AND rank IS NULL AND kind IN ('worker_failed', 'process_exit', 'killed_signal',
                                                             'crash_signal')
          AND regexp_matches(message, 'local_rank:? *\d+')
        GROUP BY ALL""").fetchall()
    return {(h, lr): m for h, lr, m in rows if lr is not None}


# ---------------------------------------------------------------- key events

def first_events(con, offsets: dict[str, float], limit: int = 80, src: str = "events") -> list[dict]:
    """The first event of each (host, kind) that is not plain info, plus the last
    progress marker of each host: the skeleton of the incident's timeline."""
    cte, params = _off_cte(offsets)
    sql = f"""
    WITH {cte},
    ev AS (
        SELECT e.file, e.line, e.ts, e.host, e.rank, e.kind, e.role, e.message, e.raw, {ATS} AS ats
        FROM {src} e {OFF_JOIN}
        WHERE {TIMED} AND e.kind IS NOT NULL AND (e.role <> 'info' OR e.kind = 'progress')
    ),
    picked AS (
        -- the first (the last, of progress) by (ats, file, line), unique per line, kept as the
        -- scan goes: a window held every such line with its text (0.8 GB for a 512 MB corpus)
        SELECT CASE WHEN kind = 'progress' THEN arg_max(ev, (ats, file, line))
                    ELSE arg_min(ev, (ats, file, line)) END AS e
        FROM ev
        GROUP BY host, kind
    )
    SELECT e.file, e.line, e.ts, e.ats, e.host, e.rank, e.kind, e.role, e.message, e.raw FROM picked
    ORDER BY e.ats, e.file, e.line
    LIMIT {int(limit)}
    """
    return _rows(con, sql, params)


def count_kind(con, kind: str) -> int:
    return con.execute("SELECT count(*) FROM events WHERE kind = ?", [kind]).fetchone()[0]


# ---------------------------------------------------------------- lanes (SVG timeline, Perfetto)

def lanes(con, offsets: dict[str, float], max_marks: int = 2000, src: str = "events"
          ) -> tuple[list[dict], list[dict]]:
    """Lanes (host, rank) with first/last aligned times, and marks: the events
    that are not plain info (first and last of each kind per lane, all causes),
    capped at max_marks."""
    cte, params = _off_cte(offsets)
    lane_rows = _rows(con, f"""
        WITH {cte}
        SELECT e.host, e.rank, max(e.local_rank) AS local_rank, min({ATS}) AS first_ts, max({ATS}) AS last_ts,
               count(*) AS events
        FROM {src} e {OFF_JOIN}
        WHERE (e.host IS NOT NULL OR e.rank IS NOT NULL)
        GROUP BY e.host, e.rank ORDER BY e.host NULLS LAST, e.rank NULLS FIRST""", params)
    marks = _rows(con, f"""
        WITH {cte},
        ev AS (
            SELECT e.file, e.line, e.host, e.rank, e.kind, e.role, e.message, {ATS} AS ats
            FROM {src} e {OFF_JOIN}
            WHERE {TIMED} AND (e.host IS NOT NULL OR e.rank IS NOT NULL)
              AND e.kind IS NOT NULL AND e.role <> 'info'
        ),
        -- the first and the last by (ats, file, line), unique per line, kept as the scan goes (a
        -- window held every such line with its text)
        ends AS (
            SELECT arg_min(ev, (ats, file, line)) AS lo, arg_max(ev, (ats, file, line)) AS hi
            FROM ev GROUP BY host, rank, kind
        ),
        picked AS (
            SELECT ev AS m FROM ev WHERE role = 'cause'
            UNION ALL SELECT lo FROM ends WHERE lo.role <> 'cause'
            UNION ALL SELECT hi FROM ends WHERE hi.role <> 'cause' AND (hi.file, hi.line) <> (lo.file, lo.line)
        )
        SELECT m.file, m.line, m.host, m.rank, m.kind, m.role, m.message, m.ats FROM picked
        ORDER BY (m.role = 'cause') DESC, m.ats, m.file, m.line
        LIMIT {int(max_marks)}""", params)
    marks.sort(key=lambda m: (m["ats"], m["file"], m["line"]))
    return lane_rows, marks
