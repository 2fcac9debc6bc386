"""blocks: join multi-line blocks (tracebacks, torchrun failure summaries)
into one event, per stream, vectorized.

A stream is the lines of one file (`_f`: a batch may hold several small
files) that share an envelope identity (rank, local rank, host), so the
interleaved tracebacks of two ranks stay apart.
A block starts at a `start` line and takes the following `continue` lines
of its stream, up to and including an `end` line.
"""

from __future__ import annotations

import polars as pl

from ..formats import Block
from .dispatch import Presence, absent

STREAM = ["_f", "host", "rank", "local_rank", "weak_rank"]
ORDER = ["_f", "line"]  # a batch's lines in file order


def find_blocks(df: pl.DataFrame, blocks: list[Block], presence: Presence) -> pl.DataFrame:
    """Add columns block (pattern key or null) and block_start (first line of its block)."""
    df = df.with_columns(pl.lit(None, pl.String).alias("block"), pl.lit(None, pl.Int64).alias("block_start"))
    if not blocks or len(df) == 0:
        return df
    w = None  # the few columns the block kinds work on, in file order, with a stream number
    for b in blocks:
        if presence.absent(b.start) or absent(df, pl.col("body"), b.start):
            continue
        free = pl.col("block").is_null()
        start = free & pl.col("body").str.contains(b.start)
        # Cheap exit: no start line in this batch for this block kind.
        if not (df if w is None else w).select(start.any()).item():
            continue
        if w is None:
            # Sorted once, narrow: a batch of many small files meets many block
            # kinds, and each used to sort all ~40 columns and group by 5 keys.
            df = df.sort(ORDER)
            w = df.select("line", "body", "block", "block_start", pl.struct(STREAM).rank("dense").alias("_st"))
        cont = free & pl.col("body").str.contains(b.cont)
        end = free & pl.col("body").str.contains(b.end) if b.end else pl.lit(False)
        g = w.with_columns(_s=start, _c=cont, _e=end)
        g = g.with_columns(
            _brk=(~pl.col("_c") | pl.col("_s")
                  | pl.col("_e").shift(1).over("_st").fill_null(False)
                  | pl.col("block").is_not_null()),
        ).with_columns(  # a segment of a stream, as one integer key
            _seg=pl.col("_st").cast(pl.Int64) * (1 << 32) + pl.col("_brk").cum_sum().over("_st"))
        # Each segment's rows together (a stable sort keeps them in line order):
        # its first row's values carry forward, with no window over ~as many
        # groups as rows.
        head = (pl.col("_seg") != pl.col("_seg").shift(1)).fill_null(True)
        row = pl.int_range(pl.len())
        g = g.with_row_index("_r").sort("_seg", maintain_order=True).with_columns(
            _isblk=pl.when(head).then(pl.col("_s")).forward_fill() & pl.col("block").is_null(),
            _first=pl.when(head).then(pl.col("line")).forward_fill(),
            _pos=row - pl.when(head).then(row).forward_fill(),
        ).sort("_r")
        inblk = pl.col("_isblk") & (pl.col("_pos") < b.max_lines)
        w = g.select(
            "line", "body", "_st",
            pl.when(inblk).then(pl.lit(b.key)).otherwise(pl.col("block")).alias("block"),
            pl.when(inblk).then(pl.col("_first")).otherwise(pl.col("block_start")).alias("block_start"),
        )
    return df if w is None else df.with_columns(w["block"], w["block_start"])


def open_block_start(df: pl.DataFrame, block_ends: dict[str, str | None]) -> int | None:
    """First line of a block still open at the end of the batch, if any.

    A block is open when it holds the last line of its stream in the batch
    and has not seen its end line; its lines are carried into the next batch.
    """
    if "block" not in df.columns or df["block"].null_count() == len(df):
        return None
    last = df.sort(ORDER).group_by(STREAM, maintain_order=True).agg(
        pl.col("block").last(), pl.col("block_start").last(), pl.col("body").last())
    open_starts = []
    for row in last.filter(pl.col("block").is_not_null()).iter_rows(named=True):
        end = block_ends.get(row["block"])
        if end is None or not pl.Series([row["body"]]).str.contains(end)[0]:
            open_starts.append(row["block_start"])
    return min(open_starts) if open_starts else None
