"""extract: claim each line for the first pattern (in precedence order) that
matches it, and take its captures. One regex pass per pattern over the
lines still unclaimed; no per-line Python.

Output columns added: format, pattern, level, message, ts, ts_kind, ts_text
and the identity columns (envelope identity first, then the pattern's).
"""

from __future__ import annotations

import polars as pl

from ..formats import IDENTITY_COLUMNS, Block, Pattern
from . import timeparse

OUT = ["_i", "format", "pattern", "level", "message", "ts", "ts_kind", "ts_text", *[f"p_{c}" for c in IDENTITY_COLUMNS]]


def _claim(matched: pl.DataFrame, p: Pattern, tz: str) -> pl.DataFrame:
    caps = matched.select("_i", pl.col("body"), pl.col("body").str.extract_groups(p.regex).alias("m")).unnest("m")
    def cap(name: str) -> pl.Expr:
        return pl.col(name) if name in caps.columns and name != "body" else pl.lit(None, pl.String)
    cols = [
        pl.col("_i"), pl.lit(p.format).alias("format"), pl.lit(p.key).alias("pattern"),
        cap("level").alias("level"),
        (pl.col("message") if "message" in caps.columns else pl.col("body")).alias("message"),
    ]
    if p.ts is not None and p.ts.field in caps.columns:
        cols += [timeparse.parse_expr(pl.col(p.ts.field), p.ts, tz).alias("ts"),
                 pl.lit(timeparse.kind_of(p.ts)).alias("ts_kind"), pl.col(p.ts.field).alias("ts_text")]
    else:
        cols += [pl.lit(None, timeparse.UTC).alias("ts"), pl.lit(None, pl.String).alias("ts_kind"),
                 pl.lit(None, pl.String).alias("ts_text")]
    for c in IDENTITY_COLUMNS:
        v = cap(c)
        if c == "program" and p.program and "program" not in caps.columns:
            v = pl.lit(p.program)
        cols.append(v.alias(f"p_{c}"))
    return caps.select(cols)


def match_lines(df: pl.DataFrame, patterns: list[Pattern], tz: str) -> pl.DataFrame:
    """Claim rows that are not part of a block. Returns per-row captures (OUT columns)."""
    left = df.filter(pl.col("block").is_null()).select("_i", "body")
    parts = []
    for p in patterns:
        if len(left) == 0:
            break
        hit = pl.col("body").str.contains(p.regex)
        if p.prefilter:
            hit = pl.col("body").str.contains(p.prefilter, literal=True) & hit
        matched = left.filter(hit)
        if len(matched) == 0:
            continue
        parts.append(_claim(matched, p, tz))
        left = left.filter(~hit)
    if not parts:
        return pl.DataFrame(schema={c: (pl.UInt32 if c == "_i" else timeparse.UTC if c == "ts" else pl.String)
                                    for c in OUT})
    return pl.concat(parts, how="vertical_relaxed")


def collapse_blocks(df: pl.DataFrame, blocks: dict[str, Block]) -> pl.DataFrame:
    """One row per block: first line's identity, joined raw text, message line."""
    rows = df.filter(pl.col("block").is_not_null())
    if len(rows) == 0:
        return rows.clear()
    msg_first = [k for k, b in blocks.items() if b.message == "first"]
    agg = rows.sort("line").group_by("block", "block_start", *[c for c in IDENTITY_COLUMNS],
                                     maintain_order=True).agg(
        pl.col("_i").first(), pl.col("line").first(), pl.col("line").last().alias("end_line"),
        pl.col("offset").first(), pl.col("raw").str.join("\n"),
        pl.col("body").first().alias("_first"),
        # The message is the last line that says something (not a ^^^^ marker).
        pl.col("body").filter(~pl.col("body").str.contains(r"^\s*[\^~ ]*$")).last().alias("_last"),
        pl.col("env_ts").drop_nulls().first(), pl.col("env_ts_kind").drop_nulls().first(),
        pl.col("env_ts_text").drop_nulls().first(), pl.col("envelopes").first(),
    )
    return agg.with_columns(
        pl.when(pl.col("block").is_in(msg_first)).then(pl.col("_first")).otherwise(pl.coalesce("_last", "_first"))
          .alias("message"),
    ).drop("_first", "_last", "block_start")
