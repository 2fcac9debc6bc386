"""classify + facts: event kind, severity and role from data-driven rules;
typed facts from message bodies.

A format's rules apply to its own events, first match wins, in file order;
a pattern or block may name a default kind. The kind catalogue
(parsers/kinds.toml) gives each kind its role and minimum severity.

Logs repeat themselves: a batch of 180 k NCCL lines holds ~20 k distinct
messages. Kind, severity and role depend on (format, pattern, level,
message) only, and facts on (format, pattern, message): they are worked out
once per distinct (format, pattern, level, message) (`distinct`), and go back
to the events through its key `_k`: classification and facts cost per
distinct message, not per line.
"""

from __future__ import annotations

import polars as pl

from ..formats import INT_IDENTITY, SEVERITIES, Catalog, Fact
from .dispatch import Presence, absent

SEV_RANK = {s: i for i, s in enumerate(SEVERITIES)}
KEY = "_k"
MESSAGE_KEY = ["format", "pattern", "level", "message"]


def distinct(ev: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(distinct (format, pattern, level, message) with a key KEY, events with KEY)."""
    d = ev.select(MESSAGE_KEY).unique(maintain_order=True).with_row_index(KEY)
    return d, ev.join(d, on=MESSAGE_KEY, how="left", nulls_equal=True, maintain_order="left")


def _rule_kinds(part: pl.DataFrame, rules: list, in_messages: Presence) -> pl.DataFrame:
    """Apply one format's rules to that format's rows (first match wins)."""
    kind = sev = role = None
    for r in rules:
        if (r.field == "message" and in_messages.absent(r.regex)) or absent(part, pl.col(r.field), r.regex):
            continue
        cond = pl.col(r.field).str.contains(r.regex)
        if r.on is not None:
            cond = (pl.col("pattern") == f"{r.format}.{r.on}") & cond
        if kind is None:
            kind, sev, role = (pl.when(cond).then(pl.lit(r.kind)), pl.when(cond).then(pl.lit(r.severity, pl.String)),
                               pl.when(cond).then(pl.lit(r.role, pl.String)))
        else:
            kind, sev, role = (kind.when(cond).then(pl.lit(r.kind)), sev.when(cond).then(pl.lit(r.severity, pl.String)),
                               role.when(cond).then(pl.lit(r.role, pl.String)))
    if kind is None:
        return part
    return part.with_columns(kind.otherwise(pl.col("kind")).alias("kind"),
                             sev.otherwise(None).alias("_rsev"), role.otherwise(None).alias("_rrole"))


def classify(ev: pl.DataFrame, d: pl.DataFrame, cat: Catalog, in_messages: Presence) -> pl.DataFrame:
    """Add kind, severity and role. `d`, `ev`: as returned by distinct();
    `in_messages`: the literals present in d's messages."""
    by_format: dict[str, list] = {}
    for r in cat.rules:
        by_format.setdefault(r.format, []).append(r)
    present = set(d["format"].unique().to_list())
    # A format with a rule on the raw line is classified line by line.
    per_line = {f for f, rules in by_format.items() if f in present and any(r.field != "message" for r in rules)}

    def rule_columns(frame: pl.DataFrame, formats) -> pl.DataFrame:
        # Rules of a format only ever see that format's rows: the cost is the
        # sum over formats of rules x rows, not all rules x all rows.
        frame = frame.with_columns(pl.lit(None, pl.String).alias(c) for c in ("kind", "_rsev", "_rrole"))
        parts = [frame.filter(~pl.col("format").is_in(list(formats)))]
        parts += [_rule_kinds(frame.filter(pl.col("format") == f), by_format[f], in_messages) for f in formats]
        return pl.concat(parts, how="vertical_relaxed")

    defaults = {p.key: p.kind for p in cat.patterns if p.kind} | {b.key: b.kind for b in cat.blocks if b.kind}
    level_map = {(f, lv): sev for f, m in cat.levels.items() for lv, sev in m.items()}
    lv_keys = {f"{f}\x00{lv}": SEV_RANK[s] for (f, lv), s in level_map.items()}
    kind_sev = {k: SEV_RANK[i.severity] for k, i in cat.kinds.items()}
    kind_role = {k: i.role for k, i in cat.kinds.items()}

    def finish(frame: pl.DataFrame) -> pl.DataFrame:
        frame = frame.with_columns(pl.coalesce(
            "kind", pl.col("pattern").replace_strict(defaults, default=None, return_dtype=pl.String)).alias("kind"))
        # Severity: the strongest of the level map, the kind's and the rule's.
        sev_num = pl.max_horizontal(
            pl.concat_str([pl.col("format"), pl.col("level")], separator="\x00")
              .replace_strict(lv_keys, default=None, return_dtype=pl.Int32),
            pl.col("kind").replace_strict(kind_sev, default=None, return_dtype=pl.Int32),
            pl.col("_rsev").replace_strict(SEV_RANK, default=None, return_dtype=pl.Int32),
        ).fill_null(SEV_RANK["info"])
        return frame.with_columns(
            sev_num.replace_strict(dict(enumerate(SEVERITIES)), return_dtype=pl.String).alias("severity"),
            pl.coalesce(pl.col("_rrole"),
                        pl.col("kind").replace_strict(kind_role, default=None, return_dtype=pl.String),
                        pl.lit("info")).alias("role"),
        ).drop("_rsev", "_rrole")

    out = ("kind", "severity", "role")
    done = finish(rule_columns(d, [f for f in by_format if f in present and f not in per_line])).sort(KEY)
    # KEY numbers the rows of d from 0: a gather, not a join.
    ev = ev.with_columns(done[c].gather(ev[KEY]) for c in out)
    if per_line:
        rows = pl.col("format").is_in(list(per_line))
        ev = pl.concat([ev.filter(~rows), finish(rule_columns(ev.filter(rows).drop(*out), per_line))],
                       how="vertical_relaxed")
    return ev


def _cast(df: pl.DataFrame, fact: Fact) -> pl.DataFrame:
    casts = []
    for c in fact.columns:
        t = fact.types.get(c, "str")
        if t == "int":
            casts.append(pl.col(c).str.replace_all(",", "").cast(pl.Int64, strict=False))
        elif t == "float":
            casts.append(pl.col(c).cast(pl.Float64, strict=False))
    return df.with_columns(casts) if casts else df


def _fact_rows(frame: pl.DataFrame, fact: Fact, key: str, in_messages: Presence) -> pl.DataFrame | None:
    """(key, captures) of the rows of `frame` the fact's regex matches."""
    src = pl.col(fact.field)
    if (fact.field == "message" and in_messages.absent(fact.regex)) or absent(frame, src, fact.regex):
        return None
    frame = frame.filter(src.str.contains(fact.regex))
    if len(frame) == 0:
        return None
    return frame.select(key, src.str.extract_groups(fact.regex).alias("m")).unnest("m")


def _multi_rows(frame: pl.DataFrame, fact: Fact) -> pl.DataFrame | None:
    """Blocks are rare: every match of the block text, in Python."""
    rows = []
    for eid, raw in frame.select("event_id", "raw").iter_rows():
        for m in fact.compiled.finditer(raw):
            rows.append({"event_id": eid, **m.groupdict()})
    if not rows:
        return None
    return pl.DataFrame(rows, schema={"event_id": pl.Int64, **{c: pl.String for c in fact.columns}})


def extract_facts(ev: pl.DataFrame, d: pl.DataFrame, cat: Catalog, in_messages: Presence) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Return ({table: facts}, events with identity filled from facts).
    `d`, `ev`: as returned by distinct(); `in_messages`: the literals present in d's messages."""
    out: dict[str, list[pl.DataFrame]] = {}
    fills: list[pl.DataFrame] = []
    by_format = d.partition_by("format", as_dict=True)
    for fact in cat.facts:
        if fact.field != "message":
            # An envelope's fact: it reads the capture the envelope kept, line by line.
            if fact.field not in ev.columns:
                continue
            got = _fact_rows(ev.filter(pl.col(fact.field).is_not_null()), fact, "event_id", in_messages)
        else:
            sub = by_format.get((fact.format,))
            if sub is None:
                continue
            if fact.on is not None:
                sub = sub.filter(pl.col("pattern") == f"{fact.format}.{fact.on}")
            if len(sub) == 0:
                continue
            if fact.multi:
                got = _multi_rows(ev.filter(pl.col(KEY).is_in(sub[KEY].implode())), fact)
            else:
                got = _fact_rows(sub, fact, KEY, in_messages)
                if got is not None:
                    # Back from distinct messages to the events that carry them.
                    got = ev.select("event_id", KEY).join(got, on=KEY, how="inner", maintain_order="left").drop(KEY)
        if got is None:
            continue
        got = _cast(got, fact)
        out.setdefault(fact.table, []).append(got)
        if fact.identity and not fact.multi:
            fills.append(got.select("event_id", *[pl.col(c).cast(pl.String) for c in fact.identity]))
    tables = {t: pl.concat(parts, how="diagonal_relaxed") for t, parts in out.items()}
    for f in fills:
        # Few events carry such facts: a lookup by event_id, not a join of the batch.
        f = f.unique("event_id", keep="first")
        fill_exprs = []
        for c in (c for c in f.columns if c != "event_id"):
            val = pl.col("event_id").replace_strict(f["event_id"], f[c], default=None, return_dtype=pl.String)
            if c in INT_IDENTITY:
                val = val.cast(pl.Int64, strict=False)
            fill_exprs.append(pl.coalesce(pl.col(c), val).alias(c))
        ev = ev.with_columns(fill_exprs)
    return tables, ev.drop(KEY)
