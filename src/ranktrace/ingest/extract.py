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
from .capture import HIT, capture
from .dispatch import Presence, first_char, first_chars, literal_test

OUT = ["_i", "format", "pattern", "level", "message", "ts", "ts_kind", "ts_text", *[f"p_{c}" for c in IDENTITY_COLUMNS]]


def _claim(caps: pl.DataFrame, p: Pattern, tz: str) -> pl.DataFrame:
    """Event columns of the lines `p` matched (`caps`: its captures)."""
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


def match_lines(df: pl.DataFrame, patterns: list[Pattern], tz: str, presence: Presence) -> pl.DataFrame:
    """Claim rows that are not part of a block. Returns per-row captures (OUT columns).

    Each pattern only sees the lines that no earlier pattern claimed and
    that can start its match (dispatch.py); a pattern none of whose first
    characters occurs in the batch costs nothing, not even its compilation
    (which, for polars, happens on every call and dominates small calls)."""
    left = df.filter(pl.col("block").is_null()).select("_i", "body", first_char("body").alias("_fc"))
    present = set(left["_fc"].unique().to_list())
    parts = []
    for p in patterns:
        if len(left) == 0:
            break
        first = first_chars(p.regex)
        if first is not None and not (first & present) or presence.absent(p.regex, p.prefilter):
            continue
        cand = left if first is None else left.filter(pl.col("_fc").is_in(list(first & present)))
        has = literal_test(pl.col("body"), p.regex, p.prefilter)
        if has is not None:
            cand = cand.filter(has)
            if len(cand) == 0:
                continue
        matched = capture(cand, p.regex, keep=("_i", "body"), matched_only=True)
        if len(matched) == 0:
            continue
        parts.append(_claim(matched.drop(HIT), p, tz))
        left = left.join(matched.select("_i"), on="_i", how="anti")
        present = set(left["_fc"].unique().to_list())
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
    ident = [c for c in rows.columns if c in IDENTITY_COLUMNS or c.removeprefix("weak_") in IDENTITY_COLUMNS]
    agg = rows.sort("_f", "line").group_by("_f", "block", "block_start", *ident,
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
