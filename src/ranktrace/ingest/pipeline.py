"""pipeline: discover -> read -> (the engine: frame, sniff, peel, blocks,
extract, timestamps, normalize, classify, facts, lines as Parquet) -> a part
-> (merged into) the store.

The per-line work is the compiled engine's (ingest/core.py, crates/engine),
and so is writing the lines: each parser thread's engine writes them into a
Parquet file of the part (parts.py). This module owns the I/O around it:
opening inputs, handing their bytes to the engine in bounded chunks, and
handing the rest of what it returns (classes, facts, files rows) to the part.
"""

from __future__ import annotations

import io
import os
import queue
import shutil
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa

from .. import store
from ..formats import Catalog
from . import core, read
from .discover import DATA_ERRORS, FileRef, InputError, discover, open_text_stream
from .parts import PartWriter


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
    """One batch of a file, parsed (what parse_file yields as it goes): its
    events (a record batch, or their count when the engine wrote them into a
    lines sink), and the engine's Arrow batches of classes and facts."""
    file_id: int
    events: pa.RecordBatch | int
    classes: pa.RecordBatch
    facts: dict[str, pa.RecordBatch]


@dataclass
class Finished:
    """The end of a file: its result and its `files` row (None: store nothing)."""
    file_id: int | None
    result: FileResult
    row: list | None


def parse_file(ref: FileRef, cat: Catalog, claims: Claims, *, tz: str = "UTC", progress: Progress | None = None,
               chunk_bytes: int = core.CHUNK_BYTES, max_line: int = core.MAX_LINE,
               sink=None) -> Iterator[Parsed | Finished]:
    """Read and parse one file: yields a Parsed per batch, then one Finished.
    `claims` says whether the file is new, and gives its id; `sink` (a
    LinesSink) takes the events, written by the engine.

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
                    for events, classes, facts in core.batches(parser, sink):
                        res.events += events if sink is not None else events.num_rows
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


# DuckDB's memory while the parsers run (it only claims files and keeps meta then); the merge
# that ends the ingest has merge.py's.
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
    """The part every parser thread writes through: its lines go into a file
    of the thread's own (the engine writes them), the rest (classes, facts,
    files rows) through the PartWriter, in turn."""

    def __init__(self, writer: PartWriter):
        self.writer, self.lock = writer, threading.Lock()

    def sink(self):
        with self.lock:
            return self.writer.lines_sink()

    def add(self, file_id: int, sink: int, classes, facts) -> None:
        with self.lock:
            self.writer.lines(file_id, sink)
            self.writer.add(file_id, classes, facts)

    def done(self, *args) -> None:
        with self.lock:
            self.writer.done(*args)


def ingest(paths: list[str], db: str, cat: Catalog, *, tz: str = "UTC", progress: Progress | None = None,
           warn: Callable[[str], None] | None = None, stdin=None, workers: int | None = None,
           exclude: list[str] | None = None, part: str | None = None) -> IngestSummary:
    """Ingest `paths`: a part written into directory `part` (parts.py), or
    into the store `db`'s parts/ and merged there (merge.py), as a node's part
    is merged.

    Files are parsed in `workers` threads (the engine releases the GIL),
    each taking the next input as it finishes one; each thread's engine
    writes the lines it parses into a Parquet file of its own, as it parses
    (storing a DuckDB row per line cost as much CPU as parsing). This thread
    reports each file as it finishes."""
    from .. import merge as merging
    workers = workers or min(4, os.cpu_count() or 1)
    warnings: list[str] = []

    def _warn(msg: str) -> None:
        warnings.append(msg)
        if warn:
            warn(msg)

    t0 = time.perf_counter()
    con = store.open_store(":memory:" if part else db, cat)  # a part claims its files in an empty store
    con.execute(f"SET memory_limit = '{INGEST_DUCKDB_MEMORY}'")
    results: list[FileResult] = []
    claims = Claims(con)
    finished: queue.Queue = queue.Queue()   # Finished, an exception, or _PARSER_DONE
    stop = threading.Event()

    # discover() is consumed lazily (archive members are held in memory only
    # while in flight), by the parsers themselves: a parser that finishes a
    # file takes the next one at once.
    own = [] if part else [str(store.locate(db)[0])]
    refs = iter(discover(paths, _warn, stdin=stdin, exclude=exclude, own=own))
    refs_lock = threading.Lock()

    def next_ref() -> FileRef | None:
        with refs_lock:
            ref = next(refs, None)
        if ref is not None and progress:
            progress.on_file(ref.path)
        return ref

    writer = PartWriter(part or store.locate(db)[0] / store.PARTS, cat, con)
    shared = _Shared(writer)

    def parser() -> None:
        try:
            k, sink = shared.sink()
            while not stop.is_set() and (ref := next_ref()) is not None:
                for msg in parse_file(ref, cat, claims, tz=tz, progress=progress, sink=sink):
                    if stop.is_set():
                        raise _Stopped
                    if isinstance(msg, Parsed):
                        shared.add(msg.file_id, k, msg.classes, msg.facts)
                        continue
                    if msg.file_id is not None:
                        shared.done(msg.file_id, msg.row)
                    finished.put(msg)
            if stop.is_set():
                raise _Stopped
        except BaseException as exc:  # this thread re-raises it
            if not isinstance(exc, _Stopped):
                finished.put(exc)
        finally:
            finished.put(_PARSER_DONE)

    year = None
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
        writer.close()
        if not part:   # a part's years and summaries: at merge
            made = merging.Part(Path(writer.path), merging._manifest(Path(writer.path)))
            out = merging.MergeSummary()
            # the parsers are done (their memory is free): the merge's limit, as `ranktrace merge` has it
            # (the end-of-ingest summaries of a 1.5 GB run, 15 M lines, ran out of 256 MB)
            con.execute(f"SET memory_limit = '{merging.MERGE_DUCKDB_MEMORY}'")
            merging.merge_into(con, [made], cat, out)
            if not out.parts:   # nothing new: the part is all duplicates (or empty)
                shutil.rmtree(made.path, ignore_errors=True)
            year = out.reference_year
    except BaseException:
        writer.abort()
        raise
    finally:
        con.close()
    return IngestSummary(results, warnings, time.perf_counter() - t0, year, part=writer.path if part else None)


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
