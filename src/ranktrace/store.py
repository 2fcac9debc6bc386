"""store: the DuckDB file. The only writer of the store.

Each input file goes in with one transaction: a store interrupted mid-ingest
opens with every file either complete or absent.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from typing import TYPE_CHECKING

import duckdb

from .resources import data_dir

if TYPE_CHECKING:  # pyarrow and polars are imported where used: readers (tui, sql) start faster without them
    import pyarrow as pa

    from .formats import Catalog

DEFAULT_DB = "ranktrace.duckdb"
# The tables behind view `events` (queries/schema): readers read the view, never these as facts.
EVENT_TABLES = ("event_lines", "event_classes")
FACT_SQL_TYPES = {"str": "VARCHAR", "int": "BIGINT", "float": "DOUBLE"}
# 3: events is a view over event_rows and event_classes; 4: event_rows.marks; 5: table event_lines
# keeps the message as a span of raw, view event_rows gives it back
SCHEMA_VERSION = "5"
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


def _connect(path: str | Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    p = Path(path)
    if p.is_dir():
        raise StoreError(f"{p}: is a directory; give --db a file name, e.g. --db {p / DEFAULT_DB}")
    if read_only and not p.exists():
        raise StoreMissing(f"{p}: no such store; create it with `ranktrace ingest PATH --db {p}`")
    parent = p.parent if str(p.parent) else Path(".")
    if not read_only and not parent.is_dir():
        raise StoreError(f"{p}: directory {parent} does not exist; create it (mkdir -p {parent}) or "
                         "choose another --db")
    try:
        return duckdb.connect(str(p), read_only=read_only)
    except duckdb.Error as exc:
        raise store_error(p, exc) from None


def open_store(path: str | Path, cat: Catalog | None = None) -> duckdb.DuckDBPyConnection:
    con = _connect(path, read_only=False)
    try:
        check_version(con, path, writing=True)
    except StoreError:
        con.close()
        raise
    con.execute("SET TimeZone = 'UTC'")
    init_schema(con, cat)  # an older store is brought up to this version here
    from . import marks
    marks.stamp(con)       # (a writer adds lines marked by this version)
    return con


def meta_value(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    """A value of the store's table meta (None: not set, or no ranktrace meta)."""
    if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'").fetchone()[0]:
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
    if n < ours and not writing:
        raise StoreError(f"{path}: written by an older ranktrace (store schema version {n}; this one reads "
                         f"version {ours}); bring it up to date by ingesting into it once more, e.g. "
                         f"`ranktrace ingest LOGS --db {path}` (files already in it are skipped)")


def open_readonly(path: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to a ranktrace store; StoreError (with what to do)
    when it is missing, not a DuckDB file, not a store, or locked by a writer."""
    p = Path(path)
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
    # Schema 2 kept one wide row per event in table `events`; it becomes rows and classes.
    wide = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'events' "
                       "AND schema_name = 'main' AND NOT temporary").fetchone()[0]
    if wide:
        con.execute("DROP VIEW IF EXISTS events_classified")
        con.execute("ALTER TABLE events RENAME TO events_schema2")
    _lines_table(con)
    for f in schema_files():
        if f.name == "002_views.sql":
            _add_marks(con)   # (the views read it)
        con.execute(f.read_text())
    if wide:
        insert_events(con, "events_schema2")
        con.execute("DROP TABLE events_schema2")
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
        if table not in have:
            defs = "".join(f', "{c}" {FACT_SQL_TYPES[t]}' for c, t in cols.items())
            con.execute(f'CREATE TABLE "{table}" (event_id BIGINT NOT NULL, file_id BIGINT NOT NULL{defs})')
            continue
        # A store from an older catalog gets the columns facts have gained since.
        for c, t in cols.items():
            if c not in have[table]:
                con.execute(f'ALTER TABLE "{table}" ADD COLUMN "{c}" {FACT_SQL_TYPES[t]}')


def _lines_table(con: duckdb.DuckDBPyConnection) -> None:
    """A store of schema 3 or 4 keeps its lines in table event_rows, each
    with its message's text: the table becomes event_lines (with the
    message's place in raw, NULL on those lines: their text stays), and
    event_rows the view over it (002_views.sql)."""
    old = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'event_rows' "
                      "AND schema_name = 'main' AND NOT temporary").fetchone()[0]
    if old:
        con.execute("DROP VIEW IF EXISTS events_classified")
        con.execute("DROP VIEW IF EXISTS events")
        con.execute("ALTER TABLE event_rows RENAME TO event_lines")
        con.execute("ALTER TABLE event_lines ADD COLUMN message_at INTEGER")
        con.execute("ALTER TABLE event_lines ADD COLUMN message_len INTEGER")


def _add_marks(con: duckdb.DuckDBPyConnection) -> None:
    """A store of schema 3 gets column event_lines.marks, NULL on its lines:
    unknown, so every text test is run on them (marks.py)."""
    has = con.execute("SELECT count(*) FROM duckdb_columns() WHERE table_name = 'event_lines' "
                      "AND column_name = 'marks' AND NOT internal AND schema_name = 'main'").fetchone()[0]
    if not has:
        con.execute("ALTER TABLE event_lines ADD COLUMN marks INTEGER")


def file_id_for(sha256: str, path: str) -> int:
    # 31 bits so that file_id << 32 | line fits a signed BIGINT.
    return int(hashlib.sha256(f"{sha256}\0{path}".encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


def sha256_file(opener, chunk: int = 8 << 20) -> str:
    h = hashlib.sha256()
    with opener() as fh:
        while True:
            b = fh.read(chunk)
            if not b:
                break
            h.update(b)
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
    missing is NULL), from relation `source`, into event_lines and
    event_classes: what tests make by hand, and the events of a schema 2
    store. A file's new classes are numbered after those it has, in the order
    of their first line (the engine's order: crates/engine/src/classes.rs).
    Ingest does not come here: the engine hands over rows and classes."""
    cls = [c for c in table_columns(con, "event_classes") if c != "class_id"]   # what a class is
    own = [c for c in table_columns(con, "event_rows") if c != "class_id"]   # message as text, not its place
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
    con.execute(f"INSERT INTO event_lines BY NAME SELECT {', '.join(f'w.{c}' for c in own)}, c.class_id "
                f"FROM _wide_events w JOIN _new_classes c ON {same}")
    con.execute("DROP TABLE _wide_events")
    con.execute("DROP TABLE _new_classes")


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: list[list]) -> None:
    """Rows (in the table's column order) in one INSERT: executemany pays
    ~2 ms a row in a file store (100k files: minutes)."""
    names = table_columns(con, table)
    import pyarrow as pa   # (polars, which made this frame before, costs an ingest 0.2-0.5 s to import)
    arrow = pa.table({n: pa.array([r[i] for r in rows]) for i, n in enumerate(names)})  # noqa: F841
    con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM arrow")


def refresh_summaries(con: duckdb.DuckDBPyConnection) -> None:
    """Tables derived from events that readers want without a scan (lanes),
    and the clock offsets behind view events_aligned (queries/store/clock.sql)."""
    for f in sorted((data_dir("queries") / "store").glob("*.sql")):
        con.execute(f.read_text())
    clock = store_clock_offsets(con)
    store_attempts(con, clock)


def store_attempts(con: duckdb.DuckDBPyConnection, clock: list[dict]) -> None:
    """Tables attempts and attempt_spans (ranktrace.correlate.attempts), behind view events_aligned's
    `attempt`. Like the clock, a help for SQL users: a failure is said in meta 'attempts_error' and
    never fails the ingest (one attempt is assumed)."""
    db = con.execute("SELECT current_database()").fetchone()[0].replace('"', '""')
    con.execute("DELETE FROM meta WHERE key = 'attempts_error'")
    try:
        from .correlate.attempts import store_attempts as store
        store(con, clock, db)
    except Exception as exc:
        con.execute("INSERT INTO meta VALUES ('attempts_error', ?)", [f"{type(exc).__name__}: {exc}"])
        con.execute(f'DELETE FROM "{db}".main.attempts')
        con.execute(f'DELETE FROM "{db}".main.attempt_spans')


def store_clock_offsets(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Fill table clock_offsets with ranktrace.correlate.clock's estimate, so
    that SQL (the README's queries, the TUI console) can read aligned time
    (`ats` of events_aligned). A failed estimate leaves the table empty (ats =
    ts) and says why in meta 'clock_error': it never fails the ingest."""
    db = con.execute("SELECT current_database()").fetchone()[0].replace('"', '""')
    table = f'"{db}".main.clock_offsets'   # never the temp table of a diagnosis
    from .correlate.identity import forget_groups, store_groups
    forget_groups(con)   # made anew below, from the events as they are now
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


def infer_years(con: duckdb.DuckDBPyConnection) -> int | None:
    """Move year-less times to the year that puts them nearest the bundle's
    fully dated events. Returns the reference year used (None: nothing to do).

    The reference is the median of the exactly/locally dated events; each
    year-less time takes, of the reference year and its neighbours, the year
    that lands it closest to that median (a December glog line in a January
    bundle goes to the year before)."""
    n = con.execute("SELECT count(*) FROM events WHERE ts_kind = 'year_inferred'").fetchone()[0]
    if not n:
        return None
    ref = con.execute("SELECT median(epoch(ts)) FROM events WHERE ts_kind IN ('exact','local','envelope') "
                      "AND ts IS NOT NULL").fetchone()[0]
    if ref is None:
        ref = con.execute("SELECT epoch(CAST(value AS TIMESTAMP)) FROM meta WHERE key = 'fallback_time'").fetchone()
        ref = ref[0] if ref else None
    if ref is None:
        return None
    cand = {d: f"ts + to_years(r.y + ({d}) - year(ts))" for d in (-1, 0, 1)}
    dist = {d: f"abs(epoch({c}) - $ref)" for d, c in cand.items()}
    con.execute(f"""
        UPDATE event_lines SET ts = CASE
            WHEN {dist[0]} <= least({dist[-1]}, {dist[1]}) THEN {cand[0]}
            WHEN {dist[-1]} <= {dist[1]} THEN {cand[-1]}
            ELSE {cand[1]} END
        FROM (SELECT year(to_timestamp($ref)) AS y) r, event_classes c
        WHERE c.class_id = event_lines.class_id AND ts IS NOT NULL AND (c.ts_kind = 'year_inferred'
              -- lines that inherited a year-less time from the line before
              OR (c.ts_kind = 'interpolated' AND year(ts) = {PLACEHOLDER_YEAR}))
    """, {"ref": ref})
    return int(con.execute("SELECT year(to_timestamp(?))", [ref]).fetchone()[0])
