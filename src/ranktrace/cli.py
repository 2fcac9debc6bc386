"""The command line: thin over the library."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from . import __version__

# store.DEFAULT_DB (tests/unit/test_cli_startup.py): not imported from there, as
# the store module imports duckdb, which `formats` and --help do without.
DEFAULT_DB = "ranktrace.store"

EPILOG = """\
examples:
  ranktrace demo                              a bundled incident, end to end
  ranktrace ingest incident.tar.gz --db inc
  ranktrace diagnose --db inc
  ranktrace sql "SELECT rank, max(ats) FROM events_aligned GROUP BY rank" --db inc
  ranktrace formats explain "[rank3]:[E1108 10:52:31.5 ProcessGroupNCCL.cpp:616] ..."

A store is a directory: `cd inc && duckdb ranktrace.duckdb` works too (schema in README).
"""


def _catalog(args):
    from .formats import FormatError, load_catalog  # here: readers (tui, sql) start without it
    try:
        cat = load_catalog(getattr(args, "formats", None) or [], check_samples="drop")
    except FormatError as exc:
        sys.exit(f"ranktrace: {exc}")
    for w in cat.warnings:
        if "left out" in w:
            _err(w)
    return cat


def _err(msg: str) -> None:
    from .safe_text import safe
    # Messages name files and archive members, which a log bundle controls.
    print(f"ranktrace: {safe(msg, keep_newlines=True)}", file=sys.stderr)


# ---------------------------------------------------------------- ingest

class _Bar:
    """A one-line progress display on stderr (only on a terminal)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self.files = self.bytes = self.lines = 0
        self.last = 0.0
        self.current = ""

    def on_file(self, path: str) -> None:
        self.files += 1
        self.current = path
        self.draw()

    def on_batch(self, nbytes: int, nlines: int) -> None:
        self.bytes += nbytes
        self.lines += nlines
        self.draw()

    def draw(self, force: bool = False) -> None:
        now = time.perf_counter()
        if not self.enabled or (not force and now - self.last < 0.2):
            return
        self.last = now
        dt = max(now - self.t0, 1e-6)
        from .safe_text import safe
        cur = safe(self.current)
        name = cur if len(cur) < 40 else "…" + cur[-39:]
        sys.stderr.write(f"\r\x1b[2K{self.files} files  {self.bytes / 1e6:8.1f} MB  "
                         f"{self.lines / dt:>10,.0f} lines/s  {name}")
        sys.stderr.flush()

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


def cmd_ingest(args) -> int:
    from .ingest.pipeline import Progress, ingest
    cat = _catalog(args)
    tz = args.tz
    try:
        from dateutil import tz as dtz
        if dtz.gettz(tz) is None:
            sys.exit(f"ranktrace: --tz {tz!r} is not a known time zone (try UTC, Europe/Berlin, +02:00 is not accepted)")
    except ImportError:
        pass
    bar = _Bar(sys.stderr.isatty() and not args.quiet)
    progress = Progress(on_file=bar.on_file, on_batch=bar.on_batch)

    def warn(msg: str) -> None:
        bar.done()
        _err(msg)

    if args.jobs is not None and args.jobs < 1:
        sys.exit("ranktrace ingest: --jobs must be at least 1")
    if args.part and args.db != DEFAULT_DB:
        sys.exit("ranktrace ingest: --part writes a part, not a store; give --db to `ranktrace merge` instead")
    if args.part:
        try:
            os.makedirs(args.part, exist_ok=True)
        except OSError as exc:
            sys.exit(f"ranktrace ingest: --part {args.part}: cannot create it ({exc.strerror or exc}); "
                     "give a directory this node can write (shared by the nodes, for merge)")
        if not os.access(args.part, os.W_OK):
            sys.exit(f"ranktrace ingest: --part {args.part}: not writable here; give a directory this node can write")
    from .store import StoreError
    try:
        summary = ingest(args.paths, args.db, cat, tz=tz, progress=progress, warn=warn, workers=args.jobs,
                         exclude=args.exclude, part=args.part)
    except StoreError as exc:  # not DuckDB, locked by another ingest, no such directory
        bar.done()
        _err(f"ingest: {exc}")
        return 2
    bar.done()
    files = summary.files
    ingested = [f for f in files if f.status in ("ingested", "empty")]
    dups = [f for f in files if f.status == "duplicate"]
    failed = [f for f in files if f.status == "failed"]
    total_bytes = sum(f.bytes for f in files)
    lines = sum(f.lines for f in files)
    if not args.quiet:
        by_fmt: dict[str, list[int]] = {}
        for f in ingested:
            for fmt, n in f.formats.items():
                row = by_fmt.setdefault(fmt, [0, 0])
                row[0] += 1
                row[1] += n
        print(f"ingested {len(ingested)} file(s), {lines:,} lines, {total_bytes / 1e6:.1f} MB "
              f"in {summary.seconds:.1f} s into {summary.part or args.db}"
              + (f"; {len(dups)} already in the store" if dups else "")
              + (f"; {len(failed)} failed" if failed else ""))
        if by_fmt:
            print(f"  {'format':<22}{'files':>6}{'events':>12}")
            for fmt, (nf, ne) in sorted(by_fmt.items(), key=lambda kv: -kv[1][1]):
                print(f"  {fmt:<22}{nf:>6}{ne:>12,}")
        raw = sum(f.unparsed for f in ingested)
        events = sum(f.events for f in ingested)
        if events:
            print(f"  {raw:,} of {events:,} events unclaimed by any format (kept as format 'raw')")
        if summary.warnings:
            print(f"  {len(summary.warnings)} problem(s), listed above")
        if summary.reference_year:
            print(f"  year-less times placed near {summary.reference_year}")
    if not ingested and not dups:
        return 1
    return 0


# ---------------------------------------------------------------- sql

def cmd_sql(args) -> int:
    import duckdb

    from .query import QueryRefused, print_result, run_query
    from .store import StoreError
    query = args.query
    if query == "-":
        query = sys.stdin.read()
    elif Path(query).suffix == ".sql" and Path(query).exists():
        query = Path(query).read_text()
    allow = getattr(args, "allow_files", False)
    try:
        cols, rows = run_query(args.db, query, allow_files=allow)
    except (StoreError, QueryRefused) as exc:
        _err(str(exc))
        return 2
    except duckdb.PermissionException as exc:
        _err(f"refused: {str(exc).rstrip()}\n  ranktrace sql reads only the store: no other file, URL, "
             "ATTACH, COPY, EXPORT, INSTALL or LOAD" + ("" if allow else "; --allow-files permits reading local files"))
        return 2
    except Exception as exc:  # duckdb errors carry the position; show them as they are
        _err(f"query failed: {exc}")
        return 1
    print_result(cols, rows, args.format, sys.stdout)
    return 0


# ---------------------------------------------------------------- formats

def cmd_formats(args) -> int:
    from .formats import FormatError, load_catalog
    if args.action == "list":
        cat = load_catalog(args.formats or [], check_samples=False)
        print(f"{'format':<22}{'patterns':>9}{'blocks':>7}{'rules':>6}{'samples':>8}  description")
        for f in sorted(cat.formats, key=lambda f: f.name):
            print(f"{f.name:<22}{len(f.patterns):>9}{len(f.blocks):>7}{len(f.rules):>6}{len(f.samples):>8}  "
                  f"{f.description[:70]}")
        print(f"\n{'envelope':<22}{'scope':>9}  description")
        for e in cat.envelopes:
            print(f"{e.name:<22}{e.scope:>9}  {e.path.stem}")
        print(f"\nprecedence: {' > '.join(p.key for p in cat.patterns)}")
        return 0
    if args.action == "check":
        try:
            cat = load_catalog(args.formats or [], check_samples=False)
        except FormatError as exc:
            print(f"FAIL {exc}")
            return 1
        from .samples import check_catalog   # here: it imports polars and the engine, which list does without
        problems = check_catalog(cat)
        for w in cat.warnings:
            print(f"warning: {w}")
        for p in problems:
            print(f"FAIL {p}")
        n = sum(len(f.samples) for f in cat.formats)
        print(f"{len(cat.formats)} formats, {len(cat.envelopes)} envelopes, {n} samples: "
              + ("all pass" if not problems else f"{len(problems)} problem(s)"))
        if args.file:
            return _check_file(cat, args.file) or (1 if problems else 0)
        return 1 if problems else 0
    if args.action == "explain":
        from .samples import run_text
        cat = _catalog(args)
        text = args.line if args.line != "-" else sys.stdin.read().rstrip("\n")
        out = run_text(cat, text)
        for row in out.events.iter_rows(named=True):
            shown = {k: v for k, v in row.items() if v is not None and k not in ("raw", "file", "file_id",
                                                                                   "event_id", "byte_offset")}
            if shown.get("ts_kind") == "year_inferred" and shown.get("ts") is not None:
                # the engine's placeholder year is no answer: ingest infers it from the bundle
                shown["ts"] = shown["ts"].strftime("(year inferred at ingest)-%m-%d %H:%M:%S.%f")
            print(json.dumps(shown, default=str, indent=2))
        from .formats import FOUND_TABLE
        sources = {t.id: t.source for t in cat.tokens}
        for table, facts in out.facts.items():
            for r in facts.drop("event_id", "file_id").iter_rows(named=True):
                values = {k: v for k, v in r.items() if v is not None}
                if table != FOUND_TABLE:
                    print(f"fact {table}: " + json.dumps(values, default=str))
                    continue
                # the identity layer: what it filled, and why (the token and its emitter's source)
                token, scope = values.pop("token"), values.pop("stream", None)
                found = ", ".join(f"{k}={v}" for k, v in values.items())
                why = (f"carried over the {scope}'s lines ({token})" if scope
                       else f"token {token}: {sources.get(token, '')}")
                print(f"identity {found}: {why}")
        return 0
    return 2


def _check_file(cat, path: str) -> int:
    """How a real file parses: share of lines claimed, per format."""
    import tempfile
    from .ingest.pipeline import ingest
    with tempfile.TemporaryDirectory() as td:
        db = os.path.join(td, "check.store")
        s = ingest([path], db, cat, warn=_err)
        from .store import connect
        con = connect(db)
        rows = con.execute("SELECT format, count(*) FROM events GROUP BY 1 ORDER BY 2 DESC").fetchall()
        raw = con.execute("SELECT file, line, raw FROM events WHERE format = 'raw' ORDER BY file, line LIMIT 20"
                          ).fetchall()
        con.close()
    total = sum(n for _, n in rows)
    claimed = total - sum(n for f, n in rows if f == "raw")
    print(f"{path}: {total} events, {claimed / total:.1%} claimed" if total else f"{path}: no events")
    for f, n in rows:
        print(f"  {f:<22}{n:>8}")
    from .safe_text import safe
    for file, line, text in raw:   # lines of a real file: never terminal controls
        print(safe(f"  unclaimed {file}:{line}: {text[:120]}"))
    return 0 if not s.warnings else 1


# ---------------------------------------------------------------- main

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ranktrace", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Find the one rank, node or rendezvous that killed a distributed training job.",
        epilog=EPILOG)
    p.add_argument("--version", action="version", version=f"ranktrace {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def db_arg(sp):
        sp.add_argument("--db", default=DEFAULT_DB, help=f"the store (default ./{DEFAULT_DB})")

    def formats_arg(sp):
        sp.add_argument("--formats", action="append", metavar="DIR",
                        help="extra format directory (repeatable; also $RANKTRACE_FORMATS)")

    sp = sub.add_parser("ingest", help="read logs into the store",
                        description="Read log files, directories, tar/zip bundles and .gz/.zst/.xz/.bz2 "
                        "files (or - for stdin) into a DuckDB store. Files already in the store are skipped.")
    sp.add_argument("paths", nargs="+", metavar="PATH")
    db_arg(sp)
    formats_arg(sp)
    sp.add_argument("--tz", default="UTC", help="time zone of times written without one (default UTC)")
    sp.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                    help="skip files whose name or path matches (repeatable), e.g. --exclude '*.json'")
    sp.add_argument("-j", "--jobs", type=int, default=None,
                    help="files parsed at once (default: the number of cores, at most 4)")
    sp.add_argument("-q", "--quiet", action="store_true", help="no progress, no summary")
    sp.add_argument("--part", metavar="DIR", help="write a part (Parquet, one directory per part) into DIR "
                    "instead of a store; `ranktrace merge DIR --db STORE` merges parts")
    sp.set_defaults(func=cmd_ingest)

    sp = sub.add_parser("sql", help="run a read-only SQL query on the store",
                        description="Run SQL on the store (read-only). QUERY may be SQL text, a .sql file, "
                        "or - for stdin. Tables: files, events, kinds and the fact tables (README).")
    sp.add_argument("query", metavar="QUERY")
    db_arg(sp)
    sp.add_argument("--format", choices=["table", "csv", "json"], default="table")
    sp.add_argument("--allow-files", action="store_true",
                    help="also let the query read local files (read_csv, read_parquet, glob, ...); "
                    "writing (COPY TO, EXPORT, ATTACH) stays refused")
    sp.set_defaults(func=cmd_sql)

    sp = sub.add_parser("formats", help="list, check or explain the log formats",
                        description="list: the formats and their precedence. check [FILE]: run every sample "
                        "(and show how FILE parses). explain LINE: how one line (or - for stdin) parses.")
    sp.add_argument("action", choices=["list", "check", "explain"])
    sp.add_argument("file", nargs="?", help="check: a log file to try; ")
    formats_arg(sp)
    sp.set_defaults(func=cmd_formats)

    for name in EXTRA_NAMES:   # in this order, whichever were registered first
        if name in EXTRA_COMMANDS:
            EXTRA_COMMANDS[name](sub, db_arg, formats_arg)
    return p


def _explain_arg_fix(args) -> None:
    if args.command == "formats" and args.action == "explain":
        if not args.file:
            sys.exit("ranktrace formats explain: give the LINE to explain (or - for stdin)")
        args.line = args.file
        args.file = None


# Commands registered by other modules (diagnose, report, tui, demo, export).
EXTRA_COMMANDS: dict = {}
EXTRA_NAMES = ("diagnose", "report", "tui", "demo", "export", "merge", "action")


def _register_extras(only: str | None = None) -> None:
    """Import the command modules and keep their `register`; `only`: just
    that command's module (the command line names it)."""
    import importlib
    for name in (only,) if only in EXTRA_NAMES else EXTRA_NAMES:
        try:
            mod = importlib.import_module(f".commands.{name}", __package__)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.endswith(f"commands.{name}"):
                continue
            raise
        EXTRA_COMMANDS[name] = mod.register


def _named_command(argv: list[str]) -> str | None:
    """The command when the command line starts with one (`ranktrace tui
    --db X`); the top-level parser has no option that takes a value."""
    return argv[0] if argv and argv[0] in EXTRA_NAMES else None


def main(argv: list[str] | None = None) -> int:
    # `ranktrace tui` and the like import only their own command's module
    # (the others' imports and parsers cost every start ~20 ms); no command,
    # or an option first (--help, --version), registers them all.
    _register_extras(_named_command(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    _explain_arg_fix(args)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        _err("interrupted; the store keeps every file that was complete")
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
