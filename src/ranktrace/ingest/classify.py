"""classify + facts: event kind, severity and role from data-driven rules;
typed facts from message bodies.

A format's rules apply to its own events, first match wins, in file order;
a pattern or block may name a default kind. The kind catalogue
(parsers/kinds.toml) gives each kind its role and minimum severity.
"""

from __future__ import annotations

import polars as pl

from ..formats import INT_IDENTITY, SEVERITIES, Catalog, Fact

SEV_RANK = {s: i for i, s in enumerate(SEVERITIES)}


def classify(ev: pl.DataFrame, cat: Catalog) -> pl.DataFrame:
    kind = pl.lit(None, pl.String)
    rule_sev = pl.lit(None, pl.String)
    rule_role = pl.lit(None, pl.String)
    # Build one when/then chain: the first rule that matches wins.
    chain_kind = chain_sev = chain_role = None
    for r in cat.rules:
        cond = pl.col("format") == r.format
        if r.on is not None:
            cond = cond & (pl.col("pattern") == f"{r.format}.{r.on}")
        cond = cond & pl.col(r.field).str.contains(r.regex)
        if chain_kind is None:
            chain_kind = pl.when(cond).then(pl.lit(r.kind))
            chain_sev = pl.when(cond).then(pl.lit(r.severity, pl.String))
            chain_role = pl.when(cond).then(pl.lit(r.role, pl.String))
        else:
            chain_kind = chain_kind.when(cond).then(pl.lit(r.kind))
            chain_sev = chain_sev.when(cond).then(pl.lit(r.severity, pl.String))
            chain_role = chain_role.when(cond).then(pl.lit(r.role, pl.String))
    defaults = {p.key: p.kind for p in cat.patterns if p.kind} | {b.key: b.kind for b in cat.blocks if b.kind}
    default_kind = pl.col("pattern").replace_strict(defaults, default=None, return_dtype=pl.String)
    if chain_kind is not None:
        kind = chain_kind.otherwise(default_kind)
        rule_sev = chain_sev.otherwise(None)
        rule_role = chain_role.otherwise(None)
    else:
        kind = default_kind
    ev = ev.with_columns(kind.alias("kind"), rule_sev.alias("_rsev"), rule_role.alias("_rrole"))

    # Severity: the strongest of the level map, the kind's and the rule's.
    level_map = {(f, lv): sev for f, m in cat.levels.items() for lv, sev in m.items()}
    lv_keys = {f"{f}\x00{lv}": SEV_RANK[s] for (f, lv), s in level_map.items()}
    kind_sev = {k: SEV_RANK[i.severity] for k, i in cat.kinds.items()}
    kind_role = {k: i.role for k, i in cat.kinds.items()}
    sev_num = pl.max_horizontal(
        pl.concat_str([pl.col("format"), pl.col("level")], separator="\x00")
          .replace_strict(lv_keys, default=None, return_dtype=pl.Int32),
        pl.col("kind").replace_strict(kind_sev, default=None, return_dtype=pl.Int32),
        pl.col("_rsev").replace_strict(SEV_RANK, default=None, return_dtype=pl.Int32),
    ).fill_null(SEV_RANK["info"])
    return ev.with_columns(
        sev_num.replace_strict(dict(enumerate(SEVERITIES)), return_dtype=pl.String).alias("severity"),
        pl.coalesce(pl.col("_rrole"),
                    pl.col("kind").replace_strict(kind_role, default=None, return_dtype=pl.String),
                    pl.lit("info")).alias("role"),
    ).drop("_rsev", "_rrole")


def _cast(df: pl.DataFrame, fact: Fact) -> pl.DataFrame:
    casts = []
    for c in fact.columns:
        t = fact.types.get(c, "str")
        if t == "int":
            casts.append(pl.col(c).str.replace_all(",", "").cast(pl.Int64, strict=False))
        elif t == "float":
            casts.append(pl.col(c).cast(pl.Float64, strict=False))
    return df.with_columns(casts) if casts else df


def extract_facts(ev: pl.DataFrame, cat: Catalog) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Return ({table: facts}, events with identity filled from facts)."""
    out: dict[str, list[pl.DataFrame]] = {}
    fills: list[pl.DataFrame] = []
    for fact in cat.facts:
        cond = pl.col("format") == fact.format
        if fact.on is not None:
            cond = cond & (pl.col("pattern") == f"{fact.format}.{fact.on}")
        sub = ev.filter(cond)
        if len(sub) == 0:
            continue
        if fact.multi:
            # Blocks are rare: every match of the block text, in Python.
            rows = []
            for eid, raw in sub.select("event_id", "raw").iter_rows():
                for m in fact.compiled.finditer(raw):
                    rows.append({"event_id": eid, **m.groupdict()})
            if not rows:
                continue
            got = pl.DataFrame(rows, schema={"event_id": pl.Int64, **{c: pl.String for c in fact.columns}})
        else:
            sub = sub.filter(pl.col("message").str.contains(fact.regex))
            if len(sub) == 0:
                continue
            got = sub.select("event_id", pl.col("message").str.extract_groups(fact.regex).alias("m")).unnest("m")
        got = _cast(got, fact)
        out.setdefault(fact.table, []).append(got)
        if fact.identity and not fact.multi:
            fills.append(got.select("event_id", *[pl.col(c).cast(pl.String) for c in fact.identity]))
    tables = {t: pl.concat(parts, how="diagonal_relaxed") for t, parts in out.items()}
    for f in fills:
        f = f.unique("event_id", keep="first")
        cols = [c for c in f.columns if c != "event_id"]
        ev = ev.join(f.rename({c: f"_f_{c}" for c in cols}), on="event_id", how="left")
        fill_exprs = []
        for c in cols:
            val = pl.col(f"_f_{c}")
            if c in INT_IDENTITY:
                val = val.cast(pl.Int64, strict=False)
            fill_exprs.append(pl.coalesce(pl.col(c), val).alias(c))
        ev = ev.with_columns(fill_exprs).drop([f"_f_{c}" for c in cols])
    return tables, ev
