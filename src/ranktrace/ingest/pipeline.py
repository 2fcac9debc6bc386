"""pipeline: discover -> read -> sniff -> peel -> blocks -> extract ->
timestamps -> normalize -> classify -> facts -> store.

`process_batch` is a pure function of a batch of lines and its file context;
`ingest` is the driver that owns the I/O (reading inputs, writing the store).
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

import polars as pl

from .. import store
from ..formats import IDENTITY_COLUMNS, INT_IDENTITY, Catalog
from . import blocks as blk
from . import classify, envelope, extract, read, timeparse
from .discover import FileRef, InputError, discover, open_text_stream
from .dispatch import Presence
from .parts import PartWriter
from .writer import Writer

EVENT_COLUMNS = [
    "event_id", "file_id", "file", "line", "end_line", "byte_offset", "ts", "ts_kind", "ts_text",
    "format", "pattern", "envelopes", *IDENTITY_COLUMNS, "level", "severity", "kind", "role",
    "message", "raw",
]


@dataclass(frozen=True)
class FileContext:
    file_id: int
    file: str
    hints: dict
    tz: str = "UTC"


@dataclass
class BatchResult:
    events: pl.DataFrame
    facts: dict[str, pl.DataFrame]
    carry: pl.DataFrame | None        # lines of a block still open: next batch
    last_ts: datetime | None


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


def _per_file(ctxs: list[FileContext], value: Callable[[FileContext], object], dtype) -> pl.Expr:
    """A value that depends on the file a row comes from (`_f` indexes ctxs)."""
    if len(ctxs) == 1:
        return pl.lit(value(ctxs[0]), dtype)
    return pl.col("_f").replace_strict({i: value(c) for i, c in enumerate(ctxs)}, default=None, return_dtype=dtype)


def _identity(df: pl.DataFrame, ctxs: list[FileContext]) -> pl.DataFrame:
    exprs = []
    for c in IDENTITY_COLUMNS:
        parts = [pl.col(c)]
        if f"p_{c}" in df.columns:
            parts.append(pl.col(f"p_{c}"))
        if f"weak_{c}" in df.columns:
            parts.append(pl.col(f"weak_{c}"))
        if any(c in ctx.hints for ctx in ctxs):
            parts.append(_per_file(ctxs, lambda ctx: None if c not in ctx.hints else str(ctx.hints[c]), pl.String))
        e = pl.coalesce(parts) if len(parts) > 1 else parts[0]
        if c in INT_IDENTITY:
            e = e.str.strip_chars().cast(pl.Int64, strict=False)
        exprs.append(e.alias(c))
    return df.with_columns(exprs).drop([f"{p}{c}" for p in ("p_", "weak_") for c in IDENTITY_COLUMNS
                                        if f"{p}{c}" in df.columns])


def _block_times(bl: pl.DataFrame, cat: Catalog, tz: str) -> pl.DataFrame:
    """A block with `ts = { regex = ..., layout = ... }` takes its time from
    its own text (a Finished: line, a summary's time field), per block kind."""
    for b in cat.blocks:
        if b.ts is None:
            continue
        mine = pl.col("block") == b.key
        text = pl.col("raw").str.extract(b.ts_regex.replace(f"(?P<{b.ts.field}>", "(", 1), 1)
        bl = bl.with_columns(pl.when(mine).then(text).otherwise(pl.col("ts_text")).alias("ts_text"))
        bl = bl.with_columns(
            pl.when(mine).then(timeparse.parse_expr(pl.col("ts_text"), b.ts, tz)).otherwise(pl.col("ts")).alias("ts"),
            pl.when(mine & pl.col("ts_text").is_not_null()).then(pl.lit(timeparse.kind_of(b.ts)))
              .otherwise(pl.col("ts_kind")).alias("ts_kind"))
    return bl


def _carry(ev: pl.DataFrame, cat: Catalog) -> pl.DataFrame:
    """`carry = ["pod"]` on a pattern: the value it captured fills that
    column on the following lines of the file that have none (the `Name:`
    line of a `kubectl describe` dump names the pod of every line below).
    `end_carry = ["container"]`: a line of that pattern (a new section of
    the dump) stops the carried value."""
    carriers = [(p.key, c) for p in cat.patterns for c in p.carry]
    enders = [(p.key, c) for p in cat.patterns for c in p.end_carry]
    if not carriers or not ev["pattern"].is_in([k for k, _ in carriers]).any():
        return ev
    # A section ends at a blank line (a gap in line numbers): one dump of
    # `kubectl describe` per pod, separated by blank lines; and with its file.
    ev = ev.sort(blk.ORDER).with_columns(
        _sec=((pl.col("line") > pl.col("end_line").shift(1).fill_null(0) + 1)
              | (pl.col("_f") != pl.col("_f").shift(1).fill_null(pl.col("_f")))).cum_sum())
    exprs = []
    for col in sorted({c for _, c in carriers}):
        keys = [k for k, c in carriers if c == col]
        ends = [k for k, c in enders if c == col]
        src = pl.when(pl.col("pattern").is_in(keys)).then(pl.col(col))
        carried = src.forward_fill().over("_sec")
        if ends:
            # Whether the last carrier or ender above (this line included) was a carrier.
            live = (pl.when(pl.col("pattern").is_in(keys)).then(True)
                    .when(pl.col("pattern").is_in(ends)).then(False).forward_fill().over("_sec"))
            carried = pl.when(live).then(carried)
        exprs.append(pl.coalesce(pl.col(col), carried).alias(col))
    return ev.with_columns(exprs).drop("_sec")


def _times(ev: pl.DataFrame, prev_ts: datetime | None) -> pl.DataFrame:
    rank = timeparse.KIND_RANK
    own = pl.col("ts_kind").replace_strict(rank, default=9, return_dtype=pl.Int32)
    env = pl.col("env_ts_kind").replace_strict(rank, default=9, return_dtype=pl.Int32)
    use_env = pl.col("env_ts").is_not_null() & (pl.col("ts").is_null() | (env < own))
    ev = ev.with_columns(
        pl.when(use_env).then(pl.col("env_ts")).otherwise(pl.col("ts")).alias("ts"),
        # An envelope's year-less time (journald) stays year_inferred: the
        # year is fixed after ingest like any other.
        pl.when(use_env & (pl.col("env_ts_kind") == "year_inferred")).then(pl.lit("year_inferred"))
          .when(use_env).then(pl.lit("envelope")).otherwise(pl.col("ts_kind")).alias("ts_kind"),
        pl.when(use_env).then(pl.col("env_ts_text")).otherwise(pl.col("ts_text")).alias("ts_text"),
    ).sort(blk.ORDER)
    # Lines with no time take the previous timed line's of their file (a lower bound).
    filled = pl.col("ts").forward_fill().over("_f")
    if prev_ts is not None:
        filled = filled.fill_null(pl.lit(prev_ts, timeparse.UTC))
    return ev.with_columns(
        pl.when(pl.col("ts").is_null() & filled.is_not_null()).then(pl.lit("interpolated"))
          .when(pl.col("ts").is_null()).then(pl.lit("none"))
          .otherwise(pl.col("ts_kind")).alias("ts_kind"),
        filled.alias("ts"),
    )


def process_batch(batch: pl.DataFrame, ctx: FileContext, cat: Catalog, envelopes: list,
                  *, final: bool, prev_ts: datetime | None = None) -> BatchResult:
    """Turn a batch of (line, offset, raw) of one file into events and facts. Pure."""
    out = process_files(batch.with_columns(pl.lit(0, pl.UInt32).alias("_f")), [ctx], cat, envelopes,
                        final=final, prev_ts=prev_ts)
    if out.carry is not None:
        out.carry = out.carry.drop("_f")
    return out


def process_files(batch: pl.DataFrame, ctxs: list[FileContext], cat: Catalog, envelopes: list,
                  *, final: bool = True, prev_ts: datetime | None = None) -> BatchResult:
    """Turn a batch of (line, offset, raw, _f) into events and facts. Pure.

    `_f` says which of `ctxs` a line comes from: small files go through
    together, as one batch (the cost of a batch is mostly fixed below a few
    thousand lines). They must share `envelopes` (the ones sniffed for them);
    only a batch of one file can be continued (final=False, prev_ts)."""
    tz = ctxs[0].tz  # one ingest, one --tz
    assert final and prev_ts is None or len(ctxs) == 1, "only a single file's batch continues"
    presence = Presence(batch["raw"], cat.line_tests)
    df = envelope.peel(batch, envelopes, tz, presence).with_row_index("_i")
    df = blk.find_blocks(df, cat.blocks, presence)
    carry = None
    if not final:
        start = blk.open_block_start(df, {b.key: b.end for b in cat.blocks})
        if start is not None:
            # A block is open at the end of the batch: its lines wait for the
            # next batch. Bounded: a block holds at most max_lines lines.
            carry = batch.filter(pl.col("line") >= start)
            df = df.filter(pl.col("line") < start)
    # Lines that are blank once their envelopes are peeled carry nothing.
    df = df.filter((pl.col("body").str.strip_chars() != "") | pl.col("block").is_not_null())

    caps = extract.match_lines(df, cat.patterns, tz, presence)
    lines = df.filter(pl.col("block").is_null()).join(caps, on="_i", how="left").with_columns(
        pl.col("line").alias("end_line"),
        pl.col("format").fill_null("raw"),
        pl.coalesce("message", "body").alias("message"),
    )
    parts = [lines]
    bl = extract.collapse_blocks(df, {b.key: b for b in cat.blocks})
    if len(bl):
        bl = bl.with_columns(
            pl.col("block").str.split(".").list.first().alias("format"),
            pl.col("block").alias("pattern"),
            *[pl.lit(None, pl.String).alias(c) for c in ("level", "ts_kind", "ts_text")],
            pl.lit(None, timeparse.UTC).alias("ts"),
        )
        bl = _block_times(bl, cat, tz)
        prog = {b.key: b.program for b in cat.blocks if b.program}
        bl = bl.with_columns(pl.col("block").replace_strict(prog, default=None, return_dtype=pl.String)
                             .alias("p_program"))
        parts.append(bl)
    cols = ["_f", "line", "end_line", "offset", "raw", "message", "format", "pattern", "level", "ts", "ts_kind",
            "ts_text", "env_ts", "env_ts_kind", "env_ts_text", "envelopes", *IDENTITY_COLUMNS,
            *[f"{p}{c}" for p in ("p_", "weak_") for c in IDENTITY_COLUMNS],
            *[c for env in envelopes for c in env.kept.values()]]
    ev = pl.concat([p.select([c for c in cols if c in p.columns]) for p in parts], how="diagonal_relaxed")
    ev = _identity(ev, ctxs)
    ev = _carry(ev, cat)
    ev = _times(ev, prev_ts)
    last_ts = ev["ts"].drop_nulls().tail(1)
    ev = ev.with_columns(_per_file(ctxs, lambda c: c.file_id, pl.Int64).alias("file_id"),
                         _per_file(ctxs, lambda c: c.file, pl.String).alias("file"),
                         pl.col("offset").alias("byte_offset"))
    ev = ev.with_columns((pl.col("file_id") * (1 << 32) + pl.col("line")).alias("event_id"))
    d, ev = classify.distinct(ev)
    in_messages = Presence(d["message"], cat.message_tests)
    ev = classify.classify(ev, d, cat, in_messages)
    facts, ev = classify.extract_facts(ev, d, cat, in_messages)
    # event_id = file_id << 32 | line
    facts = {t: f.with_columns((pl.col("event_id") // (1 << 32)).alias("file_id")) for t, f in facts.items()}
    ev = ev.with_columns(pl.col("ts").dt.replace_time_zone(None)).select(EVENT_COLUMNS)
    return BatchResult(ev, facts, carry, last_ts[0] if len(last_ts) else prev_ts)


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
    """One batch of a file, parsed (what parse_file yields as it goes)."""
    file_id: int
    events: pl.DataFrame
    facts: dict[str, pl.DataFrame]


@dataclass
class Finished:
    """The end of a file: its result and its `files` row (None: store nothing)."""
    file_id: int | None
    result: FileResult
    row: list | None


def parse_file(ref: FileRef, cat: Catalog, claims: Claims, *, tz: str = "UTC", progress: Progress | None = None,
               batch_bytes: int = read.BATCH_BYTES, max_line: int = read.MAX_LINE) -> Iterator[Parsed | Finished]:
    """Read and parse one file: yields a Parsed per batch, then one Finished.
    `claims` says whether the file is new, and gives its id."""
    progress = progress or Progress()
    res = FileResult(ref.path)
    known = _identify(ref, res, claims)
    if known is None:
        yield Finished(None, res, None)
        return
    sha, file_id = known
    ctx = FileContext(file_id, ref.path, ref.hints, tz)
    stats = read.ReadStats()
    envs: list = []
    try:
        with open_text_stream(ref) as raw:
            stream = _text_stream(raw, ref, res, stats)
            if stream is not None:
                carry, prev_ts, envs = None, None, None
                batches = read.iter_batches(stream, stats, batch_bytes=batch_bytes, max_line=max_line)
                pending = next(batches, None)
                while pending is not None:
                    nxt = next(batches, None)
                    batch = pending if carry is None else pl.concat([carry, pending])
                    if envs is None:
                        envs = _envelopes(cat, envelope.sniff(batch["raw"], cat.envelopes))
                    out = process_batch(batch, ctx, cat, envs, final=nxt is None, prev_ts=prev_ts)
                    carry, prev_ts = out.carry, out.last_ts
                    _count(out.events, res)
                    yield Parsed(file_id, out.events, out.facts)
                    progress.on_batch(stats.bytes - res.bytes, len(pending))
                    res.bytes = stats.bytes
                    pending = nxt
    except (InputError, EOFError, OSError, ValueError) as exc:
        _failed(ref, res, exc)
        yield Finished(file_id, res, None)
        return
    yield _finished(ref, res, stats, file_id, sha, envs or [], max_line)


SMALL_FILE = 1 << 20      # a file this small is parsed together with others ...
SMALL_GROUP = 4 << 20     # ... up to this many bytes or files at once (groups
SMALL_GROUP_FILES = 256   # small enough that every parser gets some)


def is_small(ref: FileRef) -> bool:
    """Worth parsing together with others: below a few thousand lines a
    batch costs the same whatever its size (~80 ms, the fixed cost of some
    200 polars operations), and a job leaves hundreds of such files."""
    return ref.compression is None and 0 < ref.size <= SMALL_FILE


@dataclass
class _Loaded:
    """A small file read whole, waiting for the others of its group."""
    ref: FileRef
    res: FileResult
    stats: read.ReadStats
    sha: str
    file_id: int
    batch: pl.DataFrame
    envs: list = field(default_factory=list)


def parse_small_files(refs: list[FileRef], cat: Catalog, claims: Claims, *, tz: str = "UTC",
                      progress: Progress | None = None, max_line: int = read.MAX_LINE) -> Iterator[Parsed | Finished]:
    """parse_file for several small files at once: the files that share
    their envelopes go through process_files as one batch. Yields, per file,
    a Parsed and a Finished, as parse_file does."""
    progress = progress or Progress()
    loaded: list[_Loaded] = []
    for ref in refs:
        res = FileResult(ref.path)
        known = _identify(ref, res, claims)
        if known is None:
            yield Finished(None, res, None)
            continue
        sha, file_id = known
        stats = read.ReadStats()
        try:
            with open_text_stream(ref) as raw:
                stream = _text_stream(raw, ref, res, stats)
                batches = [] if stream is None else list(read.iter_batches(stream, stats, max_line=max_line))
        except (InputError, EOFError, OSError, ValueError) as exc:
            _failed(ref, res, exc)
            yield Finished(file_id, res, None)
            continue
        if not batches:
            yield _finished(ref, res, stats, file_id, sha, [], max_line)
            continue
        loaded.append(_Loaded(ref, res, stats, sha, file_id, pl.concat(batches)))
    if not loaded:
        return
    sniffed = envelope.sniff_files(
        pl.concat([f.batch.select("raw", pl.lit(i, pl.UInt32).alias("_f")) for i, f in enumerate(loaded)]),
        cat.envelopes)
    groups: dict[tuple, list[_Loaded]] = {}  # by the names of their envelopes
    for i, f in enumerate(loaded):
        f.envs = _envelopes(cat, sniffed.get(i, []))
        groups.setdefault(tuple(e.name for e in f.envs), []).append(f)
    for group in groups.values():
        ctxs = [FileContext(f.file_id, f.ref.path, f.ref.hints, tz) for f in group]
        batch = pl.concat([f.batch.with_columns(pl.lit(i, pl.UInt32).alias("_f")) for i, f in enumerate(group)])
        out = process_files(batch, ctxs, cat, group[0].envs)
        events = out.events.partition_by("file_id", as_dict=True)
        facts = {t: f.partition_by("file_id", as_dict=True) for t, f in out.facts.items()}
        for f in group:
            key = (f.file_id,)
            ev = events.get(key, out.events.clear())
            _count(ev, f.res)
            yield Parsed(f.file_id, ev, {t: parts[key] for t, parts in facts.items() if key in parts})
            progress.on_batch(f.stats.bytes, len(f.batch))
            f.res.bytes = f.stats.bytes
            yield _finished(f.ref, f.res, f.stats, f.file_id, f.sha, f.envs, max_line)


def _identify(ref: FileRef, res: FileResult, claims: Claims) -> tuple[str, int] | None:
    """(sha256, file id) of a file to ingest; None when it cannot be read or
    is in the store already (`res` says which)."""
    try:
        sha = store.sha256_file(ref.opener)
    except OSError as exc:
        res.status, res.problems = "failed", [f"{ref.path}: cannot read: {exc}"]
        return None
    file_id = claims.claim(sha, ref)
    if file_id is None:
        res.status = "duplicate"
        return None
    return sha, file_id


def _text_stream(raw, ref: FileRef, res: FileResult, stats: read.ReadStats):
    """The stream of a text file; None (and `res` failed) for binary data."""
    head = read._read_some(raw, 8192, stats)
    if _looks_binary(head):
        res.status = "failed"
        res.problems.append(f"{ref.path}: binary data, not a text log; skipped "
                            "(if it is a compressed log, give it its real extension)")
        return None
    return io.BufferedReader(_Prepend(head, raw), buffer_size=1 << 16)


def _envelopes(cat: Catalog, sniffed: list) -> list:
    """Line envelopes and the file envelopes sniffed for a file, in peeling order."""
    envs = [e for e in cat.envelopes if e.scope == "line"] + sniffed
    return sorted(envs, key=lambda e: (e.order, e.name))


def _failed(ref: FileRef, res: FileResult, exc: BaseException) -> None:
    what = str(exc) if isinstance(exc, InputError) else f"{ref.path}: {type(exc).__name__}: {exc}"
    if isinstance(exc, EOFError) or "Compressed file ended" in str(exc):
        what = f"{ref.path}: compressed data is truncated ({exc}); nothing of it was stored"
    res.status, res.problems = "failed", res.problems + [what]
    res.events = res.unparsed = 0
    res.formats.clear()


def _finished(ref: FileRef, res: FileResult, stats: read.ReadStats, file_id: int, sha: str, envs: list,
              max_line: int) -> Finished:
    res.lines = stats.lines
    res.problems += _read_problems(ref, stats, max_line)
    if res.status == "ingested" and stats.lines == 0:
        res.status = "empty"
        res.problems.append(f"{ref.path}: empty file")
    return Finished(file_id, res, _file_row(ref, res, file_id, sha, envs))


def _read_problems(ref: FileRef, stats: read.ReadStats, max_line: int) -> list[str]:
    out = []
    if stats.invalid_utf8:
        out.append(f"{ref.path}: invalid UTF-8 (shown as U+FFFD)")
    if stats.nul_bytes:
        out.append(f"{ref.path}: {stats.nul_bytes} NUL bytes (shown as U+FFFD)")
    if stats.damaged:
        out.append(f"{ref.path}: compressed data is truncated ({stats.damaged}); "
                   f"kept the {stats.lines} lines before the damage")
    if stats.truncated_lines:
        out.append(f"{ref.path}: {stats.truncated_lines} line(s) longer than "
                   f"{max_line >> 10} KiB kept truncated")
    return out


def ingest_file(con, ref: FileRef, cat: Catalog, **kw) -> FileResult:
    """One file into the store through `con`, in this thread."""
    writer = Writer(con)
    try:
        for msg in parse_file(ref, cat, Claims(con), **kw):
            if isinstance(msg, Parsed):
                writer.add(msg.file_id, msg.events, msg.facts)
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


def _count(ev: pl.DataFrame, res: FileResult) -> None:
    res.events += len(ev)
    for fmt, n in ev.group_by("format").len().iter_rows():
        res.formats[fmt] += n
    res.unparsed = res.formats.get("raw", 0)


def _file_row(ref: FileRef, res: FileResult, file_id: int, sha: str, envs: list) -> list:
    claimed = [(n, f) for f, n in res.formats.items() if f != "raw"]
    fmt = max(claimed)[1] if claimed else ("raw" if res.events else None)
    env_names = ",".join(e.name for e in envs if e.scope == "file") or None
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


INGEST_DUCKDB_MEMORY = "512MB"


@dataclass
class IngestSummary:
    files: list[FileResult]
    warnings: list[str]
    seconds: float
    reference_year: int | None
    part: str | None = None           # the part written (ingest --part)


_PARSER_DONE = object()  # a parser thread has no more files


def ingest(paths: list[str], db: str, cat: Catalog, *, tz: str = "UTC", progress: Progress | None = None,
           warn: Callable[[str], None] | None = None, stdin=None, workers: int | None = None,
           exclude: list[str] | None = None, part: str | None = None) -> IngestSummary:
    """`part`: write a part into that directory (parts.py) instead of the store `db`.

    Files are parsed in `workers` threads (polars and DuckDB release the
    GIL), each taking the next input as it finishes one; this thread writes
    every batch through one Writer, so inserts are large and commits few."""
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
    # One DuckDB thread while inserting: the parsers have the other core, and
    # two threads split every INSERT into two part-full row groups (writer.py).
    con.execute("SET threads = 1")
    results: list[FileResult] = []
    claims = Claims(con)
    # Bounded: a parser waits while the writer is behind (memory stays flat).
    messages: queue.Queue = queue.Queue(maxsize=workers)
    stop = threading.Event()

    def put(msg) -> None:
        while not stop.is_set():
            try:
                messages.put(msg, timeout=0.2)
                return
            except queue.Full:
                pass

    def parse(refs: list[FileRef]) -> None:
        msgs = (parse_file(refs[0], cat, claims, tz=tz, progress=progress) if len(refs) == 1
                else parse_small_files(refs, cat, claims, tz=tz, progress=progress))
        for msg in msgs:
            put(msg)
            if stop.is_set():
                return

    # discover() is consumed lazily (archive members are held in memory only
    # while in flight), by the parsers themselves: a parser that finishes a
    # file takes the next one at once, not when this thread, which writes,
    # has time to hand it out.
    refs = iter(discover(paths, _warn, stdin=stdin, exclude=exclude))
    refs_lock = threading.Lock()

    def next_ref() -> FileRef | None:
        with refs_lock:
            ref = next(refs, None)
        if ref is not None and progress:
            progress.on_file(ref.path)
        return ref

    def parser() -> None:
        try:
            ahead = None
            while not stop.is_set() and (ref := ahead or next_ref()) is not None:
                group, ahead = [ref], None
                # Small files go together, up to SMALL_GROUP bytes.
                while (is_small(group[-1]) and len(group) < SMALL_GROUP_FILES
                       and sum(r.size for r in group) < SMALL_GROUP):
                    ahead = next_ref()
                    if ahead is None or not is_small(ahead):
                        break
                    group.append(ahead)
                    ahead = None
                parse(group)
        except BaseException as exc:  # the writer re-raises it
            put(exc)
        finally:
            put(_PARSER_DONE)

    writer = PartWriter(part, cat, con) if part else Writer(con)
    try:
        _remember_fallback_time(con, paths)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for _ in range(workers):
                pool.submit(parser)
            try:
                running = workers
                while running:
                    msg = messages.get()
                    if msg is _PARSER_DONE:
                        running -= 1
                    elif isinstance(msg, BaseException):
                        raise msg
                    elif isinstance(msg, Parsed):
                        writer.add(msg.file_id, msg.events, msg.facts)
                    else:
                        if msg.file_id is not None:
                            writer.done(msg.file_id, msg.row)
                        for p in msg.result.problems:
                            _warn(p)
                        results.append(msg.result)
            finally:
                stop.set()
        writer.close()
        con.execute("RESET threads")
        year = None if part else store.infer_years(con)  # a part's years and summaries: at merge
        if not part:
            store.refresh_summaries(con)
    except BaseException:
        writer.abort()
        raise
    finally:
        con.close()
    return IngestSummary(results, warnings, time.perf_counter() - t0, year, part=getattr(writer, "path", None))


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
