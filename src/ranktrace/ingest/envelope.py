"""sniff + peel: strip envelopes (prefixes added by launchers and collectors).

Envelopes nest ("<rfc3339> stderr F [rank3]:[E1108 ...] ..."), so peeling
repeats until no envelope matches. A line-scoped envelope is tried on every
line; a file-scoped one (srun --label, journald, CRI) only in files whose
head it dominates, so that "10: work = ..." in an ordinary log is not taken
for an srun label.

Identity captured by an envelope fills the identity columns; the outermost
envelope wins (an srun label names the global rank even when the payload
carries a process-group-local "[Rank 1]").
"""

from __future__ import annotations

import polars as pl

from ..formats import IDENTITY_COLUMNS, Envelope
from . import timeparse

MAX_DEPTH = 4
SNIFF_LINES = 200
SNIFF_SHARE = 0.6


def sniff(head: pl.Series, envelopes: list[Envelope]) -> list[Envelope]:
    """File-scoped envelopes that match most non-blank lines of the head."""
    lines = head.filter(head.str.strip_chars() != "").head(SNIFF_LINES)
    if len(lines) == 0:
        return []
    out = []
    for env in envelopes:
        if env.scope != "file":
            continue
        share = lines.str.contains(env.regex).mean()
        if share is not None and share >= SNIFF_SHARE:
            out.append(env)
    return out


def empty_identity() -> list[pl.Expr]:
    return [pl.lit(None, pl.String).alias(c) for c in IDENTITY_COLUMNS]


def peel(df: pl.DataFrame, envelopes: list[Envelope], tz: str) -> pl.DataFrame:
    """Add body, identity columns, env_ts / env_ts_kind / env_ts_text, envelopes."""
    df = df.with_columns(
        pl.col("raw").alias("body"), *empty_identity(),
        pl.lit(None, timeparse.UTC).alias("env_ts"),
        pl.lit(None, pl.String).alias("env_ts_kind"),
        pl.lit(None, pl.String).alias("env_ts_text"),
        pl.lit(None, pl.String).alias("envelopes"),
    )
    if not envelopes:
        return df
    df = df.with_row_index("_i")
    work = df
    for _ in range(MAX_DEPTH):
        updates = []
        left = work.select("_i", "body")
        for env in envelopes:
            if len(left) == 0:
                break
            hit = pl.col("body").str.contains(env.regex)
            if env.prefilter:
                hit = pl.col("body").str.contains(env.prefilter, literal=True) & hit
            for d in env.deny:
                hit = hit & ~pl.col("body").str.starts_with(d)
            matched = left.filter(hit)
            if len(matched) == 0:
                continue
            left = left.join(matched.select("_i"), on="_i", how="anti")
            caps = matched.select("_i", pl.col("body").str.extract_groups(env.regex).alias("m")).unnest("m")
            cols = [pl.col("_i"), pl.col("rest").alias("body"), pl.lit(env.name).alias("_env")]
            for c in IDENTITY_COLUMNS:
                cols.append(pl.col(c) if c in caps.columns else pl.lit(None, pl.String).alias(c))
            if env.ts is not None and env.ts.field in caps.columns:
                cols += [timeparse.parse_expr(pl.col(env.ts.field), env.ts, tz).alias("_ts"),
                         pl.lit(timeparse.kind_of(env.ts)).alias("_tsk"),
                         pl.col(env.ts.field).alias("_tst")]
            else:
                cols += [pl.lit(None, timeparse.UTC).alias("_ts"), pl.lit(None, pl.String).alias("_tsk"),
                         pl.lit(None, pl.String).alias("_tst")]
            updates.append(caps.select(cols))
        if not updates:
            break
        upd = pl.concat(updates)
        merged = df.join(upd, on="_i", how="left", suffix="_new")
        has = pl.col("_env").is_not_null()
        merged = merged.with_columns(
            pl.when(has).then(pl.col("body_new")).otherwise(pl.col("body")).alias("body"),
            *[pl.coalesce(c, f"{c}_new").alias(c) for c in IDENTITY_COLUMNS],
            pl.when(pl.col("env_ts").is_null() & pl.col("_ts").is_not_null())
              .then(pl.col("_ts")).otherwise(pl.col("env_ts")).alias("env_ts"),
            pl.when(pl.col("env_ts").is_null() & pl.col("_ts").is_not_null())
              .then(pl.col("_tsk")).otherwise(pl.col("env_ts_kind")).alias("env_ts_kind"),
            pl.when(pl.col("env_ts").is_null() & pl.col("_ts").is_not_null())
              .then(pl.col("_tst")).otherwise(pl.col("env_ts_text")).alias("env_ts_text"),
            pl.when(has).then(pl.concat_str([pl.col("envelopes"), pl.col("_env")], separator=">",
                                             ignore_nulls=True)).otherwise(pl.col("envelopes")).alias("envelopes"),
        )
        df = merged.select(df.columns)
        work = df.join(upd.select("_i"), on="_i", how="semi")
    return df.drop("_i")
