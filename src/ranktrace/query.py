"""Read-only queries over a store, and their output as table / csv / json.

What user SQL may touch (`ranktrace sql` and the TUI's console): the store,
read-only, and nothing else. Two locks, both needed:

- DuckDB's own settings on the connection, then locked (`lock_configuration`):
  the store opened `read_only`; `enable_external_access = false` (no file but
  the store's own lines files, its `allowed_directories`; no URL, no ATTACH,
  COPY, EXPORT, INSTALL or LOAD, no persistent secret);
  extension auto-install and auto-load off. A locked setting cannot be SET,
  RESET or PRAGMA'd back.
- Only reading statements run: SELECT (with SHOW, DESCRIBE, SUMMARIZE, FROM,
  VALUES, PIVOT), EXPLAIN of one, and the PRAGMAs that list the schema. This is
  what keeps `--allow-files` (external access on, for reading local files)
  from writing: COPY ... TO, EXPORT DATABASE, ATTACH, INSTALL/LOAD and
  EXPLAIN ANALYZE COPY are refused before DuckDB sees them.
"""

from __future__ import annotations

import csv
import json
import re
from typing import IO

import duckdb

from .safe_text import safe
from .store import StoreError, open_readonly, store_error

MAX_CELL = 200

# PRAGMAs that only read the catalog (PRAGMA import_database would run a file's SQL).
READ_PRAGMAS = frozenset({
    "show_tables", "show_tables_expanded", "table_info", "show", "database_size", "database_list",
    "storage_info", "version", "functions", "collations", "metadata_info", "platform", "user_agent",
})
_EXPLAIN_RE = re.compile(r"^\s*EXPLAIN\s+(?:\(\s*[^)]*\)\s*)?(?:ANALY[SZ]E\s+)?", re.I)
_PRAGMA_RE = re.compile(r"^\s*PRAGMA\s+(\w+)", re.I)


class QueryRefused(ValueError):
    """A statement that the read-only SQL surface does not run."""


def _refusal(kind: str) -> str:
    what = {"COPY": "COPY reads or writes files", "EXPORT": "EXPORT DATABASE writes files",
            "ATTACH": "ATTACH opens another database", "DETACH": "DETACH changes the attached databases",
            "LOAD": "INSTALL/LOAD fetch and run extensions"}.get(kind, f"{kind} statements change state")
    return (f"refused: {what}; ranktrace sql only reads the store (SELECT, SHOW, DESCRIBE, SUMMARIZE, "
            "EXPLAIN, PRAGMA show_tables/table_info), even with --allow-files. To write results to a file, "
            "use --format csv|json and redirect the output.")


def check_statements(sql: str, allow_files: bool = False) -> None:
    """Raise QueryRefused unless every statement of `sql` only reads."""
    try:
        stmts = duckdb.extract_statements(sql)
    except duckdb.Error:
        return  # a syntax error: DuckDB's own message (with the position) is the better one
    for st in stmts:
        kind = str(st.type).rsplit(".", 1)[-1]
        if kind == "SELECT":
            continue
        if kind == "EXPLAIN":
            inner = _EXPLAIN_RE.sub("", st.query, count=1)
            if inner != st.query:
                check_statements(inner, allow_files)
                continue
        if kind == "PRAGMA":
            m = _PRAGMA_RE.match(st.query)
            if m and m.group(1).lower() in READ_PRAGMAS:
                continue
            raise QueryRefused(f"refused: PRAGMA {m.group(1) if m else ''} is not one that only reads "
                               f"the schema ({', '.join(sorted(READ_PRAGMAS))})")
        raise QueryRefused(_refusal(kind))


def lock_down(con: duckdb.DuckDBPyConnection, allow_files: bool = False) -> duckdb.DuckDBPyConnection:
    """Confine a read-only connection to its store (see the module doc). The
    settings are global to the database instance and locked: every cursor of
    `con` inherits them."""
    try:
        if not allow_files:
            # the store's own lines files (view event_lines) and facts files (store.PART_FACTS) stay
            # readable: each part's directory, as
            # the view names it (relative) and as DuckDB finds it (in the store). A relative
            # directory is also allowed under the working directory: the part names (a content
            # hash each) make that another store's part at most.
            from .store import PARTS, store_dir_of
            root = store_dir_of(con)
            parts = [r[0] for r in con.execute("SELECT part FROM lines_files UNION SELECT part FROM fact_files "
                                               "ORDER BY 1").fetchall()]
            allowed = [d for p in parts for d in (f"{PARTS}/{p}/", f"{root / PARTS / p}/")]
            if allowed:
                con.execute("SET allowed_directories = $1", [allowed])
        con.execute(f"SET enable_external_access = {'true' if allow_files else 'false'}")
        con.execute("SET autoinstall_known_extensions = false")
        con.execute("SET autoload_known_extensions = false")
        con.execute("SET allow_community_extensions = false")
        con.execute("SET GLOBAL TimeZone = 'UTC'")
        con.execute("SET lock_configuration = true")
    except duckdb.InvalidInputException:
        # Already locked by another connection of this process to the same
        # store: fine when it is locked at least as tightly.
        ext = con.execute("SELECT current_setting('enable_external_access')").fetchone()[0]
        if ext and not allow_files:
            raise
    return con


def open_sandboxed(db: str, allow_files: bool = False) -> duckdb.DuckDBPyConnection:
    """The store, read-only and confined (StoreError when it cannot be opened)."""
    con = open_readonly(db)
    try:
        return lock_down(con, allow_files)
    except duckdb.Error as exc:
        con.close()
        raise store_error(db, exc) from None


def run_query(db: str, sql: str, params: dict | None = None, limit: int | None = None,
              allow_files: bool = False):
    check_statements(sql, allow_files)
    con = open_sandboxed(db, allow_files)
    try:
        cur = con.execute(sql, params or {})
        cols = [d[0] for d in cur.description] if cur.description else []
        rows = cur.fetchmany(limit) if limit else cur.fetchall()
        return cols, rows
    finally:
        con.close()


__all__ = ["QueryRefused", "StoreError", "check_statements", "lock_down", "open_sandboxed", "print_result",
           "run_query"]


def _cell(v, terminal: bool = True) -> str:
    if v is None:
        return ""
    if hasattr(v, "isoformat"):
        return v.isoformat(sep=" ")
    s = str(v).replace("\n", "⏎")
    if terminal:
        s = safe(s)
    return s if len(s) <= MAX_CELL else s[:MAX_CELL - 1] + "…"


def print_result(cols: list[str], rows: list[tuple], fmt: str, out: IO[str], terminal: bool | None = None) -> None:
    """Write the rows as table, csv or json. On a terminal (`terminal`, default:
    out.isatty()) control characters and bidi overrides in the values are shown
    escaped (safe_text); the table is always escaped (it is for reading)."""
    if terminal is None:
        terminal = bool(getattr(out, "isatty", lambda: False)())
    if fmt == "csv":
        w = csv.writer(out)
        w.writerow([safe(c) if terminal else c for c in cols])
        w.writerows([["" if v is None else (v.isoformat() if hasattr(v, "isoformat")
                                            else (safe(v) if terminal and isinstance(v, str) else v)) for v in r]
                     for r in rows])
        return
    if fmt == "json":
        # JSON escapes every control character (\u001b): safe on a terminal as it is.
        json.dump([dict(zip(cols, r)) for r in rows], out, default=str, indent=1)
        out.write("\n")
        return
    cols = [safe(c) for c in cols]
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(cols)]
    out.write("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip() + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for r in cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() + "\n")
    out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")
