"""capture: a regex's named groups over a string column, as columns.

One place for the trick that makes extraction affordable: a pattern ending
in a rest-of-line group captures only its prefix, and the group is the line
with that prefix stripped (dispatch.split_tail)."""

from __future__ import annotations

import polars as pl

from .dispatch import PRE, split_tail

HIT = "_hit"


def capture(df: pl.DataFrame, regex: str, col: str = "body", keep: tuple[str, ...] = (),
            matched_only: bool = False) -> pl.DataFrame:
    """Columns `keep`, one column per named group of `regex` (null where it
    did not match or did not take part) and HIT (whether the line matched).
    matched_only: return only the rows that matched."""
    split = split_tail(regex)
    src = pl.col(col)
    if split is None:
        if matched_only:
            # Captures over a whole line cost more than a DFA test: test first.
            df = df.filter(src.str.contains(regex))
        hit = pl.lit(True) if matched_only else src.str.contains(regex)
        return df.select(*keep, src.str.extract_groups(regex).alias("_m"), hit.alias(HIT)).unnest("_m")
    # A prefix capture fails as fast as a DFA test where the line does not
    # match: no separate test.
    prefix, tail = split
    out = df.select(*dict.fromkeys((*keep, col)), src.str.extract_groups(prefix).alias("_m")).unnest("_m")
    if matched_only:
        out = out.filter(pl.col(PRE).is_not_null())
    rest = [] if tail is None else [src.str.strip_prefix(pl.col(PRE)).alias(tail)]
    return out.with_columns(pl.col(PRE).is_not_null().alias(HIT), *rest).drop(
        PRE, *([col] if col not in keep else []))
