"""pipeline: discover -> read -> (the engine: frame, sniff, peel, blocks,
extract, timestamps, normalize, classify, facts) -> store.

The per-line work is the compiled engine's (ingest/core.py, crates/engine):
this module owns the I/O around it: opening inputs, handing their bytes to
the engine in bounded chunks, and writing what it returns to the store.
"""

from __future__ import annotations

import io
import os
import queue
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Iterator

import pyarrow as pa

from .. import store
from ..formats import Catalog
from . import core, read
from .discover import DATA_ERRORS, FileRef, InputError, discover, open_text_stream
from .parts import PartWriter
from .writer import Writer


@dataclass
class FileResult:
    path: str
    status: str = "ingested"          # ingested | duplicate | failed | empty
    bytes: int = 0
    lines: int = 0
    events: int = 0
    unparsed: int = 0
    formats: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- driver

@dataclass
class Progress:
    """Called as work advances; the CLI draws a bar from it."""
    on_file: Callable[[str], None] = lambda path: None
    on_batch: Callable[[int, int], None] = lambda nbytes, nlines: None


_CTRL = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))


def _looks_binary(head: bytes) -> bool:
    """A log may hold a stray NUL or a Latin-1 byte; a binary file is mostly
    control bytes and invalid UTF-8."""
    if len(head) < 32:
        return False
    ctrl = len(head) - len(head.translate(None, _CTRL))
    bad = head.decode("utf-8", errors="replace").count("\ufffd")
    return (ctrl + bad) / len(head) > 0.3


class Claims:
    """The files of the store and those being ingested right now by other
    threads: a file named twice on the command line goes in once, a file in
    the store already (same content, named the same or read from the same
    place) not again, and two files never share an id. Two ranks' identical
    stderr.log files are two files: their paths say whose. The
    store's files are read once (only this ingest writes to it): a query per
    file cost more than parsing a small file."""

    def __init__(self, con):
        self.lock = threading.Lock()
        self.keys: set[tuple[str, str]] = set()
        self.ids: set[int] = set()
        for sha, path, source, fid in con.execute("SELECT sha256, path, source, file_id FROM files").fetchall():
            self.keys |= {(sha, path), (sha, source)}
            self.ids.add(fid)

    def claim(self, sha: str, ref: FileRef) -> int | None:
        with self.lock:
            if {(sha, ref.path), (sha, ref.source)} & self.keys:
                return None
            fid = store.file_id_for(sha, ref.path)
            while fid in self.ids:
                fid = (fid + 1) & 0x7FFFFFFF
            self.keys |= {(sha, ref.path), (sha, ref.source)}
            self.ids.add(fid)
            return fid


@dataclass
class Parsed:
    """One batch of a file, parsed (what parse_file yields as it goes): the
    engine's Arrow batches, as they came."""
    file_id: int
    events: pa.RecordBatch
    classes: pa.RecordBatch
    facts: dict[str, pa.RecordBatch]


@dataclass
class Finished:
    """The end of a file: its result and its `files` row (None: store nothing)."""
    file_id: int | None
    result: FileResult
    row: list | None


def parse_file(ref: FileRef, cat: Catalog, claims: Claims, *, tz: str = "UTC", progress: Progress | None = None,
               chunk_bytes: int = core.CHUNK_BYTES, max_line: int = core.MAX_LINE) -> Iterator[Parsed | Finished]:
    """Read and parse one file: yields a Parsed per batch, then one Finished.
    `claims` says whether the file is new, and gives its id.

    Chunks are read one ahead, so the engine knows which is the last (a
    block still open at the end of a chunk waits for the next one)."""
    progress = progress or Progress()
    res = FileResult(ref.path)
    known = _identify(ref, res, claims)
    if known is None:
        yield Finished(None, res, None)
        return
    sha, file_id = known
    parser = core.file_parser(cat, file_id, ref.path, ref.hints, tz, max_line=max_line)
    damage = read.Damage()
    try:
        with open_text_stream(ref) as raw:
            stream = _text_stream(raw, ref, res, damage)
            if stream is not None:
                pending = read.read_some(stream, chunk_bytes, damage)
                while True:
                    nxt = read.read_some(stream, chunk_bytes, damage) if pending else b""
                    parser.feed(pending, not nxt)
                    for events, classes, facts in core.batches(parser):
                        res.events += events.num_rows
                        yield Parsed(file_id, events, classes, facts)
                    stats = parser.stats()
                    progress.on_batch(stats["bytes"] - res.bytes, stats["lines"] - res.lines)
                    res.bytes, res.lines = stats["bytes"], stats["lines"]
                    if not nxt:
                        break
                    pending = nxt
    except DATA_ERRORS as exc:
        _failed(ref, res, exc)
        yield Finished(file_id, res, None)
        return
    res.formats.update(dict(parser.format_counts()))
    res.unparsed = res.formats.get("raw", 0)
    yield _finished(ref, res, parser.stats(), damage, file_id, sha, parser.file_envelopes(), max_line)


def _identify(ref: FileRef, res: FileResult, claims: Claims) -> tuple[str, int] | None:
    """(sha256, file id) of a file to ingest; None when it cannot be read or
    is in the store already (`res` says which)."""
    try:
        sha = store.sha256_file(ref.opener)
    except DATA_ERRORS as exc:
        what = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
        res.status, res.problems = "failed", [f"{ref.path}: cannot read: {what}"]
        return None
    file_id = claims.claim(sha, ref)
    if file_id is None:
        res.status = "duplicate"
        return None
    return sha, file_id


def _text_stream(raw, ref: FileRef, res: FileResult, damage: read.Damage):
    """The stream of a text file; None (and `res` failed) for binary data."""
    head = read.read_some(raw, 8192, damage)
    if _looks_binary(head):
        res.status = "failed"
        res.problems.append(f"{ref.path}: binary data, not a text log; skipped "
                            "(if it is a compressed log, give it its real extension)")
        return None
    return io.BufferedReader(_Prepend(head, raw), buffer_size=1 << 16)


def _failed(ref: FileRef, res: FileResult, exc: BaseException) -> None:
    what = str(exc) if isinstance(exc, InputError) else f"{ref.path}: {type(exc).__name__}: {exc}"
    if isinstance(exc, EOFError) or "Compressed file ended" in str(exc):
        what = f"{ref.path}: compressed data is truncated ({exc}); nothing of it was stored"
    res.status, res.problems = "failed", res.problems + [what]
    res.events = res.unparsed = 0
    res.formats.clear()


def _finished(ref: FileRef, res: FileResult, stats: dict, damage: read.Damage, file_id: int, sha: str,
              envs: list[str], max_line: int) -> Finished:
    res.lines = stats["lines"]
    res.problems += _read_problems(ref, stats, damage, max_line)
    if res.status == "ingested" and stats["lines"] == 0:
        res.status = "empty"
        res.problems.append(f"{ref.path}: empty file")
    return Finished(file_id, res, _file_row(ref, res, file_id, sha, envs))


def _read_problems(ref: FileRef, stats: dict, damage: read.Damage, max_line: int) -> list[str]:
    out = []
    if stats["invalid_utf8"]:
        out.append(f"{ref.path}: invalid UTF-8 (shown as U+FFFD)")
    if stats["nul_bytes"]:
        out.append(f"{ref.path}: {stats['nul_bytes']} NUL bytes (shown as U+FFFD)")
    if damage.why:
        out.append(f"{ref.path}: compressed data is truncated ({damage.why}); "
                   f"kept the {stats['lines']} lines before the damage")
    if stats["truncated_lines"]:
        out.append(f"{ref.path}: {stats['truncated_lines']} line(s) longer than "
                   f"{max_line >> 10} KiB kept truncated")
    if stats["cr_only"]:
        out.append(f"{ref.path}: old Mac line endings (CR only): read as line breaks")
    if stats["implausible"]:
        out.append(f"{ref.path}: {stats['implausible']} time(s) outside 1990-2099 ignored "
                   "(those lines take the time of the line before)")
    return out


def ingest_file(con, ref: FileRef, cat: Catalog, **kw) -> FileResult:
    """One file into the store through `con`, in this thread."""
    writer = Writer(con)
    try:
        for msg in parse_file(ref, cat, Claims(con), **kw):
            if isinstance(msg, Parsed):
                writer.add(msg.file_id, msg.events, msg.classes, msg.facts)
            elif msg.file_id is not None:
                writer.done(msg.file_id, msg.row)
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return msg.result


class _Prepend:
    """A raw stream that first returns `head`, then the rest of `inner`."""

    def __init__(self, head: bytes, inner):
        self.head, self.inner = head, inner

    def readable(self):
        return True

    @property
    def closed(self):
        return False

    def readinto(self, buf) -> int:
        if self.head:
            n = min(len(buf), len(self.head))
            buf[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        data = self.inner.read(len(buf))
        buf[:len(data)] = data
        return len(data)


def _file_row(ref: FileRef, res: FileResult, file_id: int, sha: str, envs: list[str]) -> list:
    claimed = [(n, f) for f, n in res.formats.items() if f != "raw"]
    fmt = max(claimed)[1] if claimed else ("raw" if res.events else None)
    env_names = ",".join(envs) or None
    hints = ref.hints

    def as_int(v):
        try:
            return int(v)
        except (TypeError, ValueError):
            return None
    return [file_id, ref.path, ref.source or None, fmt, env_names, ref.compression, ref.size, res.lines,
            res.events, res.unparsed, res.problems or None, sha, hints.get("host"), as_int(hints.get("rank")),
            as_int(hints.get("local_rank")), hints.get("pod"),
            datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)]


# DuckDB caches what it writes up to this; 512 MB left a 300 MB ingest at 1.12 GB peak RSS,
# 256 MB at 0.98 GB, no slower (inserts go out in whole row groups, writer.py).
INGEST_DUCKDB_MEMORY = "256MB"


@dataclass
class IngestSummary:
    files: list[FileResult]
    warnings: list[str]
    seconds: float
    reference_year: int | None
    part: str | None = None           # the part written (ingest --part)


_PARSER_DONE = object()  # a parser thread has no more files


class _Stopped(Exception):
    """Another parser failed (or the user interrupted): this one leaves."""


class _Shared:
    """One writer that every parser thread writes through in turn: a part is
    one Parquet file per table. The ingest closes or aborts it, once."""

    def __init__(self, writer: PartWriter):
        self.writer, self.lock = writer, threading.Lock()

    def add(self, *args) -> None:
        with self.lock:
            self.writer.add(*args)

    def done(self, *args) -> None:
        with self.lock:
            self.writer.done(*args)

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


def ingest(paths: list[str], db: str, cat: Catalog, *, tz: str = "UTC", progress: Progress | None = None,
           warn: Callable[[str], None] | None = None, stdin=None, workers: int | None = None,
           exclude: list[str] | None = None, part: str | None = None) -> IngestSummary:
    """`part`: write a part into that directory (parts.py) instead of the store `db`.

    Files are parsed in `workers` threads (the engine and DuckDB release
    the GIL), each taking the next input as it finishes one and writing its
    batches itself, through a Writer and a DuckDB connection of its own:
    inserting is as much work as parsing, and one writer thread for all
    parsers kept the other core idle half of the time (512 MB: the writer
    busy 11 CPU-s, the parsers 6). Appends of two transactions never
    conflict in DuckDB, and each file is still in the store whole or not
    at all. This thread reports each file as it finishes."""
    workers = workers or min(4, os.cpu_count() or 1)
    warnings: list[str] = []

    def _warn(msg: str) -> None:
        warnings.append(msg)
        if warn:
            warn(msg)

    t0 = time.perf_counter()
    con = store.open_store(":memory:" if part else db, cat)  # a part claims its files in an empty store
    # DuckDB would keep every block it writes cached (up to 80% of RAM);
    # ingest reads little back, so its memory stays flat at any input size.
    con.execute(f"SET memory_limit = '{INGEST_DUCKDB_MEMORY}'")
    con.execute("SET preserve_insertion_order = false")
    # No DuckDB threads of its own while inserting: every parser inserts in
    # its own thread, and two threads split every INSERT into two part-full
    # row groups (writer.py).
    con.execute("SET threads = 1")
    results: list[FileResult] = []
    claims = Claims(con)
    finished: queue.Queue = queue.Queue()   # Finished, an exception, or _PARSER_DONE
    stop = threading.Event()

    # discover() is consumed lazily (archive members are held in memory only
    # while in flight), by the parsers themselves: a parser that finishes a
    # file takes the next one at once.
    own = [] if part else [db, f"{db}.wal"]
    refs = iter(discover(paths, _warn, stdin=stdin, exclude=exclude, own=own))
    refs_lock = threading.Lock()

    def next_ref() -> FileRef | None:
        with refs_lock:
            ref = next(refs, None)
        if ref is not None and progress:
            progress.on_file(ref.path)
        return ref

    shared = PartWriter(part, cat, con) if part else None

    def parser() -> None:
        cursor = None if shared else con.cursor()
        writer = _Shared(shared) if shared else Writer(cursor)
        try:
            while not stop.is_set() and (ref := next_ref()) is not None:
                for msg in parse_file(ref, cat, claims, tz=tz, progress=progress):
                    if stop.is_set():
                        raise _Stopped
                    if isinstance(msg, Parsed):
                        writer.add(msg.file_id, msg.events, msg.classes, msg.facts)
                        continue
                    if msg.file_id is not None:
                        writer.done(msg.file_id, msg.row)
                    finished.put(msg)
            if stop.is_set():
                raise _Stopped
            writer.close()
        except BaseException as exc:  # this thread re-raises it
            writer.abort()
            if not isinstance(exc, _Stopped):
                finished.put(exc)
        finally:
            if cursor is not None:
                cursor.close()
            finished.put(_PARSER_DONE)

    try:
        _remember_fallback_time(con, paths)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for _ in range(workers):
                pool.submit(parser)
            try:
                running = workers
                while running:
                    msg = finished.get()
                    if msg is _PARSER_DONE:
                        running -= 1
                    elif isinstance(msg, BaseException):
                        raise msg
                    else:
                        for p in msg.result.problems:
                            _warn(p)
                        results.append(msg.result)
            finally:
                stop.set()
        if shared:
            shared.close()
        con.execute("RESET threads")
        year = None if part else store.infer_years(con)  # a part's years and summaries: at merge
        if not part:
            store.refresh_summaries(con)
    except BaseException:
        if shared:
            shared.abort()
        raise
    finally:
        con.close()
    return IngestSummary(results, warnings, time.perf_counter() - t0, year, part=getattr(shared, "path", None))


def _remember_fallback_time(con, paths: list[str]) -> None:
    """Year-less times need a year: when no log line carries one, the newest
    modification time of the inputs stands in (deterministic for the same
    files; never the machine's clock)."""
    newest = 0.0
    for p in paths:
        if p == "-" or not os.path.exists(p):
            continue
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                for n in names:
                    try:
                        newest = max(newest, os.path.getmtime(os.path.join(root, n)))
                    except OSError:
                        pass
        else:
            newest = max(newest, os.path.getmtime(p))
    if newest:
        when = datetime.fromtimestamp(newest, timezone.utc).replace(tzinfo=None).isoformat()
        con.execute("INSERT INTO meta VALUES ('fallback_time', ?) ON CONFLICT (key) DO UPDATE SET "
                    "value = greatest(value, excluded.value)", [when])
