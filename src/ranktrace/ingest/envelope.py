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
from .capture import capture
from .dispatch import Presence, first_char, first_chars, literal_test

MAX_DEPTH = 4
SNIFF_LINES = 200
SNIFF_SHARE = 0.6


def sniff(head: pl.Series, envelopes: list[Envelope]) -> list[Envelope]:
    """File-scoped envelopes that match most non-blank lines of the head."""
    return sniff_files(head.to_frame("raw").with_columns(pl.lit(0, pl.UInt32).alias("_f")), envelopes).get(0, [])


def sniff_files(lines: pl.DataFrame, envelopes: list[Envelope]) -> dict[int, list[Envelope]]:
    """sniff() for several files at once: `lines` holds (raw, _f), the lines
    of file _f in order. Returns _f -> its file-scoped envelopes."""
    heads = lines.filter(pl.col("raw").str.strip_chars() != "").group_by("_f", maintain_order=True).head(SNIFF_LINES)
    out: dict[int, list[Envelope]] = {}
    if len(heads) == 0:
        return out
    for env in envelopes:
        if env.scope != "file":
            continue
        share = heads.group_by("_f").agg(pl.col("raw").str.contains(env.regex).mean().alias("s"))
        for f in share.filter(pl.col("s") >= SNIFF_SHARE)["_f"].to_list():
            out.setdefault(f, []).append(env)
    return out


def empty_identity() -> list[pl.Expr]:
    """Identity columns, and their weak_ twins (identity an envelope gives
    only when nothing closer to the message does: srun's task number)."""
    return [pl.lit(None, pl.String).alias(p + c) for p in ("", "weak_") for c in IDENTITY_COLUMNS]


def _candidates(env: Envelope) -> pl.Expr:
    """Cheap test for lines the envelope can match (first char, literal)."""
    cand = pl.lit(True)
    first = first_chars(env.regex)
    if first is not None:
        cand = pl.col("_fc").is_in(list(first))
    has = literal_test(pl.col("body"), env.regex, env.prefilter)
    if has is not None:
        cand = cand & has
    for d in env.deny:
        cand = cand & ~pl.col("body").str.starts_with(d)
    return cand


def peel(df: pl.DataFrame, envelopes: list[Envelope], tz: str, presence: Presence) -> pl.DataFrame:
    """Add body, identity columns, env_ts / env_ts_kind / env_ts_text, envelopes.

    Columns are updated in place with when/then (no joins); an envelope's
    regex only runs on its candidate lines (the others are null for it)."""
    df = df.with_columns(
        pl.col("raw").alias("body"), *empty_identity(),
        pl.lit(None, timeparse.UTC).alias("env_ts"),
        pl.lit(None, pl.String).alias("env_ts_kind"),
        pl.lit(None, pl.String).alias("env_ts_text"),
        pl.lit(None, pl.String).alias("envelopes"),
        *[pl.lit(None, pl.String).alias(col) for env in envelopes for col in env.kept.values()],
    )
    envelopes = [env for env in envelopes if not presence.absent(env.regex, env.prefilter)]
    if not envelopes:
        return df
    # Only a line peeled in one round can have another envelope under it:
    # the others were tried against every envelope already, unchanged.
    df = df.with_columns(pl.lit(True).alias("_live"))
    for _ in range(MAX_DEPTH):
        df = df.with_columns(pl.lit(False).alias("_done"), first_char("body").alias("_fc"))
        peeled = False
        for env in envelopes:
            cand = _candidates(env) & pl.col("_live") & ~pl.col("_done")
            df = df.with_columns(cand.alias("_cand"))
            if not df["_cand"].any():
                continue
            caps = capture(df.select(pl.when(pl.col("_cand")).then(pl.col("body")).alias("body")), env.regex)
            hit = caps["rest"].is_not_null()
            if not hit.any():
                continue
            peeled = True
            h = pl.lit(hit)
            new_ts = None
            if env.ts is not None and env.ts.field in caps.columns:
                new_ts = caps.select(timeparse.parse_expr(pl.col(env.ts.field), env.ts, tz).alias("t"))["t"]
            take_ts = h & pl.col("env_ts").is_null() & (pl.lit(new_ts).is_not_null() if new_ts is not None
                                                        else pl.lit(False))
            updates = [
                pl.when(h).then(pl.lit(caps["rest"])).otherwise(pl.col("body")).alias("body"),
                pl.when(h).then(pl.concat_str([pl.col("envelopes"), pl.lit(env.name)], separator=">",
                                              ignore_nulls=True)).otherwise(pl.col("envelopes")).alias("envelopes"),
                (pl.col("_done") | h).alias("_done"),
            ]
            for c in IDENTITY_COLUMNS:
                if c in caps.columns:
                    col = f"weak_{c}" if c in env.weak else c
                    updates.append(pl.coalesce(pl.col(col), pl.when(h).then(pl.lit(caps[c]))).alias(col))
            for cap, col in env.kept.items():
                updates.append(pl.coalesce(pl.col(col), pl.when(h).then(pl.lit(caps[cap]))).alias(col))
            if new_ts is not None:
                updates += [
                    pl.when(take_ts).then(pl.lit(new_ts)).otherwise(pl.col("env_ts")).alias("env_ts"),
                    pl.when(take_ts).then(pl.lit(timeparse.kind_of(env.ts))).otherwise(pl.col("env_ts_kind"))
                      .alias("env_ts_kind"),
                    pl.when(take_ts).then(pl.lit(caps[env.ts.field])).otherwise(pl.col("env_ts_text"))
                      .alias("env_ts_text"),
                ]
            df = df.with_columns(updates)
        if not peeled:
            break
        df = df.with_columns(pl.col("_done").alias("_live"))
    return df.drop("_done", "_cand", "_live", "_fc", strict=False)
