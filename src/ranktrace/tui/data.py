"""The TUI's one data-access module: every read the app makes goes through here.

No textual import in this module (a test proves it): it is plain Python over a
read-only DuckDB connection, safe to call from worker threads. Every call opens
its own cursor (a DuckDB cursor is a separate connection to the same database),
so workers never share a connection; `interrupt()` cancels the running user
query.

Nothing here loads all events: the timeline reads per-lane, per-time-bucket
aggregates for the visible lanes and window; the event list reads pages.

Times: the store holds UTC `ts` as logged. The aligned time of an event is
`epoch(ts) - offset_s(host)`, offsets taken from the verdict's `clock` list
(design.md section 4). All times handed to the app are float epoch seconds,
aligned unless named `orig`.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import duckdb

from ..clock_key import clock_key
from ..query import QueryRefused, check_statements
from ..store import logged_window, year_segments

SEVERITIES = ("debug", "info", "notice", "warning", "error", "critical")
SEV_RANK = {s: i for i, s in enumerate(SEVERITIES)}
ROLES = ("cause", "symptom", "lifecycle", "info")
ERROR_SEV = SEV_RANK["error"]
NO_HOST = "(no host)"

# A time outside 1990..2100 is a bogus year: kept out of spans and ordering.
_SANE = "ts >= TIMESTAMP '1990-01-01' AND ts < TIMESTAMP '2100-01-01'"
_SEV_SQL = ("CASE severity WHEN 'debug' THEN 0 WHEN 'info' THEN 1 WHEN 'notice' THEN 2 "
            "WHEN 'warning' THEN 3 WHEN 'error' THEN 4 WHEN 'critical' THEN 5 ELSE 1 END")
# lane_buckets serves a timeline cell when the cell is at least this many slots wide.
BUCKET_SLOTS_PER_CELL = 4
# The node-level source of an event without a rank: slurmd, kubelet, kernel, ...
_SRC_SQL = "CASE WHEN rank IS NULL THEN coalesce(program, format, 'log') END"
# The lane group of an event: its host; else its Kubernetes pod ("pod NAME": a
# pod's ranks get their own group, not one "(no host)" for the whole job).
POD_PREFIX = "pod "


def lane_host_sql(with_pod: bool = True) -> str:
    if not with_pod:   # a store whose lanes tables predate the pod column
        return f"coalesce(host, '{NO_HOST}')"
    return f"coalesce(host, '{POD_PREFIX}' || pod, '{NO_HOST}')"


_LH = lane_host_sql()
_CLOCK_KEY = clock_key()


def _host_pred(hosts: list[str], lh: str) -> str:
    """Rows whose lane group is one of `hosts` (host IN (...) first: it prunes)."""
    real = [h for h in hosts if h != NO_HOST and not h.startswith(POD_PREFIX)]
    other = [h for h in hosts if h not in real]
    parts = []
    if real:
        parts.append("host IN (" + ",".join(_q(h) for h in real) + ")")
    if other:
        parts.append(f"(host IS NULL AND {lh} IN (" + ",".join(_q(h) for h in other) + "))")
    return "(" + " OR ".join(parts) + ")" if parts else "FALSE"


# --------------------------------------------------------------------------- types

@dataclass(frozen=True)
class Lane:
    """One row of the timeline: a rank on a host, or a node-level source."""
    host: str            # NO_HOST when the events carry no host
    rank: int | None     # None for a node-level lane
    source: str | None   # program/format for a node-level lane, None for a rank lane
    events: int = 0
    errors: int = 0
    causes: int = 0
    first: float | None = None   # aligned epoch seconds
    last: float | None = None

    @property
    def key(self) -> tuple:
        return (self.host, self.rank, self.source)

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else (self.source or "log")


@dataclass
class Bucket:
    count: int
    sev: int          # max severity (index into SEVERITIES)
    cause: bool
    symptom: bool


@dataclass
class Filters:
    """Event-list filters. Empty fields match everything."""
    text: str = ""
    kind: str = ""
    min_severity: str = ""        # one of SEVERITIES
    role: str = ""                # cause|symptom|lifecycle|info, or "cause,symptom"
    host: str = ""
    rank: int | None = None

    def active(self) -> bool:
        return bool(self.text or self.kind or self.min_severity or self.role or self.host
                    or self.rank is not None)

    def describe(self) -> str:
        """The filters in the filter bar's own syntax (sev:error role:cause text)."""
        parts = []
        if self.min_severity:
            parts.append(f"sev:{self.min_severity}")
        if self.role:
            parts.append(f"role:{self.role}")
        if self.kind:
            parts.append(f"kind:{self.kind}")
        if self.host:
            parts.append(f"host:{self.host}")
        if self.rank is not None:
            parts.append(f"rank:{self.rank}")
        if self.text:
            parts.append(self.text)
        return " ".join(parts) or "none"

    @classmethod
    def parse(cls, text: str) -> "Filters":
        """`sev:error role:cause kind:oom host:n1 rank:5 free text` -> Filters."""
        f = cls()
        free = []
        for tok in text.split():
            key, sep, val = tok.partition(":")
            key = key.lower()
            if sep and val and key in ("sev", "severity"):
                v = val.lower()
                match = [s for s in SEVERITIES if s.startswith(v)]
                f.min_severity = match[0] if match else ""
            elif sep and val and key == "role":
                f.role = val.lower()
            elif sep and val and key == "kind":
                f.kind = val
            elif sep and val and key == "host":
                f.host = val
            elif sep and val and key == "rank":
                try:
                    f.rank = int(val)
                except ValueError:
                    free.append(tok)
            else:
                free.append(tok)
        f.text = " ".join(free)
        return f


@dataclass
class EventRow:
    event_id: int
    time: float | None       # aligned
    orig: float | None       # as logged (UTC)
    host: str | None
    rank: int | None
    severity: str
    role: str
    kind: str | None
    message: str
    file: str
    line: int
    source: str | None = None   # the node-level lane source when rank is None
    pod: str | None = None      # the Kubernetes pod


@dataclass
class QueryResult:
    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    truncated: bool = False      # more rows than the limit exist
    error: str | None = None
    seconds: float = 0.0
    cancelled: bool = False

    @property
    def summary(self) -> str:
        if self.error:
            return f"error: {self.error}"
        n = len(self.rows)
        shown = f"{n} of >{n}" if self.truncated else str(n)
        return f"{shown} row{'s' if n != 1 or self.truncated else ''} in {self.seconds:.2f} s"


@dataclass
class CannedQuery:
    name: str
    path: Path
    description: str
    params: str
    sql: str


# --------------------------------------------------------------------------- helpers

def fmt_time(t: float | None, precision: int = 3) -> str:
    """Aligned epoch seconds -> 'YYYY-MM-DD HH:MM:SS.mmm' (UTC)."""
    if t is None:
        return "-"
    try:
        d = datetime.fromtimestamp(t, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):   # a bogus year from a log line
        return "?"
    s = d.strftime("%Y-%m-%d %H:%M:%S")
    if precision:
        s += f".{int(round((t % 1) * 10 ** precision)) % 10 ** precision:0{precision}d}"
    return s


def parse_time(v: Any) -> float | None:
    """An ISO 8601 string / datetime / number -> epoch seconds (naive = UTC)."""
    if v is None or v == "":
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, datetime):
        d = v
    else:
        s = str(v).strip().replace("Z", "+00:00")
        try:
            d = datetime.fromisoformat(s)
        except ValueError:
            return None
    if d.tzinfo is None:
        d = d.replace(tzinfo=timezone.utc)
    return d.timestamp()


def failure_window(ext: tuple[float, float] | None, ff: float | None,
                   end: float | None) -> tuple[float, float] | None:
    """The window to open on, within `ext`: from a little before the first failure `ff` to a little
    after the last failure `end` (the cascade); `ext` itself without a failure."""
    if ext is None:
        return None
    if ff is None:
        return ext
    end = max(end if end is not None else ff, ff)
    span = max(end - ff, 1.0)
    lo = max(ext[0], ff - max(span * 0.6, 5.0))
    hi = min(ext[1], end + max(span * 0.25, 2.0))
    if hi <= lo:
        hi = lo + 1.0
    return lo, hi


def _q(s: str) -> str:
    return "'" + str(s).replace("'", "''") + "'"


def _canned_dir() -> Path | None:
    try:
        from ..resources import data_dir
        d = data_dir("queries") / "canned"
    except FileNotFoundError:
        return None
    return d if d.is_dir() else None


def _parse_header(text: str) -> dict[str, str]:
    head: dict[str, str] = {}
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if not s.startswith("--"):
            break
        m = re.match(r"--\s*(\w+)\s*:\s*(.*)", s)
        if m:
            head.setdefault(m.group(1).lower(), m.group(2).strip())
    return head


def default_verdict_fn(con: duckdb.DuckDBPyConnection) -> dict | None:
    """The verdict from ranktrace.correlate.diagnose, or None when the
    correlation module is not there yet."""
    try:
        from ..correlate import diagnose  # type: ignore[attr-defined]
    except ImportError:
        return None
    from ..report.verdict import fold_echoes
    return fold_echoes(con, diagnose(con, offsets=None))


# --------------------------------------------------------------------------- the store

class StoreData:
    """Read-only access to one store for the TUI."""

    def __init__(self, path: str | Path,
                 verdict_fn: Callable[[duckdb.DuckDBPyConnection], dict | None] | None = None):
        from ..query import open_sandboxed
        p = Path(path)
        self.path = p
        # Read-only and confined to the store (query.py): the SQL console runs
        # user SQL on this connection's cursors. TimeZone is set globally there
        # and the progress bar is off by default in Python (it would draw over
        # the TUI); the configuration is locked, so cursors set nothing.
        self._con = open_sandboxed(str(p))
        self._verdict_fn = verdict_fn or default_verdict_fn
        self._local = threading.local()
        self._sql_cur: duckdb.DuckDBPyConnection | None = None
        self._sql_lock = threading.Lock()
        self.offsets: dict[str, float] = {}
        self.verdict: dict | None = None
        self.verdict_error: str | None = None
        tables = {r[0] for r in self._con.execute(
            "SELECT table_name FROM information_schema.tables").fetchall()}
        if "events" not in tables:
            raise ValueError(f"{p}: not a ranktrace store (no events table)")
        self.has_files = "files" in tables
        self.has_lanes = "lanes" in tables
        self.has_aligned = "events_aligned" in tables and "clock_offsets" in tables
        self.has_attempts = "attempts" in tables   # stores from before issue 27 have none
        # a store written before column ts_logged: its windows read every line's time
        self._has_logged = bool(self._con.execute(
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 'events' AND column_name = 'ts_logged'"
        ).fetchone()[0])
        self._year_segments = year_segments(self._con) if self._has_logged else None
        self._attempt_rows: list | None = None
        # --tee copies of a line (queries/store/echoes.sql) are left out of every list and count
        self._noecho = "event_id NOT IN (SELECT event_id FROM echoes)" if "echoes" in tables else "TRUE"
        self._echo_ts = "echoes" in tables and bool(self._con.execute(
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 'echoes' AND column_name = 'ts'"
        ).fetchone()[0])
        if self.has_aligned:
            # The ingest's clock estimate (queries/store/clock.sql): the first
            # screen is aligned before the diagnosis runs; its clock replaces it.
            self.offsets = {h: float(o) for h, o in self._con.execute(
                "SELECT host, offset_s FROM clock_offsets WHERE host IS NOT NULL AND offset_s <> 0").fetchall()}
        cols = {r[0] for r in self._con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'lanes'").fetchall()}
        bcols = {r[0] for r in self._con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'lane_buckets'").fetchall()}
        # Summary tables from before the pod column group pods under one
        # "(no host)": read such a store from events (lane keys must agree).
        if "pod" not in cols:
            self.has_lanes = False
            cols = set()
        if "pod" not in bcols:
            tables.discard("lane_buckets")
        self._lh_lanes = self._lh_buckets = _LH
        # Stores of older versions lack the failure times and the buckets:
        # those are then read from `events`.
        self.has_lane_failures = "first_cause_ts" in cols
        self._raw_lanes: list | None = None       # lanes() rows, before clock offsets
        self._pods: int | None = None
        self._lane_failures: list | None = None   # per host: first cause, first error, last failure
        self._ff_cache: tuple | None = None        # (offsets, failure times)
        self.bucket_width: int | None = None
        if "lane_buckets" in tables:
            w = self._con.execute("SELECT min(width) FROM lane_buckets").fetchone()[0]
            self.bucket_width = int(w) if w is not None else None

    def close(self) -> None:
        try:
            self._con.close()
        except Exception:
            pass

    # each thread gets its own cursor
    def _cur(self) -> duckdb.DuckDBPyConnection:
        cur = getattr(self._local, "cur", None)
        if cur is None:
            cur = self._con.cursor()
            self._local.cur = cur
        return cur

    # ------------------------------------------------------------------ verdict

    def load_verdict(self) -> dict | None:
        """Run the diagnosis (slow: call from a worker). Sets offsets from the
        verdict's clock list. Never raises: on failure verdict is None and
        verdict_error says why."""
        self.verdict_error = None
        try:
            cur = self._con.cursor()
            v = self._verdict_fn(cur)
        except Exception as exc:  # a diagnosis bug must not take the viewer down
            v = None
            self.verdict_error = f"{type(exc).__name__}: {exc}"
        if v is not None and not isinstance(v, dict):
            self.verdict_error = f"diagnose returned {type(v).__name__}, not a dict"
            v = None
        self.verdict = v
        offs: dict[str, float] = {}
        for c in (v or {}).get("clock") or []:
            try:
                if c.get("host") is not None and c.get("offset_s") is not None:
                    offs[str(c["host"])] = float(c["offset_s"])
            except (TypeError, ValueError, AttributeError):
                continue
        if v is not None:   # no diagnosis: keep the ingest's estimate (clock_offsets)
            self.offsets = offs
        return v

    def set_offsets(self, offsets: dict[str, float]) -> None:
        self.offsets = dict(offsets)

    def culprit(self) -> tuple[str | None, int | None]:
        v = (self.verdict or {}).get("verdict") or {}
        return v.get("host"), v.get("rank")

    def cascade_keys(self) -> set[tuple[str | None, int | None]]:
        out = set()
        for c in (self.verdict or {}).get("cascade") or []:
            if isinstance(c, dict):
                out.add((c.get("host"), c.get("rank")))
        return out

    # ------------------------------------------------------------------ attempts

    def attempts(self) -> list:
        """The run's attempts (tui/attempts.py Attempt, in order; one or none: a run that never
        restarted): the verdict's once the diagnosis is in (its clock, which the TUI then uses),
        else the store's `attempts` table (the ingest's clock, as the first screen). A row per
        attempt, read once: never events."""
        from . import attempts as att   # it imports this module
        got = att.from_verdict(self.verdict)
        if got is not None:
            return got
        if self._attempt_rows is None:
            self._attempt_rows = [] if not self.has_attempts else self._cur().execute("""
                SELECT attempt, epoch_us(start) / 1e6, epoch_us("end") / 1e6, outcome, basis, file, line,
                       max_step
                FROM attempts ORDER BY attempt
            """).fetchall()
        return att.from_rows(self._attempt_rows)

    def top_attempt(self, attempts: list):
        """The attempt the top-level verdict is about (None before the diagnosis)."""
        from . import attempts as att
        return att.top_attempt(self.verdict, attempts) if self.verdict else None

    # ------------------------------------------------------------------ time

    def _off_sql(self, key: str = "host") -> str:
        if not self.offsets:
            return "0.0"
        whens = " ".join(f"WHEN {_q(h)} THEN {float(o)!r}" for h, o in self.offsets.items())
        return f"(CASE {key} {whens} ELSE 0.0 END)"

    def _aligned_sql(self) -> str:
        # a time outside 1990..2100 is a bogus year: no aligned time (listed with the untimed); a line
        # that names no host is on its file's own clock (a Slurm controller's log), as diagnose reads it
        return f"(CASE WHEN {_SANE} THEN epoch_us(ts) / 1e6 - {self._off_sql(_CLOCK_KEY)} END)"

    def _logged_range(self, t0: float, t1: float) -> tuple[int, int]:
        """The logged times (microseconds) that can be in the aligned window [t0, t1]."""
        lo = min([0.0, *self.offsets.values()])
        hi = max([0.0, *self.offsets.values()])
        return int((t0 + lo - 1e-6) * 1e6), int((t1 + hi + 1e-6) * 1e6)

    def _ts_range_sql(self, t0: float, t1: float) -> str:
        """A predicate on ts that covers the aligned window (for table echoes, sorted by ts: its zonemaps)."""
        a, b = self._logged_range(t0, t1)
        return f"ts >= make_timestamp({a}::BIGINT) AND ts <= make_timestamp({b}::BIGINT)"

    def _window_sql(self, t0: float, t1: float) -> str:
        """_ts_range_sql on `events`, and the same window on ts_logged, which its files' statistics
        answer (a filter on ts alone reads every line's time: store.logged_window)."""
        if not self._has_logged:
            return self._ts_range_sql(t0, t1)
        return f"{self._ts_range_sql(t0, t1)} AND {logged_window(self._year_segments, *self._logged_range(t0, t1))}"

    def extent(self) -> tuple[float, float] | None:
        return self.summary()["extent"]

    def counts(self) -> dict[str, int]:
        return self.summary()["counts"]

    def first_failure(self) -> float | None:
        """Aligned time of the first failure: the verdict's time, else the
        earliest cause-role event, else the earliest error."""
        return self._failure_times()[0]

    def incident_window(self) -> tuple[float, float] | None:
        """The window to open on: around the first failure and its cascade."""
        return self.summary()["incident"]

    # ------------------------------------------------------------------ lanes

    def lanes(self) -> list[Lane]:
        """Every lane with its summary, ranks grouped under their host (host
        order: by name; rank lanes by rank, then node-level lanes). One scan,
        cached; clock offsets are applied per host in Python."""
        raw = self._raw_lanes
        # Stores from this version keep a `lanes` table (queries/store/lanes.sql):
        # the first screen then needs no scan of events.
        if raw is None and self.has_lanes:
            raw = self._raw_lanes = self._cur().execute(f"""
                SELECT {self._lh_lanes} AS h, rank, source, sum(events), sum(errors), sum(causes),
                       epoch_us(min(first_ts)) / 1e6, epoch_us(max(last_ts)) / 1e6
                FROM lanes GROUP BY 1, 2, 3
                ORDER BY h = '{NO_HOST}', h LIKE '{POD_PREFIX}%', h, rank IS NULL, rank, source
            """).fetchall()
        if raw is None:
            raw = self._raw_lanes = self._cur().execute(f"""
                SELECT * FROM (
                    SELECT {_LH} AS h, rank, {_SRC_SQL} AS src, count(*),
                           count(*) FILTER (WHERE severity IN ('error', 'critical')),
                           count(*) FILTER (WHERE role = 'cause'),
                           epoch_us(min(ts) FILTER (WHERE {_SANE})) / 1e6,
                           epoch_us(max(ts) FILTER (WHERE {_SANE})) / 1e6
                    FROM events WHERE {self._noecho} GROUP BY 1, 2, 3) l
                ORDER BY h = '{NO_HOST}', h LIKE '{POD_PREFIX}%', h, rank IS NULL, rank, src
            """).fetchall()
        out = []
        for h, r, src, n, e, c, f, l in raw:
            off = self.offsets.get(h, 0.0)
            out.append(Lane(host=h, rank=r, source=src, events=n, errors=e, causes=c,
                            first=None if f is None else float(f) - off,
                            last=None if l is None else float(l) - off))
        return out

    def _pod_count(self) -> int:
        if self._pods is None:
            src = "lanes" if self.has_lanes else "events"
            self._pods = int(self._cur().execute(f"SELECT count(DISTINCT pod) FROM {src}").fetchone()[0])
        return self._pods

    def summary(self) -> dict:
        """What the first screen needs, in two scans: lanes (cached) and the
        failure times. Keys: counts, lanes, extent, first_failure, incident."""
        lanes = self.lanes()
        timed = [ln for ln in lanes if ln.first is not None]
        extent = (min(ln.first for ln in timed), max(ln.last for ln in timed)) if timed else None
        counts = {"events": sum(ln.events for ln in lanes),
                  "hosts": len({ln.host for ln in lanes if ln.host != NO_HOST and not ln.host.startswith(POD_PREFIX)}),
                  "pods": self._pod_count(),
                  "ranks": len({ln.rank for ln in lanes if ln.rank is not None}),
                  "files": self._cur().execute("SELECT count(*) FROM files").fetchone()[0] if self.has_files else 0}
        ff, end = self._failure_times()
        return {"counts": counts, "lanes": lanes, "extent": extent, "first_failure": ff,
                "incident": failure_window(extent, ff, end)}

    def _failure_times(self) -> tuple[float | None, float | None]:
        a = self._aligned_sql()
        key = tuple(sorted(self.offsets.items()))
        if self._ff_cache and self._ff_cache[0] == key:
            r = self._ff_cache[1]
        elif self.has_lane_failures:
            # Per host, aligned = logged - offset: the lanes table's times give
            # the same answer as the scan of events below.
            if self._lane_failures is None:
                self._lane_failures = self._cur().execute(f"""
                    SELECT {self._lh_lanes}, epoch_us(min(first_cause_ts)) / 1e6,
                           epoch_us(min(first_error_ts)) / 1e6, epoch_us(max(last_failure_ts)) / 1e6
                    FROM lanes GROUP BY 1
                """).fetchall()

            def pick(i, f):
                vals = [float(row[i]) - self.offsets.get(row[0], 0.0) for row in self._lane_failures
                        if row[i] is not None]
                return f(vals) if vals else None
            r = (pick(1, min), pick(2, min), pick(3, max))
            self._ff_cache = (key, r)
        else:
            r = self._cur().execute(f"""
                SELECT min({a}) FILTER (WHERE role = 'cause'),
                       min({a}) FILTER (WHERE severity IN ('error', 'critical')),
                       max({a})
                FROM events WHERE ts IS NOT NULL AND {_SANE} AND {self._noecho}
                  AND (role IN ('cause', 'symptom') OR severity IN ('error', 'critical'))
            """).fetchone()
            self._ff_cache = (key, r)
        v = (self.verdict or {}).get("verdict") or {}
        ff = parse_time(v.get("time"))
        if ff is None:
            ff = r[0] if r[0] is not None else r[1]
        return (None if ff is None else float(ff)), (None if r[2] is None else float(r[2]))

    def _lane_pred(self, lanes: list[Lane]) -> str:
        ranks = [ln for ln in lanes if ln.rank is not None]
        nodes = [ln for ln in lanes if ln.rank is None]
        parts = []
        if ranks:
            vals = ",".join(f"({_q(ln.host)},{int(ln.rank)})" for ln in ranks)
            parts.append(f"(rank IS NOT NULL AND ({_LH}, rank) IN ({vals}))")
        if nodes:
            vals = ",".join(f"({_q(ln.host)},{_q(ln.source or 'log')})" for ln in nodes)
            parts.append(f"(rank IS NULL AND ({_LH}, {_SRC_SQL}) IN ({vals}))")
        return "(" + " OR ".join(parts) + ")" if parts else "FALSE"

    def buckets(self, t0: float, t1: float, n: int, lanes: list[Lane]) -> dict[tuple, dict[int, Bucket]]:
        """Aggregates of the given lanes over [t0, t1) cut into n buckets:
        {lane.key: {bucket index: Bucket}}. Only non-empty buckets come back."""
        if n <= 0 or t1 <= t0 or not lanes:
            return {}
        dt = (t1 - t0) / n
        hosts = sorted({ln.host for ln in lanes})
        want = {ln.key for ln in lanes}
        if self.bucket_width is not None and dt >= BUCKET_SLOTS_PER_CELL * self.bucket_width:
            # Zoomed out: a cell spans several of lane_buckets' slots, and a
            # slot counts where it starts (off by less than a quarter cell).
            off = self._off_sql()
            rows = self._cur().execute(f"""
                SELECT {self._lh_buckets} AS h, rank, source,
                       greatest(0, CAST(floor((slot - {off} - {t0!r}) / {dt!r}) AS INTEGER)) AS b,
                       sum(events), max(max_sev), bool_or(cause), bool_or(symptom)
                FROM lane_buckets
                WHERE slot - {off} + width > {t0!r} AND slot - {off} < {t1!r}
                  AND {_host_pred(hosts, self._lh_buckets)}
                GROUP BY ALL
            """).fetchall()
        else:
            rows = self._events_buckets(t0, t1, dt, _host_pred(hosts, _LH))
        out: dict[tuple, dict[int, Bucket]] = {}
        for h, r, s, b, c, sev, cause, sym in rows:
            if (h, r, s) in want:
                out.setdefault((h, r, s), {})[int(b)] = Bucket(int(c), int(sev), bool(cause), bool(sym))
        return out

    def _events_buckets(self, t0: float, t1: float, dt: float, hp: str) -> list[tuple]:
        a = self._aligned_sql()
        return self._cur().execute(f"""
            WITH e AS (
                SELECT {_LH} AS h, rank, {_SRC_SQL} AS src,
                       {a} AS t, {_SEV_SQL} AS sev, role
                FROM events
                WHERE ts IS NOT NULL AND {self._window_sql(t0, t1)} AND {hp}
                  AND {self._noecho_in(self._ts_range_sql(t0, t1))}
            )
            SELECT h, rank, src, CAST(floor((t - {t0!r}) / {dt!r}) AS INTEGER) AS b,
                   count(*), max(sev), bool_or(role = 'cause'), bool_or(role = 'symptom')
            FROM e WHERE t >= {t0!r} AND t < {t1!r}
            GROUP BY ALL
        """).fetchall()

    def next_error(self, t: float, direction: int = 1, lanes: list[Lane] | None = None,
                   min_sev: int = ERROR_SEV) -> tuple[float, tuple] | None:
        """The next (direction=1) or previous (-1) error-or-cause event strictly
        after/before aligned time t: (time, lane key)."""
        a = self._aligned_sql()
        op, order = (">", "ASC") if direction > 0 else ("<", "DESC")
        lp = f" AND {self._lane_pred(lanes)}" if lanes is not None else ""
        r = self._cur().execute(f"""
            SELECT {a} AS t, {_LH}, rank, {_SRC_SQL}
            FROM events
            WHERE ts IS NOT NULL AND {_SANE} AND {self._noecho}
              AND ({_SEV_SQL} >= {int(min_sev)} OR role = 'cause') AND {a} {op} {t!r}{lp}
            ORDER BY t {order}, event_id LIMIT 1
        """).fetchone()
        if not r:
            return None
        return float(r[0]), (r[1], r[2], r[3])

    # ------------------------------------------------------------------ events

    def _noecho_in(self, window: str | None) -> str:
        """Not an echo; with a time window (a predicate on ts), only the echoes
        in it are read (echoes is sorted by ts: its zonemaps prune the rest)."""
        if window and self._echo_ts and self._noecho != "TRUE":
            return f"event_id NOT IN (SELECT event_id FROM echoes WHERE {window})"
        return self._noecho

    def _filter_sql(self, f: Filters | None, window: str | None = None) -> tuple[str, list]:
        if f is None:
            return self._noecho_in(window), []
        where, params = [self._noecho_in(window)], []
        if f.text:
            where.append("(raw ILIKE ? OR message ILIKE ?)")
            params += [f"%{f.text}%"] * 2
        if f.kind:
            where.append("kind ILIKE ?")
            params.append(f"%{f.kind}%")
        if f.min_severity in SEV_RANK:
            where.append(f"{_SEV_SQL} >= {SEV_RANK[f.min_severity]}")
        if f.role:
            roles = [r.strip() for r in f.role.split(",") if r.strip()]
            where.append("role IN (" + ",".join("?" for _ in roles) + ")")
            params += roles
        if f.host:
            where.append(f"{_LH} = ?")
            params.append(f.host)
        if f.rank is not None:
            where.append("rank = ?")
            params.append(int(f.rank))
        return (" AND ".join(where) or "TRUE"), params

    _EV_COLS = ("event_id, {a} AS t, epoch_us(ts) / 1e6 AS o, host, rank, severity, role, kind, "
                "coalesce(message, raw) AS msg, file, line, " + _SRC_SQL + " AS src, pod")

    def _rows(self, rows) -> list[EventRow]:
        return [EventRow(event_id=r[0], time=r[1], orig=r[2], host=r[3], rank=r[4], severity=r[5],
                         role=r[6], kind=r[7], message=r[8] or "", file=r[9], line=r[10],
                         source=r[11], pod=r[12]) for r in rows]

    def events_page(self, start: float | None, filters: Filters | None = None, offset: int = 0,
                    limit: int = 200) -> list[EventRow]:
        """A page of events in aligned-time order from aligned time `start`
        (None: from the beginning); untimed events come last. Reads a growing
        time window from `start` until the page is full, so a page near the
        cursor never sorts the whole store."""
        a = self._aligned_sql()
        fw, params = self._filter_sql(filters)
        cols = self._EV_COLS.format(a=a)
        need = offset + limit
        ext = self.extent()
        if start is not None and ext is not None:
            w = max((ext[1] - ext[0]) / 1000.0, 1.0)
            while start + w < ext[1]:
                win = self._ts_range_sql(start, start + w)
                fww, _ = self._filter_sql(filters, win)
                rows = self._cur().execute(f"""
                    SELECT {cols} FROM events
                    WHERE {self._window_sql(start, start + w)}
                      AND {a} >= {start!r} AND {a} < {start + w!r} AND {fww}
                    ORDER BY t, file, line LIMIT {need}
                """, params).fetchall()
                if len(rows) >= need:
                    return self._rows(rows[offset:])
                w *= 8
        cond = "TRUE" if start is None else f"({a} >= {start!r} OR {a} IS NULL)"
        rows = self._cur().execute(f"""
            SELECT {cols} FROM events WHERE {cond} AND {fw}
            ORDER BY t ASC NULLS LAST, file, line
            LIMIT {int(limit)} OFFSET {int(offset)}
        """, params).fetchall()
        return self._rows(rows)

    def events_before(self, first: EventRow, filters: Filters | None = None, limit: int = 200) -> list[EventRow]:
        """The page of events just before `first` in list order (aligned time,
        file, line), oldest first: the list pages backward from here. Reads a
        growing time window back from `first`, like events_page."""
        if first.time is None:
            return []
        a = self._aligned_sql()
        fw, params = self._filter_sql(filters)
        cols = self._EV_COLS.format(a=a)
        t = float(first.time)
        before = (f"({a} < {t!r} OR ({a} = {t!r} AND (file < ? OR (file = ? AND line < ?))))")
        params = [first.file, first.file, int(first.line), *params]
        ext = self.extent()
        w = max(((ext[1] - ext[0]) / 1000.0) if ext else 1.0, 1.0)
        while True:
            whole = ext is None or t - w <= ext[0]
            window = "TRUE" if whole else f"{self._window_sql(t - w, t)} AND {a} >= {t - w!r}"
            fww = fw if whole else self._filter_sql(filters, self._ts_range_sql(t - w, t))[0]
            rows = self._cur().execute(f"""
                SELECT {cols} FROM events
                WHERE ts IS NOT NULL AND {window} AND {before} AND {fww}
                ORDER BY t DESC, file DESC, line DESC LIMIT {int(limit)}
            """, params).fetchall()
            if len(rows) >= limit or whole:
                return self._rows(rows[::-1])
            w *= 8

    def count_events(self, filters: Filters | None = None) -> int:
        fw, params = self._filter_sql(filters)
        return self._cur().execute(f"SELECT count(*) FROM events WHERE {fw}", params).fetchone()[0]

    def event(self, event_id: int) -> dict | None:
        cur = self._cur().execute(
            f"SELECT *, {self._aligned_sql()} AS aligned, epoch_us(ts) / 1e6 AS orig FROM events "
            "WHERE event_id = ?", [event_id])
        cols = [d[0] for d in cur.description]
        r = cur.fetchone()
        return dict(zip(cols, r)) if r else None

    def context(self, event_id: int, n: int = 5) -> list[tuple[int, str, bool]]:
        """The N events before and after one event in its file:
        [(line, raw, is_the_event)]."""
        e = self._cur().execute("SELECT file_id, line FROM events WHERE event_id = ?", [event_id]).fetchone()
        if not e:
            return []
        fid, line = e
        before = self._cur().execute(
            "SELECT line, raw, event_id FROM events WHERE file_id = ? AND line < ? ORDER BY line DESC LIMIT ?",
            [fid, line, n]).fetchall()
        after = self._cur().execute(
            "SELECT line, raw, event_id FROM events WHERE file_id = ? AND line >= ? ORDER BY line LIMIT ?",
            [fid, line, n + 1]).fetchall()
        return [(ln, raw, eid == event_id) for ln, raw, eid in list(reversed(before)) + after]

    def find_event(self, file: str | None, line: int | None, time: Any = None) -> EventRow | None:
        """The event an evidence entry points at: by file and line (the file
        may be given as a path suffix), else the event nearest to its time."""
        a = self._aligned_sql()
        cols = self._EV_COLS.format(a=a)
        if file and line is not None:
            rows = self._cur().execute(f"""
                SELECT {cols} FROM events
                WHERE (file = ? OR file LIKE ? OR ? LIKE '%' || file)
                  AND ? BETWEEN line AND end_line
                ORDER BY length(file) LIMIT 1
            """, [file, f"%/{file}", file, int(line)]).fetchall()
            if rows:
                return self._rows(rows)[0]
        t = parse_time(time)
        if t is not None:
            rows = self._cur().execute(
                f"SELECT {cols} FROM events WHERE ts IS NOT NULL ORDER BY abs(t - {t!r}) LIMIT 1").fetchall()
            if rows:
                return self._rows(rows)[0]
        return None

    # ------------------------------------------------------------------ SQL console

    def default_query(self) -> str:
        """The console's first query: per rank, events and last line on the aligned clock."""
        if self.has_aligned:
            return ("SELECT host, rank, count(*) AS events, max(ats) AS last\nFROM events_aligned\n"
                    "GROUP BY ALL ORDER BY last")
        return "SELECT host, rank, count(*) AS events, max(ts) AS last\nFROM events\nGROUP BY ALL ORDER BY last"

    def canned_queries(self) -> list[CannedQuery]:
        d = _canned_dir()
        if d is None:
            return []
        out = []
        for p in sorted(d.glob("*.sql")):
            try:
                text = p.read_text()
            except OSError:
                continue
            h = _parse_header(text)
            out.append(CannedQuery(name=h.get("name", p.stem), path=p,
                                   description=h.get("returns", h.get("description", "")),
                                   params=h.get("params", ""), sql=text))
        return out

    def run_sql(self, sql: str, limit: int = 500) -> QueryResult:
        """Run user SQL on the read-only store; fetch limit+1 rows to tell
        "500 of >500". Errors come back in the result, never raised."""
        t0 = time.perf_counter()
        res = QueryResult()
        cur = self._con.cursor()
        with self._sql_lock:
            self._sql_cur = cur
        try:
            check_statements(sql)
            c = cur.execute(sql)
            if c.description:
                res.columns = [d[0] for d in c.description]
                rows = c.fetchmany(limit + 1)
                res.truncated = len(rows) > limit
                res.rows = rows[:limit]
        except duckdb.InterruptException:
            res.cancelled = True
            res.error = "query cancelled"
        except QueryRefused as exc:
            res.error = str(exc)
        except duckdb.PermissionException as exc:
            res.error = (f"refused: {str(exc).strip()} (the console reads only the store: no other file, URL, "
                         "ATTACH, COPY, EXPORT, INSTALL or LOAD)")
        except Exception as exc:
            res.error = str(exc).strip() or type(exc).__name__
        finally:
            with self._sql_lock:
                self._sql_cur = None
            try:
                cur.close()
            except Exception:
                pass
        res.seconds = time.perf_counter() - t0
        return res

    def interrupt(self) -> bool:
        """Cancel the running user query, if any."""
        with self._sql_lock:
            cur = self._sql_cur
        if cur is None:
            return False
        try:
            cur.interrupt()
        except Exception:
            return False
        return True
