"""store: a directory: its parts' lines as Parquet, and one DuckDB file.

STORE/ranktrace.duckdb holds the tables (files, event_classes, facts, kinds,
summaries, meta), the views, and table `lines_files`: the Parquet files of
lines (STORE/parts/<part>/event_lines-N.parquet, written by the engine's
parser threads: ingest/parts.py) that view `event_lines` reads, by paths
relative to STORE. DuckDB resolves a relative path against its
`file_search_path` (every ranktrace connection sets it to STORE) or the
working directory, so `cd STORE && duckdb ranktrace.duckdb` reads a store
wherever it was moved, and ranktrace reads it from anywhere.

Lines are written once, by the parser threads, and never rewritten: what is
decided over the whole store after they are written (the year of year-less
times) is applied by the view. Ingest and merge are the only writers; a part's
tables and its place in `lines_files` go in with one transaction, so a store
interrupted mid-ingest opens with every file either complete or absent.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from pathlib import Path

from typing import TYPE_CHECKING

import duckdb

from .resources import data_dir

if TYPE_CHECKING:  # pyarrow and polars are imported where used: readers (tui, sql) start faster without them
    import pyarrow as pa

    from .formats import Catalog

DEFAULT_DB = "ranktrace.store"
DB_FILE = "ranktrace.duckdb"       # the store's DuckDB file, inside its directory
PARTS = "parts"                    # the store's parts, inside its directory
# The tables behind view `events` (queries/schema): readers read the view, never these as facts.
EVENT_TABLES = ("event_lines", "event_classes")
FACT_SQL_TYPES = {"str": "VARCHAR", "int": "BIGINT", "float": "DOUBLE"}
# 3: events is a view over event_rows and event_classes; 4: event_rows.marks; 5: table event_lines
# keeps the message as a span of raw, view event_rows gives it back; 6: a store is a directory,
# its lines Parquet files of its parts (view event_lines); 7: the lines carry the summaries' text tests,
# decided by the engine (step, says_step, nranks, teardown); 8: and the training position their
# progress facts give (progress_lo, progress_hi: the attempts' step buckets read no join of the facts);
# fact table progress is a view over the parts' Parquet files of it (PART_FACTS, table fact_files);
# 9: the rows of nccl_comm carry their line's columns (LINE_FACTS), and it is such a view too
SCHEMA_VERSION = "9"
# Fact tables of about one row per line (a training run's progress lines: 15 M of a long run's 15.4 M
# lines): kept where the part wrote them (its <table>.parquet), read in place by a view of that name
# over the store's files of it (table fact_files, as the lines are view event_lines over lines_files).
# Copying the long run's progress facts into DuckDB cost its end of ingest 4-6 CPU-s; the 1 GB corpus'
# 1.1 M NCCL communicator lines, with their line's columns (LINE_FACTS), 0.8.
PART_FACTS = ("progress", "nccl_comm")
# Fact tables (each one of PART_FACTS) whose rows carry their line's own columns, as the engine writes
# them beside the fact's (crates/engine/src/out.rs: LINE_FACTS, LINE_FACT_COLUMNS): the line's int
# identity columns as its lines file has them (no implied rank: line_rank_sql), its `nranks N`, the
# rank of its srun `[rankN]:` prefix (identity.SRUN_RANK) and its class. identity.world_comms reads a communicator's
# line from them, where it joined every line of the store (1.0-1.8 CPU-s of a 1 GB ingest's end, and
# again in every diagnose).
LINE_FACTS = {"nccl_comm": (("line_rank", "BIGINT"), ("line_local_rank", "BIGINT"), ("line_pid", "BIGINT"),
                            ("line_task", "BIGINT"), ("line_nranks", "INTEGER"), ("line_srun_rank", "INTEGER"),
                            ("line_class_id", "BIGINT"))}
# DuckDB's memory for a reader (diagnose, report, tui, export, sql): beyond it, it spills to a
# directory of its own (spill_dir). 1.9 GB of diagnose on a store of 150k long Xid lines was all
# DuckDB's; the process stays under 1 GB with this.
READER_MEMORY = "512MB"
# Up to this many bytes of lines files a store runs DuckDB on one thread. A statement over a small
# store costs its set-up on every thread more than the scan they share: one thread took 10-15% less
# CPU and wall for an excerpt's ingest + diagnosis, and was no slower to diagnose a 200 MB run (34 MB
# of lines files); beyond it, every core (benchmarks/README.md, session 31).
ONE_THREAD_BYTES = 32 << 20
# Year-less times are parsed in this leap year by the engine (crates/engine/src/timefmt.rs)
# and moved to the inferred year after ingest.
PLACEHOLDER_YEAR = 2000


def schema_files() -> list[Path]:
    return sorted((data_dir("queries") / "schema").glob("*.sql"))


class StoreError(Exception):
    """The store cannot be opened; the message says what happened, where, and what to do."""


class StoreMissing(StoreError, FileNotFoundError):
    """No store at that path (a FileNotFoundError too, for older callers)."""


_LOCK_RE = re.compile(r"Conflicting lock is held in (?P<prog>.*?) \(PID (?P<pid>\d+)\)")


def store_error(path: str | Path, exc: BaseException) -> StoreError:
    """A duckdb error met opening `path`, as a StoreError a user can act on."""
    p = Path(path)
    msg = str(exc)
    m = _LOCK_RE.search(msg)
    if m:
        return StoreError(
            f"{p}: in use by another process ({Path(m['prog']).name}, pid {m['pid']}), most likely a "
            f"`ranktrace ingest` still writing it; wait for it to finish (or stop it: kill {m['pid']}) "
            "and run this again")
    if "could not set lock" in msg.lower():
        return StoreError(f"{p}: locked by another process; wait for it to finish and run this again ({msg})")
    if "not a valid DuckDB database" in msg or "not a valid duckdb" in msg.lower():
        return StoreError(f"{p}: not a DuckDB database, so not a ranktrace store; check --db (a store is "
                          f"made by `ranktrace ingest PATH --db {p}`, or give a new file name)")
    if "Is a directory" in msg:
        return StoreError(f"{p}: is a directory; give --db a file name, e.g. --db {p / DEFAULT_DB}")
    if "No such file or directory" in msg:
        return StoreError(f"{p}: directory {p.parent} does not exist; create it (mkdir -p {p.parent}) or "
                          "choose another --db")
    if "database does not exist" in msg:
        return StoreMissing(f"{p}: no such store; create it with `ranktrace ingest PATH --db {p}`")
    if "Permission denied" in msg:
        return StoreError(f"{p}: permission denied; check the file's and its directory's permissions")
    return StoreError(f"{p}: cannot open the store: {msg}")


def locate(path: str | Path) -> tuple[Path, Path]:
    """(the store's directory, its DuckDB file) of a --db PATH: the
    directory, or its ranktrace.duckdb."""
    p = Path(path)
    if p.name == DB_FILE and not p.is_dir():
        return (p.parent if str(p.parent) else Path(".")), p
    return p, p / DB_FILE


def spill_dir(store_dir: Path) -> str:
    """A directory DuckDB may spill to, this process's own (created by DuckDB
    when it spills, removed when it closes): inside the store when it is
    writable, else in the machine's temp directory. One per process and store:
    DuckDB refuses a second connection to a database file with another
    configuration."""
    import tempfile
    if os.access(store_dir, os.W_OK):
        return str(store_dir.resolve() / f".spill-{os.getpid()}")
    tag = hashlib.sha256(str(store_dir.resolve()).encode()).hexdigest()[:12]
    return str(Path(tempfile.gettempdir()) / f"ranktrace-spill-{os.getpid()}-{tag}")


def _single_file_store(p: Path) -> StoreError:
    """What a --db that is a file, not a store's directory, is told."""
    version = None
    try:
        with duckdb.connect(str(p), read_only=True) as con:
            version = stored_version(con)
    except duckdb.Error:
        pass
    if version is None:
        return StoreError(f"{p}: is a file, not a ranktrace store (a store is a directory, made by "
                          f"`ranktrace ingest PATH --db DIR`); give --db a directory")
    return StoreError(f"{p}: a store of an older ranktrace (store schema version {version}, one DuckDB file); "
                      f"this one keeps a store as a directory (schema {SCHEMA_VERSION}) and does not read it: "
                      f"rebuild it from the logs, e.g. `ranktrace ingest LOGS --db {p.with_suffix('')}.store`")


def _connect(path: str | Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    if str(path) == ":memory:":   # a store of no lines (ingest --part claims its files in one)
        return duckdb.connect(":memory:")
    store_dir, db = locate(path)
    if store_dir.is_file():
        raise _single_file_store(store_dir)
    if read_only and not db.exists():
        raise StoreMissing(f"{store_dir}: no such store; create it with `ranktrace ingest PATH --db {store_dir}`")
    if not read_only:
        parent = store_dir.parent if str(store_dir.parent) else Path(".")
        if not parent.is_dir():
            raise StoreError(f"{store_dir}: directory {parent} does not exist; create it (mkdir -p {parent}) or "
                             "choose another --db")
        try:
            (store_dir / PARTS).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{store_dir}: cannot create the store's directory: {exc.strerror or exc}") from None
    # Relative paths (the lines files of view event_lines) are the store's, wherever it was moved.
    # The same configuration for every connection of the process to the store (DuckDB refuses
    # another): a reader's memory limit, which a writer raises or lowers with SET.
    config = {"file_search_path": str(store_dir.resolve()), "memory_limit": READER_MEMORY,
              "temp_directory": spill_dir(store_dir)}
    try:
        con = duckdb.connect(str(db), read_only=read_only, config=config)
    except duckdb.Error as exc:
        raise store_error(db, exc) from None
    # No progress bar of DuckDB's own: it writes to stdout, into `diagnose --format json` and `sql` output
    # (ranktrace reports its own progress on stderr). A connection to a store this process has open already
    # and confined (query.confine locks the configuration) cannot say so; its first connection did.
    try:
        con.execute("SET enable_progress_bar = false")
        fit_threads(con, store_dir)
    except duckdb.InvalidInputException:
        pass
    return con


def lines_bytes(store_dir: Path, limit: int, parts: tuple[Path, ...] = ()) -> int:
    """The size of the lines files (event_lines-*.parquet) of the store's parts and of `parts` (part
    directories about to be merged, wherever they are), counted up to `limit`."""
    try:
        dirs = {Path(e.path) for e in os.scandir(store_dir / PARTS) if e.is_dir(follow_symlinks=False)}
    except OSError:
        dirs = set()
    total = 0
    for d in sorted(dirs | {Path(p) for p in parts}):
        try:
            files = list(os.scandir(d))
        except OSError:
            continue
        for f in files:
            if f.name.startswith("event_lines-") and f.name.endswith(".parquet"):
                total += f.stat(follow_symlinks=False).st_size
                if total > limit:
                    return total
    return total


def fit_threads(con: duckdb.DuckDBPyConnection, store_dir: Path, parts: tuple[Path, ...] = ()) -> None:
    """DuckDB's threads for the store as it is now, with `parts` merged: one for a small store
    (ONE_THREAD_BYTES), every core otherwise. (A setting of the database, shared by its connections
    in this process.)"""
    if lines_bytes(store_dir, ONE_THREAD_BYTES, parts) <= ONE_THREAD_BYTES:
        con.execute("SET threads = 1")
    else:
        con.execute("RESET threads")


def connect(path: str | Path, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """A plain connection to a store's DuckDB file, with its search path (and,
    read-only, a reader's memory limit): for tests and tools that open a
    store without ranktrace's checks."""
    return _connect(path, read_only)


def store_dir_of(con: duckdb.DuckDBPyConnection) -> Path:
    """The directory of the store `con` is connected to."""
    return Path(con.execute("SELECT current_setting('file_search_path')").fetchone()[0].split(",")[0])


def open_store(path: str | Path, cat: Catalog | None = None) -> duckdb.DuckDBPyConnection:
    con = _connect(path, read_only=False)
    try:
        check_version(con, path, writing=True)
    except StoreError:
        con.close()
        raise
    con.execute("SET TimeZone = 'UTC'")
    init_schema(con, cat)
    from . import marks
    marks.stamp(con)       # (a writer adds lines marked by this version)
    return con


def table_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """A table or view that a statement on `con` can read by that name (temp first, then the current
    database's main schema). An ingest and a diagnosis ask ~180 times a store: DuckDB 2's connection
    answers from its catalog without a statement (0.006 ms); a statement over the catalog functions
    takes ~4 ms on a store of ~150 tables and views (tests/unit/test_util_catalog.py: the same answers)."""
    kind = getattr(con, "_table_kind", None)
    if kind is not None:
        return kind(name) != "none"
    return table_exists_by_statement(con, name)


def table_exists_by_statement(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """table_exists for a DuckDB without the connection's catalog lookup: the catalog functions (not
    information_schema.tables, a view over them that builds every table's row first), in one statement."""
    return con.execute("SELECT EXISTS (SELECT 1 FROM duckdb_tables() WHERE table_name = $n AND schema_name "
                       "= 'main' AND database_name IN ('temp', current_database()) UNION ALL "
                       "SELECT 1 FROM duckdb_views() WHERE view_name = $n AND NOT internal AND schema_name "
                       "= 'main' AND database_name IN ('temp', current_database()))",
                       {"n": name}).fetchone()[0]


def meta_value(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    """A value of the store's table meta (None: not set, or no ranktrace meta)."""
    if not table_exists(con, "meta"):
        return None
    row = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
    return row[0] if row else None


def stored_version(con: duckdb.DuckDBPyConnection) -> str | None:
    """The schema version a store was written with (None: no ranktrace meta)."""
    return meta_value(con, "schema_version")


def check_version(con: duckdb.DuckDBPyConnection, path: str | Path, *, writing: bool) -> None:
    """Refuse a store this ranktrace would misread: one of a newer schema
    (never read nor overwritten), or, to read, one of an older schema (a
    write brings it up to date first)."""
    from . import __version__
    got = stored_version(con)
    if got is None:
        return
    ours = int(SCHEMA_VERSION)
    try:
        n = int(got)
    except ValueError:
        raise StoreError(f"{path}: store schema version {got!r} is not one ranktrace writes; "
                         "re-ingest the logs into a new store") from None
    if n > ours:
        raise StoreError(f"{path}: written by a newer ranktrace (store schema version {n}); ranktrace "
                         f"{__version__} reads schema versions up to {ours}: upgrade ranktrace to read it "
                         "(the store was left as it was)")
    if n < ours:
        raise StoreError(f"{path}: written by an older ranktrace (store schema version {n}; this one reads "
                         f"version {ours}, whose lines, facts or summaries are kept otherwise); rebuild it from the logs into "
                         f"a new store, e.g. `ranktrace ingest LOGS --db NEW.store` (the store was left as it was)")


def open_readonly(path: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to a ranktrace store; StoreError (with what to do)
    when it is missing, not a DuckDB file, not a store, or locked by a writer."""
    p = locate(path)[0]
    con = _connect(p, read_only=True)
    try:
        # (a connection of this process may have locked the configuration, UTC already set: query.lock_down)
        if con.execute("SELECT current_setting('TimeZone')").fetchone()[0] != "UTC":
            con.execute("SET TimeZone = 'UTC'")
        has = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'events'").fetchone()[0]
    except duckdb.Error as exc:
        con.close()
        raise store_error(p, exc) from None
    if not has:
        con.close()
        raise StoreError(f"{p}: a DuckDB file but not a ranktrace store (no events table); "
                         f"create a store with `ranktrace ingest PATH --db NEW.duckdb`")
    try:
        check_version(con, p, writing=False)
    except StoreError:
        con.close()
        raise
    return con


def init_schema(con: duckdb.DuckDBPyConnection, cat: Catalog | None) -> None:
    # One transaction: a commit per statement made this cost half a second.
    con.begin()
    try:
        _init_schema(con, cat)
    except BaseException:
        con.rollback()
        raise
    con.commit()


def _init_schema(con: duckdb.DuckDBPyConnection, cat: Catalog | None) -> None:
    con.execute("CREATE TABLE IF NOT EXISTS kinds (kind VARCHAR PRIMARY KEY, role VARCHAR, "
                "severity VARCHAR, failure VARCHAR, description VARCHAR)")
    for f in schema_files():
        if f.name == "002_views.sql":
            make_lines_view(con)   # (the views read it)
        con.execute(f.read_text())
    con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [SCHEMA_VERSION])
    if cat is None:
        return
    # One statement, each column a list parameter (polars, for a frame to insert from, costs 0.2 s
    # to import; a VALUES list of 5 parameters a row takes DuckDB 15-40 ms to plan; executemany 0.3 s).
    kinds = list(cat.kinds.values())
    if kinds:
        con.execute("INSERT OR REPLACE INTO kinds SELECT unnest($1), unnest($2), unnest($3), unnest($4), unnest($5)",
                    [[k.name for k in kinds], [k.role for k in kinds], [k.severity for k in kinds],
                     [k.failure for k in kinds], [k.description for k in kinds]])
    have: dict[str, set[str]] = {}
    for table, column in con.execute("SELECT table_name, column_name FROM information_schema.columns "
                                     "WHERE table_schema = 'main'").fetchall():
        have.setdefault(table, set()).add(column)
    for table, cols in cat.fact_tables.items():
        if table in PART_FACTS:
            want = [("event_id", "BIGINT"), ("file_id", "BIGINT"), *((c, FACT_SQL_TYPES[t]) for c, t in cols.items()),
                    *LINE_FACTS.get(table, ())]
            if table in have:   # the columns it has (a catalog since may have more; none goes)
                now = view_columns(con, table)
                want = now + [w for w in want if w[0] not in dict(now)]
            make_fact_view(con, table, want)
            continue
        if table not in have:
            defs = "".join(f', "{c}" {FACT_SQL_TYPES[t]}' for c, t in cols.items())
            con.execute(f'CREATE TABLE "{table}" (event_id BIGINT NOT NULL, file_id BIGINT NOT NULL{defs})')
            continue
        # A store from an older catalog gets the columns facts have gained since.
        for c, t in cols.items():
            if c not in have[table]:
                con.execute(f'ALTER TABLE "{table}" ADD COLUMN "{c}" {FACT_SQL_TYPES[t]}')


# The columns of a lines file (crates/engine/src/out.rs event_schema) and their types as
# DuckDB reads them; view event_lines gives the store's types (rank, local_rank and task
# are INTEGER there, as in `files`).
LINE_COLUMNS = (
    ("event_id", "BIGINT"), ("file_id", "BIGINT"), ("line", "BIGINT"), ("end_line", "BIGINT"),
    ("byte_offset", "BIGINT"), ("ts", "TIMESTAMP"), ("ts_text", "VARCHAR"), ("rank", "BIGINT"),
    ("local_rank", "BIGINT"), ("task", "BIGINT"), ("pid", "BIGINT"), ("tid", "BIGINT"),
    ("message_at", "INTEGER"), ("message_len", "INTEGER"), ("raw", "VARCHAR"), ("marks", "INTEGER"),
    ("year_placeholder", "BOOLEAN"), ("step", "BIGINT"), ("says_step", "BOOLEAN"), ("nranks", "INTEGER"),
    ("teardown", "BOOLEAN"), ("progress_lo", "BIGINT"), ("progress_hi", "BIGINT"), ("class_id", "BIGINT"))

# The summaries' per-line text tests, which the engine decides in the scan (columns step, says_step,
# nranks, teardown of the lines: crates/engine/src/summary.rs), as SQL over a line's message, kind and
# severity: for the stores tests make by hand (insert_events), and the reference the engine is held
# equal to (tests/correlate/test_scan_summaries.py). DuckDB's regexps (RE2).
STEP_RE = r"(?i)\b(?:global[_ ])?(?:step|iter|iteration)\s*[=:#]?\s*\[?(\d+)"
SAYS_STEP_RE = r"(?i)\b(?:step|iter|iteration)\s*[=:#]?\s*\d+"
SCAN_SUMMARIES = {
    "step": ("CASE WHEN {kind} = 'progress' OR ({kind} IS NULL AND {severity} IN ('info', 'debug', 'notice')) "
             f"THEN TRY_CAST(nullif(regexp_extract({{message}}, '{STEP_RE}', 1), '') AS BIGINT) END"),
    "says_step": f"CASE WHEN {{kind}} IS NULL AND regexp_matches({{message}}, '{SAYS_STEP_RE}') THEN true END",
    "nranks": "TRY_CAST(nullif(regexp_extract({message}, '\\bnranks (\\d+)', 1), '') AS INTEGER)",
    "teardown": "coalesce({message} LIKE '%failed (exitcode:%' OR {message} LIKE '%closing signal SIGTERM%', false)",
}


def scan_summaries(message: str, kind: str, severity: str) -> dict[str, str]:
    """SCAN_SUMMARIES over the given SQL expressions of a line's message, kind and severity."""
    return {c: e.format(message=message, kind=kind, severity=severity) for c, e in SCAN_SUMMARIES.items()}


# The lines' view narrows these (the engine keeps 64 bits) with TRY_CAST: a line that says `[rank99999999999]`
# keeps no rank, where a CAST made every read of the lines fail.
_NARROW = {"rank": "INTEGER", "local_rank": "INTEGER", "task": "INTEGER"}


# The training position of a line's progress facts (columns progress_lo, progress_hi of the lines, which
# the engine writes from the facts it makes: crates/engine/src/out.rs progress_positions), as SQL over
# fact table progress: for the stores tests make by hand (insert_events, the facts given before the
# events), and the reference the engine is held equal to (tests/correlate/test_scan_summaries.py).
PROGRESS_POSITION = "coalesce(p.epoch, 0) * 1000000000 + p.step"


def progress_positions(con: duckdb.DuckDBPyConnection, event_id: str) -> dict[str, str]:
    """SQL of columns progress_lo / progress_hi of the line whose event_id is `event_id`, from the
    store's fact table progress (NULL when it has none, or no step column)."""
    from .correlate.util import has_columns
    if not has_columns(con, "progress", "step"):
        return {"progress_lo": "NULL", "progress_hi": "NULL"}
    pos = PROGRESS_POSITION if has_columns(con, "progress", "epoch") else PROGRESS_POSITION.replace("p.epoch", "NULL")
    q = f"(SELECT {{f}}({pos}) FROM progress p WHERE p.event_id = {event_id} AND p.step IS NOT NULL)"
    return {"progress_lo": q.format(f="min"), "progress_hi": q.format(f="max")}


def _year_exact(ref: float) -> str:
    """ts as the year inference places it (infer_years): a line waiting for its
    year takes, of the reference's year and its neighbours, the one that lands
    it nearest the reference time. (Per line: three calendar shifts and
    distances, ~0.15 us a line each time a query reads ts; _year_ts cuts it.)"""
    from datetime import datetime, timezone
    y = datetime.fromtimestamp(ref, timezone.utc).year
    cand = {d: f"(ts + to_years({y + d} - year(ts)))" for d in (-1, 0, 1)}
    dist = {d: f"abs(epoch({c}) - {ref!r})" for d, c in cand.items()}
    return (f"CASE WHEN {dist[0]} <= least({dist[-1]}, {dist[1]}) THEN {cand[0]} "
            f"WHEN {dist[-1]} <= {dist[1]} THEN {cand[-1]} ELSE {cand[1]} END")


# Year-less times are in the placeholder year, give or take a day of zone (--tz).
_PLACEHOLDER_SPAN = ("1999-12-30", "2001-01-03")


@functools.lru_cache(maxsize=8)
def _year_segments(ref: float) -> list[tuple[int, int, int]]:
    """The placeholder year cut into spans of time (microseconds since the
    epoch, [lo, hi)) over which _year_exact moves a time by one constant
    number of microseconds: (lo, hi, shift). The shift changes only where the
    year chosen changes (two cuts, found by bisection on _year_exact itself)
    and around a 29 February (a calendar shift of years clamps it). A handful
    of statements: the shifts of many points in one, each bisection in one
    (a recursive CTE); a statement per point asked took ~120 of them, 0.2-0.6 s
    of every ingest of year-less lines."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"CREATE MACRO placed(ts) AS {_year_exact(ref)}")
    con.execute("CREATE MACRO shift(t) AS epoch_us(placed(make_timestamp(t))) - t")

    def shifts(us: list[int]) -> dict[int, int]:
        return dict(con.execute("SELECT t, shift(t) FROM unnest($t::BIGINT[]) AS u(t)", {"t": us}).fetchall())

    day = 86_400_000_000
    lo, hi = con.execute(f"SELECT epoch_us(TIMESTAMP '{_PLACEHOLDER_SPAN[0]}'), "
                         f"epoch_us(TIMESTAMP '{_PLACEHOLDER_SPAN[1]}')").fetchone()
    dates = [f"{y}-{md}" for y in (PLACEHOLDER_YEAR - 1, PLACEHOLDER_YEAR, PLACEHOLDER_YEAR + 1)
             for md in ("01-01", "02-28", "02-29", "03-01", "03-02")]
    cuts = {lo, hi} | {got for (got,) in con.execute(
        "SELECT epoch_us(TRY_CAST(d AS TIMESTAMP)) FROM unnest($d::VARCHAR[]) AS u(d)", {"d": dates}).fetchall()
        if got is not None and lo < got < hi}
    # where the year chosen changes: the shift jumps by about a year
    points = sorted(cuts)
    at = shifts([p for x in points for p in (x, x - 1)])
    for a, b in zip(points, points[1:]):
        while abs(at[b - 1] - at[a]) > 2 * day:
            # shift(a) is a's, shift(b - 1) is not: bisect to the first point that is not
            z = con.execute("""
                WITH RECURSIVE s(x, z) AS (
                    SELECT $a::BIGINT, $b::BIGINT - 1
                    UNION ALL
                    SELECT CASE WHEN j THEN x ELSE m END, CASE WHEN j THEN m ELSE z END
                    FROM (SELECT x, z, (x + z) // 2 AS m, abs(shift((x + z) // 2) - $sa) > $gap AS j
                          FROM s WHERE z - x > 1))
                SELECT z FROM s WHERE z - x <= 1""", {"a": a, "b": b, "sa": at[a], "gap": 2 * day}).fetchone()[0]
            cuts.add(z)
            at.update(shifts([z]))
            a = z
    points = sorted(cuts)
    at.update(shifts([p for x in points for p in (x, x - 1) if p not in at]))   # the new cuts
    segs: list[tuple[int, int, int]] = []
    for a, b in zip(points, points[1:]):
        s_a, s_b = at[a], at[b - 1]
        if s_a != s_b:
            continue                   # (not constant: the exact rule there)
        if segs and segs[-1][1] == a and segs[-1][2] == s_a:
            segs[-1] = (segs[-1][0], b, s_a)   # one span per shift: fewer tests a line
        else:
            segs.append((a, b, s_a))
    con.close()
    return segs


def _year_ts(ref: float) -> str:
    """ts of a line as the year inference places it: a constant shift per span
    of the placeholder year (_year_segments; one comparison and an add a line),
    the exact rule elsewhere."""
    segs = _year_segments(ref)
    # spans in order and contiguous but where the exact rule holds: one upper bound a span
    whens = []
    prev = None
    for lo, hi, sh in segs:
        if prev is not None and lo != prev:
            whens.append(f"WHEN ts < make_timestamp({lo}) THEN {_year_exact(ref)}")
        elif prev is None:
            whens.append(f"WHEN ts < make_timestamp({lo}) THEN {_year_exact(ref)}")
        # (the shift added to the microseconds: `ts + to_microseconds(sh)` is the same time, and an
        # interval added to each of ~10 M lines cost every pass over the lines ~0.06-0.14 CPU-s more:
        # benchmarks/README.md, session 23)
        whens.append(f"WHEN ts < make_timestamp({hi}) THEN make_timestamp(epoch_us(ts) + {sh})")
        prev = hi
    return (f"CASE WHEN NOT year_placeholder OR ts IS NULL THEN ts {' '.join(whens)} "
            f"ELSE {_year_exact(ref)} END")


def year_segments(con: duckdb.DuckDBPyConnection) -> list[tuple[int, int, int]] | None:
    """The store's _year_segments (None: no year-less time was placed): meta 'year_segments', which
    infer_years keeps; found again for a store from before it did."""
    got = meta_value(con, "year_segments")
    if got is not None:
        return [tuple(s) for s in json.loads(got)]
    ref = meta_value(con, "year_reference")
    return None if ref is None else _year_segments(float(ref))


def logged_window(segments: list[tuple[int, int, int]] | None, lo_us: int, hi_us: int) -> str:
    """A predicate on column ts_logged (the time as the line gave it) that every line whose ts (its
    year placed by _year_ts over the store's year_segments) is in [lo_us, hi_us] passes, and few
    others: a range of ts_logged per span of the placeholder year that the span's shift moves into the
    window, each span where the exact rule holds whole. A filter on ts (an expression over ts_logged)
    reaches no Parquet statistics; one on ts_logged skips the row groups out of the window (a reader's
    window on a 1 GB store: 0.6 -> 0.05 s)."""
    ranges = [(lo_us, hi_us)]
    if segments is not None:
        prev, end = (_us_of(d) for d in _PLACEHOLDER_SPAN)
        for a, b, shift in segments:
            if a > prev:
                ranges.append((prev, a - 1))      # the exact rule: the whole span
            x, y = max(a, lo_us - shift), min(b - 1, hi_us - shift)
            if x <= y:
                ranges.append((x, y))
            prev = b
        if prev < end:
            ranges.append((prev, end - 1))
    return "(" + " OR ".join(f"ts_logged BETWEEN make_timestamp({a}::BIGINT) AND make_timestamp({b}::BIGINT)"
                             for a, b in ranges) + ")"


def _us_of(day: str) -> int:
    from datetime import datetime, timezone
    return int(datetime.fromisoformat(day).replace(tzinfo=timezone.utc).timestamp()) * 1_000_000


def make_lines_view(con: duckdb.DuckDBPyConnection) -> None:
    """View event_lines over the store's lines files (table lines_files), in
    their order; year-less times moved to the store's inferred year (meta
    'year_reference', set by infer_years); the rank a file implies (table
    implied_ranks, set by imply_ranks) on its lines that name none."""
    files = [r[0] for r in con.execute("SELECT path FROM lines_files ORDER BY seq").fetchall()]
    ref = meta_value(con, "year_reference")
    implied = _implied_rank_sql(con)
    cols = []
    for c, t in LINE_COLUMNS:
        e = _year_ts(float(ref)) if c == "ts" and ref is not None else c
        if c == "rank" and implied:
            e = implied
        cols.append(f"TRY_CAST({e} AS {_NARROW[c]}) AS {c}" if c in _NARROW else (e if e == c else f"{e} AS {c}"))
    cols.append("ts AS ts_logged")   # the lines files' own ts (logged_window)
    if files:
        src = "read_parquet([" + ", ".join(sql_literal(f) for f in files) + "])"
    else:
        src = "(SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {c}" for c, t in LINE_COLUMNS) + " LIMIT 0)"
    con.execute(f"CREATE OR REPLACE VIEW event_lines AS SELECT {', '.join(cols)} FROM {src}")


def events_over(con: duckdb.DuckDBPyConnection, lines: str, name: str) -> None:
    """Temp views `<name>_rows` and `<name>`: views event_rows and events as the schema makes them, over
    relation `lines` (rows of event_lines' columns: a subset taken once) instead of every line."""
    text = (data_dir("queries") / "schema" / "002_views.sql").read_text()
    rows = re.search(r"CREATE OR REPLACE VIEW event_rows AS\n(.*?);", text, re.S)[1]
    events = re.search(r"CREATE OR REPLACE VIEW events AS\n(.*?);", text, re.S)[1]
    if rows.count("FROM event_lines") != 1 or events.count("FROM event_rows r ") != 1:
        raise AssertionError("queries/schema/002_views.sql: views event_rows and events read other relations")
    if "ts_logged" not in [d[0] for d in con.execute(f"SELECT * FROM {lines} LIMIT 0").description]:
        # the lines of a store written before column ts_logged (its own views have none): the same
        # columns as its view events, which the rows made here are read beside
        rows, events = rows.replace(", ts_logged\n", "\n"), events.replace(", r.ts_logged\n", "\n")
        if "ts_logged" in rows + events:
            raise AssertionError("queries/schema/002_views.sql: ts_logged is not the last column of event_rows "
                                 "and events")
    con.execute(f"CREATE OR REPLACE TEMP VIEW {name}_rows AS " + rows.replace("FROM event_lines", f"FROM {lines}"))
    con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS " + events.replace("FROM event_rows r ", f"FROM {name}_rows r "))


def view_columns(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[str, str]]:
    """(column, SQL type) of a table or view, in order."""
    return [(r[0], r[1]) for r in con.execute(f'DESCRIBE "{name}"').fetchall()]


def make_fact_view(con: duckdb.DuckDBPyConnection, table: str, cols: list[tuple[str, str]] | None = None) -> None:
    """View `table` (one of PART_FACTS) over the store's files of it (table fact_files), in their order,
    with columns `cols` (name, SQL type; None: those the view has). A column no file has is NULL (a
    catalog that gained it after those parts were written)."""
    cols = cols or view_columns(con, table)
    files = [r[0] for r in con.execute("SELECT path FROM fact_files WHERE tbl = ? ORDER BY seq", [table]).fetchall()]
    if files:
        names = "[" + ", ".join(sql_literal(f) for f in files) + "]"
        have = {r[0] for r in con.execute(f"SELECT DISTINCT name FROM parquet_schema({names})").fetchall()}
        sel = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' if c in have else f'CAST(NULL AS {t}) AS "{c}"'
                        for c, t in cols)
        con.execute(f'CREATE OR REPLACE VIEW "{table}" AS SELECT {sel} FROM read_parquet({names}, union_by_name = true)')
    else:
        sel = ", ".join(f'CAST(NULL AS {t}) AS "{c}"' for c, t in cols)
        con.execute(f'CREATE OR REPLACE VIEW "{table}" AS SELECT {sel} LIMIT 0')


def make_fact_views(con: duckdb.DuckDBPyConnection) -> None:
    """Every view of PART_FACTS the store has, over its files as table fact_files lists them now."""
    have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                                      "AND table_type = 'VIEW'").fetchall()}
    for table in PART_FACTS:
        if table in have:
            make_fact_view(con, table)


def register_facts(con: duckdb.DuckDBPyConnection, part: str, paths: list[tuple[str, str, int]]) -> None:
    """Files (table, path relative to the store, rows) of part `part` into their views of PART_FACTS
    (in the caller's transaction)."""
    for table, path, n in paths:
        con.execute("INSERT INTO fact_files VALUES ($1, $2, $3, $4, "
                    "coalesce((SELECT max(seq) FROM fact_files), 0) + 1)", [table, path, part, n])
    for table in sorted({t for t, _, _ in paths}):
        make_fact_view(con, table)


def imply_ranks(con: duckdb.DuckDBPyConnection) -> int:
    """Table implied_ranks: the global rank of a file's process where the file implies it and its
    lines never say it (torchrun --log-dir writes attempt_N/<local_rank>/stderr.log with no rank on any
    line): the rank its NCCL lines give in the world's communicator (the largest one its host's
    processes joined: a sub-group's or a split's rank is the place in that group), when those lines
    name one rank, every line of the file that names a process names the same one (a console of
    several processes implies nothing) and its own ranked lines (if any) say that rank. Each row keeps the line it rests on (`event_id`, `basis`). View event_lines puts the rank
    on the file's lines that name none, as the identity layer carries a stream's host
    (crates/engine/src/stream.rs): so `events`, `events_aligned` and the lanes have it. Returns the
    number of files. A SQL pass after the parse: which communicator is the world is known only once
    every file of the host is read."""
    con.execute("CREATE TABLE IF NOT EXISTS implied_ranks (file_id BIGINT PRIMARY KEY, rank INTEGER NOT NULL, "
                "event_id BIGINT, basis VARCHAR)")
    con.execute("DELETE FROM implied_ranks")
    make_lines_view(con)
    cols = set(table_columns(con, "nccl_comm")) if con.execute(   # (a table, or a view: PART_FACTS)
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'nccl_comm'").fetchone()[0] else set()
    if not {"event_id", "rank", "nranks"} <= cols:
        return 0
    # (the lines that say `nranks N`: the engine's column; none without a rank of its own, nothing to do)
    if not con.execute("SELECT count(*) FROM (SELECT 1 FROM event_lines WHERE nranks IS NOT NULL AND rank IS NULL "
                       "LIMIT 1)").fetchone()[0]:
        return 0
    con.execute("""
        INSERT INTO implied_ranks
        WITH c AS (
            SELECT l.file_id, l.event_id, k.host, l.pid, f.rank, f.nranks
            FROM nccl_comm f JOIN (SELECT * FROM event_lines WHERE nranks IS NOT NULL) l USING (event_id)
                JOIN event_classes k USING (class_id)
            WHERE f.rank IS NOT NULL AND f.nranks IS NOT NULL AND k.host IS NOT NULL
        ), w AS (
            SELECT * FROM c QUALIFY nranks = max(nranks) OVER (PARTITION BY host)
        ), per_file AS (
            SELECT file_id, min(rank) AS rank, count(DISTINCT rank) AS ranks, min(event_id) AS event_id,
                   max(nranks) AS nranks
            FROM w GROUP BY file_id
        ), own AS (   -- what the file's lines say themselves: their ranks, their processes
            SELECT file_id, count(DISTINCT rank) AS ranks, min(rank) AS rank, count(DISTINCT pid) AS pids
            FROM event_lines WHERE (rank IS NOT NULL OR pid IS NOT NULL)
                AND file_id IN (SELECT file_id FROM per_file) GROUP BY file_id
        )
        SELECT p.file_id, p.rank, p.event_id, 'nccl world communicator (nranks ' || p.nranks || ')'
        FROM per_file p JOIN own o USING (file_id)
        WHERE p.ranks = 1 AND o.pids = 1 AND (o.ranks = 0 OR (o.ranks = 1 AND o.rank = p.rank))
    """)
    make_lines_view(con)
    return con.execute("SELECT count(*) FROM implied_ranks").fetchone()[0]


def _implied_rank_sql(con: duckdb.DuckDBPyConnection, rank: str = "rank", file_id: str = "file_id") -> str | None:
    """The rank column of view event_lines with table implied_ranks applied: a line's own rank, else
    its file's (`rank`, `file_id`: the SQL of the line's two columns). An O(1) look-up per line: the
    files' ids hashed into list slots (file_id % m, m the first size from n on at which no two of them
    share a slot), each slot's id checked."""
    if not table_exists(con, "implied_ranks"):
        return None
    rows = con.execute("SELECT file_id, rank FROM implied_ranks ORDER BY file_id").fetchall()
    if not rows:
        return None
    m = len(rows)
    while len({f % m for f, _ in rows}) < len(rows):
        m += 1
    ids, ranks = ["NULL"] * m, ["NULL"] * m
    for f, r in rows:
        ids[f % m], ranks[f % m] = str(int(f)), str(int(r))
    slot = f"({file_id} % {m}) + 1"
    return (f"CASE WHEN {rank} IS NULL AND list_extract(CAST([{', '.join(ids)}] AS BIGINT[]), {slot}) = {file_id} "
            f"THEN list_extract(CAST([{', '.join(ranks)}] AS BIGINT[]), {slot}) ELSE {rank} END")


def line_rank_sql(con: duckdb.DuckDBPyConnection, rank: str, file_id: str) -> str:
    """A line's rank as view event_lines gives it (INTEGER, its file's implied rank where it names
    none), from the SQL of the line's own rank and file id (a LINE_FACTS row's line_rank, file_id)."""
    return f"CAST({_implied_rank_sql(con, rank, file_id) or rank} AS INTEGER)"


def sql_literal(value) -> str:
    """A string as an SQL literal."""
    return "'" + str(value).replace("'", "''") + "'"


def register_lines(con: duckdb.DuckDBPyConnection, part: str, paths: list[tuple[str, int]]) -> None:
    """Lines files (relative to the store, with their row counts) of part
    `part` into view event_lines (in the caller's transaction)."""
    if not paths:
        return
    con.execute("INSERT INTO lines_files SELECT unnest($1), $2, unnest($3), "
                "coalesce((SELECT max(seq) FROM lines_files), 0) + generate_subscripts($1, 1)",
                [[p for p, _ in paths], part, [n for _, n in paths]])
    make_lines_view(con)


def file_id_for(sha256: str, path: str) -> int:
    # 31 bits so that file_id << 32 | line fits a signed BIGINT.
    return int(hashlib.sha256(f"{sha256}\0{path}".encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


def sha256_file(opener, chunk: int = 1 << 20) -> str:
    """sha256 of what `opener()` reads. Into one buffer, reused (readinto): a new 8 MB bytes object a
    read was ~70 k page faults per GB, 0.2 CPU-s of the kernel's (benchmarks/README.md, session 17)."""
    import io
    h = hashlib.sha256()
    with opener() as fh:
        buf = bytearray(chunk)
        view = memoryview(buf)
        readinto = getattr(fh, "readinto", None)
        try:
            n = readinto(buf) if readinto is not None else None
        except (NotImplementedError, io.UnsupportedOperation):
            n = None   # (an archive member through ingest.discover.BoundedReader: a RawIOBase of read() only)
        if n is None:   # a stream of read() only
            while b := fh.read(chunk):
                h.update(b)
            return h.hexdigest()
        while n:
            h.update(view[:n])
            n = readinto(buf)
    return h.hexdigest()


def insert_table(con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
    """Arrow rows into `table`, by column name (a column they lack is NULL)."""
    arrow = rows  # noqa: F841 - referenced by name in SQL
    con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM arrow')


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """The columns of a table or view (an SQL name, maybe qualified), in order."""
    return [d[0] for d in con.execute(f"SELECT * FROM {table} LIMIT 0").description]


def insert_events(con: duckdb.DuckDBPyConnection, source: str) -> None:
    """Events given whole, with the columns of view `events` (by name; one
    missing is NULL), from relation `source`, into event_classes and a lines
    file of a part of their own: what tests make by hand. A file's new classes
    are numbered after those it has, in the order of their first line (the
    engine's order: crates/engine/src/classes.rs). Ingest does not come here:
    the engine writes lines files and hands over classes."""
    import uuid
    cls = [c for c in table_columns(con, "event_classes") if c != "class_id"]   # what a class is
    same = " AND ".join(f'w."{c}" IS NOT DISTINCT FROM c."{c}"' for c in cls)
    cols = ", ".join(f'"{c}"' for c in cls)
    con.execute("CREATE OR REPLACE TEMP TABLE _wide_events AS SELECT * FROM events LIMIT 0")
    con.execute(f"INSERT INTO _wide_events BY NAME SELECT * FROM {source}")
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _new_classes AS
        WITH c AS (SELECT {cols}, min(line) AS first_line FROM _wide_events GROUP BY ALL),
             had AS (SELECT file_id, max(class_id & 4294967295) + 1 AS next FROM event_classes GROUP BY file_id)
        SELECT (file_id << 32) | (coalesce(had.next, 0) - 1
                + row_number() OVER (PARTITION BY file_id ORDER BY first_line, {cols})) AS class_id, {cols}
        FROM c LEFT JOIN had USING (file_id)""")
    con.execute("INSERT INTO event_classes BY NAME SELECT * FROM _new_classes")
    # the message's place in raw (a test may give a message that is not in its raw: then all of raw)
    at = "instr(coalesce(w.raw, w.message), w.message)"
    own = {"message_at": f"CASE WHEN {at} > 0 THEN {at} ELSE 1 END",
           "message_len": f"CASE WHEN {at} > 0 THEN length(w.message) ELSE length(coalesce(w.raw, w.message)) END",
           "year_placeholder": (f"w.ts IS NOT NULL AND (w.ts_kind = 'year_inferred' OR (w.ts_kind = 'interpolated' "
                                f"AND year(w.ts) = {PLACEHOLDER_YEAR}))"),
           "class_id": "c.class_id", "marks": "w.marks",
           **scan_summaries("w.message", "w.kind", "w.severity"),
           **progress_positions(con, "w.event_id")}
    sel = ", ".join(f"CAST({own.get(c, 'w.' + c)} AS {t}) AS {c}" for c, t in LINE_COLUMNS)
    part = f"given-{uuid.uuid4().hex[:16]}"
    rel = f"{PARTS}/{part}/event_lines-0.parquet"
    out = store_dir_of(con) / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    # (the message is all of raw here: raw is the message when a test gives no raw)
    con.execute(f"COPY (SELECT {sel.replace('w.raw', 'coalesce(w.raw, w.message)')} FROM _wide_events w "
                f"JOIN _new_classes c ON {same} ORDER BY w.event_id) TO {sql_literal(out)} (FORMAT parquet)")
    n = con.execute("SELECT count(*) FROM _wide_events").fetchone()[0]
    register_lines(con, part, [(rel, n)])
    con.execute("DROP TABLE _wide_events")
    con.execute("DROP TABLE _new_classes")


def fill_line_facts(con: duckdb.DuckDBPyConnection) -> None:
    """The line's columns (LINE_FACTS) of fact rows a test gave by hand (their fact's columns only),
    from their lines: the SQL that the engine's columns are held equal to
    (tests/correlate/test_world_comms.py). Ingest does not come here: the engine writes them."""
    from .correlate.identity import SRUN_RANK
    for table, cols in LINE_FACTS.items():
        if not table_exists(con, table):
            continue
        have = set(table_columns(con, table))
        for c, t in cols:
            if c not in have:
                con.execute(f'ALTER TABLE "{table}" ADD COLUMN "{c}" {t}')
        con.execute(f"""
            UPDATE "{table}" f SET line_rank = l.rank, line_local_rank = l.local_rank, line_pid = l.pid,
                line_task = l.task, line_nranks = l.nranks, line_srun_rank = l.srun_rank, line_class_id = l.class_id
            FROM (SELECT event_id, rank, local_rank, pid, task, nranks, {SRUN_RANK} AS srun_rank, class_id
                  FROM event_lines) l
            WHERE l.event_id = f.event_id""")


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: list[list]) -> None:
    """Rows (in the table's column order) in one INSERT: executemany pays
    ~2 ms a row in a file store (100k files: minutes)."""
    names = table_columns(con, table)
    import pyarrow as pa   # (polars, which made this frame before, costs an ingest 0.2-0.5 s to import)
    arrow = pa.table({n: pa.array([r[i] for r in rows]) for i, n in enumerate(names)})  # noqa: F841
    con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM arrow")


# Made from the parts of the lines' groups (identity._parts_sql), when those are the lines as they are (no
# interpolated time) and no line is an echo: the three passes over every line each of these files made
# (4 CPU-s on the 1 GB corpus) are sums of those parts (_summaries_from_parts).
FROM_PARTS = ("echoes", "lane_buckets", "lanes")
# The slot of time by which an ingest's first grouping of the lines keeps them apart (identity._parts_sql),
# in timeline slots (lane_buckets.sql: the logged span / 2000): the attempts' cuts split the groups by
# grouping again the lines of the slots they fall in only, and lane_buckets is a sum of the parts when it
# is one. (The groups are the same whatever the slot: tests/correlate/test_stored_groups.py.)
GROUP_SLOTS = 1


def refresh_summaries(con: duckdb.DuckDBPyConnection) -> None:
    """Tables derived from events that readers want without a scan (lanes),
    and the clock offsets behind view events_aligned (queries/store/clock.sql)."""
    from .correlate.clock import forget_line_sets, store_line_sets
    files = {f.stem: f.read_text() for f in sorted((data_dir("queries") / "store").glob("*.sql"))}
    for name, sql in files.items():
        if name not in FROM_PARTS:
            con.execute(sql)
    forget_line_sets(con)   # selected anew by the clock estimate and the attempts below, then kept
    # the lines grouped once, in parts the attempts split (identity._parts_sql), by timeline slot
    span = re.search(r"WITH span AS \((.*?)\n\), p AS", files["lane_buckets"], re.S)[1]
    lane = con.execute(f"SELECT width FROM ({span})").fetchone()[0]
    con.execute("CREATE OR REPLACE TEMP TABLE group_slot AS SELECT ? AS width, ? AS lane_width",
                [max(1, int((lane or 60) * GROUP_SLOTS * 1000000)), lane])
    try:
        clock = store_clock_offsets(con)
        if not _summaries_from_parts(con, files):
            for name in FROM_PARTS:
                con.execute(files[name])
        if store_attempts(con, clock):
            store_line_sets(con)   # what diagnose's filters select: readers need not scan every line for them
    finally:
        for t in ("group_slot", "group_parts", "group_parts_made", "group_cut"):
            con.execute(f"DROP TABLE IF EXISTS temp.{t}")


def _summaries_from_parts(con: duckdb.DuckDBPyConnection, files: dict[str, str]) -> bool:
    """Tables echoes, lanes and lane_buckets (queries/store/) from temp table group_parts, the lines'
    partial groups by class, a line's own identity, sane time and timeline slot (each file's first step
    over event_rows is a sum of them). False, nothing made, when there are no parts of the lines as
    event_rows gives them (interpolated times), their slots are not the timeline's, or a line is an echo
    (lanes and lane_buckets count an echo once: its parts do not say which lines those are)."""
    if not table_exists(con, "group_parts") or con.execute("SELECT interpolated FROM group_parts_made").fetchone()[0]:
        return False
    width, lane = con.execute("SELECT width, lane_width FROM group_slot").fetchone()
    spans = ("    SELECT rank, file_id, min(ts) AS lo, max(ts) AS hi, bool_or(ts IS NULL) AS untimed\n"
             "    FROM event_rows WHERE rank IS NOT NULL GROUP BY rank, file_id\n")
    lanes = re.compile(r"(WITH p AS \(\n).*?(\n\)\nSELECT c\.host,)", re.S)
    buckets = re.compile(r"(WITH span AS \().*?(\n\)\nSELECT c\.host,)", re.S)
    if files["echoes"].count(spans) != 1 or len(lanes.findall(files["lanes"])) != 1 \
            or len(buckets.findall(files["lane_buckets"])) != 1:
        raise AssertionError("queries/store/: echoes, lanes or lane_buckets.sql no longer in the steps read here")
    # (a part's ts is its first time, max_ts its last; ts IS NULL: every line of it has none, sane keys them)
    con.execute(files["echoes"].replace(spans, (
        "    SELECT p.rank, c.file_id, min(p.ts) AS lo, max(p.max_ts) AS hi, bool_or(p.ts IS NULL) AS untimed\n"
        "    FROM temp.group_parts p JOIN event_classes c USING (class_id) WHERE p.rank IS NOT NULL\n"
        "    GROUP BY p.rank, c.file_id\n")))
    if lane is None or width != lane * 1000000 or con.execute("SELECT EXISTS (SELECT 1 FROM echoes)").fetchone()[0]:
        for name in ("lane_buckets", "lanes"):
            con.execute(files[name])
        return True
    con.execute(lanes.sub(lambda m: m[1] + (
        "    SELECT class_id, rank, sane, CAST(sum(n) AS BIGINT) AS n, min(ts) AS min_ts, max(max_ts) AS max_ts\n"
        "    FROM temp.group_parts GROUP BY ALL") + m[2], files["lanes"]))
    con.execute(buckets.sub(lambda m: "WITH p AS (\n" + (
        f"    SELECT class_id, rank, slot * {int(lane)} AS slot, CAST({int(lane)} AS BIGINT) AS width,\n"
        "           CAST(sum(n) AS BIGINT) AS n\n"
        "    FROM temp.group_parts WHERE sane GROUP BY class_id, rank, slot") + m[2], files["lane_buckets"]))
    return True


def store_attempts(con: duckdb.DuckDBPyConnection, clock: list[dict]) -> bool:
    """Tables attempts and attempt_spans (ranktrace.correlate.attempts), behind view events_aligned's
    `attempt` (made again for those spans: make_aligned_view). Like the clock, a help for SQL users: a
    failure is said in meta 'attempts_error' and never fails the ingest (one attempt is assumed). True
    when the attempts were found."""
    db = con.execute("SELECT current_database()").fetchone()[0].replace('"', '""')
    con.execute("DELETE FROM meta WHERE key = 'attempts_error'")
    try:
        from .correlate.attempts import store_attempts as store
        store(con, clock, db)
        found = True
    except Exception as exc:
        con.execute("INSERT INTO meta VALUES ('attempts_error', ?)", [f"{type(exc).__name__}: {exc}"])
        con.execute(f'DELETE FROM "{db}".main.attempts')
        con.execute(f'DELETE FROM "{db}".main.attempt_spans')
        found = False
    make_aligned_view(con)
    return found


def _aligned_view_sql() -> str:
    """The CREATE VIEW events_aligned statement of queries/store/clock.sql (its attempt found by a join)."""
    text = (data_dir("queries") / "store" / "clock.sql").read_text()
    return text[text.index("CREATE OR REPLACE VIEW events_aligned AS"):].strip().rstrip(";")


def aligned_view_sql(slots: int) -> str:
    """View events_aligned of queries/store/clock.sql with the attempt of a line found without a join per
    line: its class (a host) carries its host's attempt_spans, the first `slots` of them in order of
    start (a{i}: the attempt, s{i}: the start), and a CASE picks the last span the line's time has
    reached. The same rows as the join when every host has at most `slots` spans, each ending where the
    next begins (stop = the next one's start), the first starting by 1990 and the last ending after 2100
    (every ats is in between): what make_aligned_view checks."""
    text = _aligned_view_sql()
    head = "SELECT a.* EXCLUDE (host_key),\n"
    host_key = "               coalesce(c.host, '') AS host_key\n"
    offsets = "        LEFT JOIN clock_offsets o ON o.host = coalesce(c.host, '@' || c.file)\n"
    carried = "           k.host_key\n"
    join = "\nLEFT JOIN attempt_spans s ON s.host = a.host_key AND a.ats >= s.start AND a.ats < s.stop"
    attempt = text[text.index(head):text.index("FROM (")]
    if any(text.count(x) != 1 for x in (head, host_key, offsets, carried, join)) or not text.endswith(join):
        raise AssertionError("queries/store/clock.sql: view events_aligned is no longer in the form read here")
    a = [f"a{i}" for i in range(1, slots + 1)]
    s = [f"s{i}" for i in range(2, slots + 1)]
    slot_cols = [f"h.a[{i}] AS a{i}" for i in range(1, slots + 1)] + [f"h.s[{i}] AS s{i}" for i in range(2, slots + 1)]
    text = text.replace(host_key, host_key.rstrip("\n") + "".join(f",\n               {c}" for c in slot_cols) + "\n")
    text = text.replace(offsets, offsets + (
        "        LEFT JOIN (   -- each host's spans, in order\n"
        "            SELECT host, list(attempt ORDER BY start) AS a, list(start ORDER BY start) AS s\n"
        "            FROM attempt_spans GROUP BY host\n"
        "        ) h ON h.host = coalesce(c.host, '')\n"))
    text = text.replace(carried, carried.rstrip("\n") + "".join(f", k.{c}" for c in a + s) + "\n")
    # span i is [s{i}, s{i+1}): the first i whose next start the line has not reached (a{i} NULL: a host
    # of no span, as the join's no match: attempt 1)
    pick = " ".join(f"WHEN s{i + 1} IS NULL OR a.ats < s{i + 1} THEN a{i}" for i in range(1, slots))
    pick = (f"CASE {pick} ELSE a{slots} END" if slots > 1 else "a1") if slots else "NULL"
    text = text.replace(attempt, (
        f"SELECT a.* EXCLUDE (host_key{''.join(', ' + c for c in a + s)}),\n"
        f"       CASE WHEN a.ats IS NOT NULL THEN coalesce({pick}, 1) END AS attempt\n"))
    return text[:-len(join)]


def make_aligned_view(con: duckdb.DuckDBPyConnection) -> None:
    """View events_aligned (queries/store/clock.sql) for the store's attempt_spans as they are now: when
    they are as ranktrace.correlate.attempts writes them (aligned_view_sql says how), the form that finds
    a line's attempt with no join per line (the long run's 15.4 M lines: the join was a third of the
    README's queries over events_aligned); else the join of clock.sql."""
    db = con.execute("SELECT current_database()").fetchone()[0].replace('"', '""')
    regular, slots = con.execute(f"""
        WITH s AS (
            SELECT start, stop, lead(start) OVER w AS next, row_number() OVER w AS i, count(*) OVER (PARTITION BY host) AS n
            FROM "{db}".main.attempt_spans WHERE host IS NOT NULL
            WINDOW w AS (PARTITION BY host ORDER BY start)
        )
        SELECT coalesce(bool_and(coalesce(start < stop AND (i > 1 OR start <= TIMESTAMP '1990-01-01')
                                          AND (next IS NULL AND stop >= TIMESTAMP '2100-01-01' OR next = stop),
                                          false)), true),
               coalesce(max(n), 0)
        FROM s""").fetchone()
    con.execute(aligned_view_sql(int(slots)) if regular else _aligned_view_sql())


def store_clock_offsets(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Fill table clock_offsets with ranktrace.correlate.clock's estimate, so
    that SQL (the README's queries, the TUI console) can read aligned time
    (`ats` of events_aligned). A failed estimate leaves the table empty (ats =
    ts) and says why in meta 'clock_error': it never fails the ingest."""
    db = con.execute("SELECT current_database()").fetchone()[0].replace('"', '""')
    table = f'"{db}".main.clock_offsets'   # never the temp table of a diagnosis
    from .correlate.identity import forget_groups, store_groups
    forget_groups(con)   # made anew below, from the events as they are now
    # and so are the interpolated times of the clock (store_attempts): the groups are made without those
    # of an ingest before, as a first ingest makes them
    con.execute(f'DELETE FROM "{db}".main.interpolated_times')
    try:
        from .correlate.clock import estimate_offsets
        clock = estimate_offsets(con)
        err = None
        store_groups(con)   # the groups the estimate read: readers need not group the lines again
    except Exception as exc:  # the estimate is a help for SQL users, not the ingest's job
        clock, err = [], f"{type(exc).__name__}: {exc}"
    con.execute(f"DELETE FROM {table}")
    if clock:
        insert_rows(con, table, [[c["host"], c["offset_s"], c["uncertainty_s"], c["basis"]] for c in clock])
    con.execute("DELETE FROM meta WHERE key = 'clock_error'")
    if err:
        con.execute("INSERT INTO meta VALUES ('clock_error', ?)", [err])
    return clock


def median_epoch(con: duckdb.DuckDBPyConnection, values: str) -> float | None:
    """median(e) over `values` (a SELECT of one DOUBLE column e), as DuckDB's median gives it, in
    bounded memory: median() holds every value at once (128 MiB for the 15 M times of a 1.5 GB run,
    past an ingest's DuckDB limit), so the values are counted per second first, and only the one or
    two seconds that hold the middle values are read again."""
    buckets = con.execute(f"SELECT floor(e) AS s, count(*) AS c FROM ({values}) GROUP BY 1 ORDER BY 1").fetchall()
    n = sum(c for _, c in buckets)
    if not n:
        return None

    def nth(k: int) -> float:   # the k-th value (0-based) in order
        before = 0
        for sec, c in buckets:
            if k < before + c:
                return con.execute(f"SELECT e FROM ({values}) WHERE floor(e) = ? ORDER BY e LIMIT 1 OFFSET ?",
                                   [sec, k - before]).fetchone()[0]
            before += c
        raise AssertionError("rank past the values")

    lo, hi = (n - 1) // 2, n // 2
    a = nth(lo)
    return a if hi == lo else a + (nth(hi) - a) * 0.5   # DuckDB's interpolation between the two middle values


# the centre of the year window before a collection time: half a year, less a day of clock skew
COLLECTED_BEFORE_S = 365.25 / 2 * 86400 - 86400


def infer_years(con: duckdb.DuckDBPyConnection) -> int | None:
    """Place year-less times in the year that puts them nearest the bundle's
    fully dated events. Returns the reference year used (None: nothing to do).

    The reference is the median of the exactly/locally dated events (else half a
    year before the files' collection time); each year-less time takes, of the reference year and its neighbours, the year
    that lands it closest to that median (a December glog line in a January
    bundle goes to the year before). The lines files keep the placeholder
    year: view event_lines moves them (make_lines_view), from meta
    'year_reference'."""
    con.execute("DELETE FROM meta WHERE key IN ('year_reference', 'year_segments')")
    make_lines_view(con)
    n = con.execute("SELECT count(*) FROM event_lines WHERE year_placeholder").fetchone()[0]
    if not n:
        return None
    ref = median_epoch(con, "SELECT epoch(ts) AS e FROM events WHERE ts_kind IN ('exact','local','envelope') "
                            "AND ts IS NOT NULL")
    if ref is None:
        # no dated line: the files' collection time. Logs are written before they are collected, so
        # the year window is centred half a year before it (a year-less time lands in the year up to
        # a day after the collection, not in the next year for being nearer: March logs read in
        # December are this year's)
        ref = con.execute("SELECT epoch(CAST(value AS TIMESTAMP)) FROM meta WHERE key = 'fallback_time'").fetchone()
        ref = ref[0] - COLLECTED_BEFORE_S if ref and ref[0] is not None else None
    if ref is None:
        return None
    con.execute("INSERT INTO meta VALUES ('year_reference', ?)", [repr(float(ref))])
    # (for readers: finding them takes DuckDB's calendar a second, logged_window)
    con.execute("INSERT INTO meta VALUES ('year_segments', ?)", [json.dumps(_year_segments(float(ref)))])
    make_lines_view(con)
    return int(con.execute("SELECT year(to_timestamp(?))", [ref]).fetchone()[0])
