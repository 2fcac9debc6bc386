"""read: the only place lines come from. Bounded batches of raw lines.

A batch is a polars DataFrame (line, offset, raw) built without a Python loop
per line: a whole chunk is decoded at once and split in Rust. Memory is
bounded by `batch_bytes` plus one line capped at `max_line` bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO, Iterator

import polars as pl

BATCH_BYTES = 16 << 20
MAX_LINE = 1 << 20


@dataclass
class ReadStats:
    bytes: int = 0
    lines: int = 0
    invalid_utf8: int = 0        # chunks that needed replacement characters
    nul_bytes: int = 0
    truncated_lines: int = 0
    crlf: bool = False
    damaged: str | None = None   # the compressed stream ended early: why


def _read_some(stream: BinaryIO, n: int, stats: ReadStats) -> bytes:
    """Up to n bytes. Reads in small steps so that a truncated .gz/.xz/.bz2
    gives up everything before the damage (a big read() loses its whole
    chunk when the stream ends early)."""
    if stats.damaged:
        return b""
    parts, got = [], 0
    step = getattr(stream, "read1", None) or stream.read
    while got < n:
        try:
            b = step(min(1 << 20, n - got))
        except EOFError as exc:
            stats.damaged = str(exc)
            break
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def _decode(chunk: bytes, stats: ReadStats) -> str:
    if b"\x00" in chunk:
        stats.nul_bytes += chunk.count(b"\x00")
        chunk = chunk.replace(b"\x00", b"\xef\xbf\xbd")  # U+FFFD: DuckDB text cannot hold NUL
    try:
        return chunk.decode("utf-8")
    except UnicodeDecodeError:
        stats.invalid_utf8 += 1
        return chunk.decode("utf-8", errors="replace")


def _frame(text: str, first_line: int, first_offset: int) -> pl.DataFrame:
    raw = pl.Series("raw", [text]).str.split("\n").explode()
    raw = raw.head(len(raw) - 1)  # the chunk ends with "\n": drop the empty tail
    nbytes = raw.str.len_bytes().cast(pl.Int64) + 1
    df = pl.DataFrame({"raw": raw})
    return df.with_columns(
        line=pl.int_range(first_line, first_line + len(df), dtype=pl.Int64),
        offset=(nbytes.cum_sum() - nbytes + first_offset),
    ).with_columns(pl.col("raw").str.strip_suffix("\r")).select("line", "offset", "raw")


def iter_batches(stream: BinaryIO, stats: ReadStats, *, batch_bytes: int = BATCH_BYTES,
                 max_line: int = MAX_LINE) -> Iterator[pl.DataFrame]:
    """Yield DataFrames of complete lines. `stats` is updated as we go."""
    pending = b""
    skipping = False      # inside an over-long line whose head was already emitted
    line_no = 1
    offset = 0
    while True:
        chunk = _read_some(stream, batch_bytes, stats)
        eof = not chunk
        stats.bytes += len(chunk)
        buf = pending + chunk
        pending = b""
        if skipping:
            nl = buf.find(b"\n")
            if nl < 0:
                offset += len(buf)
                if eof:
                    break
                continue
            offset += nl + 1
            buf = buf[nl + 1:]
            skipping = False
        cut = buf.rfind(b"\n")
        if eof:
            body, rest = (buf if buf.endswith(b"\n") or not buf else buf + b"\n"), b""
        elif cut < 0:
            body, rest = b"", buf
        else:
            body, rest = buf[:cut + 1], buf[cut + 1:]
        if len(rest) > max_line:
            # An over-long line: keep its head as the line, skip to its end.
            body += rest[:max_line] + b"\n"
            rest = b""
            skipping = True
            stats.truncated_lines += 1
        pending = rest
        if body:
            if not stats.crlf and b"\r\n" in body[:65536]:
                stats.crlf = True
            df = _frame(_decode(body, stats), line_no, offset)
            long = df["raw"].str.len_bytes() > max_line
            n_long = int(long.sum())
            if n_long:
                stats.truncated_lines += n_long
                df = df.with_columns(pl.when(long).then(pl.col("raw").str.slice(0, max_line))
                                     .otherwise(pl.col("raw")).alias("raw"))
            line_no += len(df)
            offset += len(body)
            stats.lines += len(df)
            if len(df):
                yield df
        if eof:
            break
