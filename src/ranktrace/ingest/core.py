"""core: the compiled ingest engine (ranktrace._core, Rust) and the spec it runs.

The catalog of parsers/ stays the one source of truth: formats.py loads and
validates it, derives precedence, first characters and required literals,
and this module hands the result to the engine as JSON. The engine frames,
peels, blocks, claims, times, classifies and mines every line in one pass
and returns Arrow record batches (see _core.pyi)."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING

from .. import marks
from ..formats import FOUND_TABLE, IDENTITY_COLUMNS, INT_IDENTITY, SEVERITIES, Catalog, TimeSpec
from .dispatch import PRE, first_chars, literal_set, split_tail

if TYPE_CHECKING:   # imported where used: the build makes spec() without them (formats.write_precomputed)
    import pyarrow as pa

    from .. import _core

MAX_LINE = 1 << 20        # a longer line keeps its first MAX_LINE bytes (whole characters)
# Bytes handed to the engine at a time; its working set is ~25x that per parser
# thread. 1 MB against 4 MB: the same instructions (callgrind, +0.3%), peak RSS of
# a 256 MB ingest 0.97 -> 0.75 GB.
CHUNK_BYTES = 1 << 20


# FileParser.stats() keys that say how the engine read the lines (crates/engine/src/shape.rs),
# not what it read: they depend on chunking and threads.
HOW_READ = ("shape_hits", "shapes", "own_reads")


def read_stats(stats: dict) -> dict:
    """`stats` without HOW_READ: what was read, the same however the bytes were fed."""
    return {k: v for k, v in stats.items() if k not in HOW_READ}


def _ts(spec: TimeSpec | None) -> dict | None:
    if spec is None:
        return None
    return {"field": spec.field, "layout": spec.layout, "zone": spec.zone, "year": spec.year, "clock": spec.clock}


def _first(regex: str) -> str | None:
    chars = first_chars(regex)
    return None if chars is None else "".join(sorted(chars))


def _literals(regex: str, prefilter: str | None) -> list[str] | None:
    lits = literal_set(regex, prefilter)
    return list(lits) if lits else None


def _split(regex: str) -> dict | None:
    got = split_tail(regex)
    if got is None:
        return None
    prefix, group = got
    assert PRE in prefix
    return {"prefix": prefix, "group": group}


def spec(cat: Catalog) -> dict:
    """The catalog as the engine reads it (crates/engine/src/spec.rs)."""
    return {
        "identity": list(IDENTITY_COLUMNS),
        "int_identity": list(INT_IDENTITY),
        "severities": list(SEVERITIES),
        "envelopes": [{
            "name": e.name, "regex": e.regex, "scope": e.scope, "ts": _ts(e.ts),
            "first": _first(e.regex), "literals": _literals(e.regex, e.prefilter),
            "deny": list(e.deny), "weak": list(e.weak), "kept": e.kept, "split": _split(e.regex),
        } for e in cat.envelopes],
        "patterns": [{
            "key": p.key, "format": p.format, "regex": p.regex, "first": _first(p.regex),
            "literals": _literals(p.regex, p.prefilter), "ts": _ts(p.ts), "kind": p.kind,
            "carry": list(p.carry), "end_carry": list(p.end_carry), "program": p.program,
            "split": _split(p.regex), "stream": list(p.stream),
        } for p in cat.patterns],
        "blocks": [{
            "key": b.key, "format": b.format, "start": b.start, "start_literals": _literals(b.start, None),
            "cont": b.cont, "end": b.end,
            "message": b.message, "max_lines": b.max_lines, "kind": b.kind, "program": b.program,
            "ts": _ts(b.ts), "ts_regex": b.ts_regex,
        } for b in cat.blocks],
        "rules": [{
            "format": r.format, "regex": r.regex, "kind": r.kind, "on": r.on, "field": r.field,
            "severity": r.severity, "role": r.role,
        } for r in cat.rules],
        "facts": [{
            "format": f.format, "table": f.table, "regex": f.regex, "on": f.on, "types": f.types,
            "identity": list(f.identity), "multi": f.multi, "field": f.field,
        } for f in cat.facts],
        "fact_tables": {t: list(cols.items()) for t, cols in cat.fact_tables.items()},
        "kinds": {k: {"role": i.role, "severity": i.severity} for k, i in cat.kinds.items()},
        "levels": cat.levels,
        "marks": marks.spec(),
        "mark_classes": marks.class_spec(),
        "tokens": [{
            "id": t.id, "regex": t.regex, "stream": list(t.stream), "blocks": list(t.blocks), "links": list(t.links),
            "literals": _literals(t.regex, None),
        } for t in cat.tokens],
        "rejects": [list(r) for r in cat.rejects],
        "found_table": FOUND_TABLE if FOUND_TABLE in cat.fact_tables else None,
    }


def spec_json(cat: Catalog) -> str:
    """json.dumps(spec(cat)); the build's, kept with the bundled catalog
    (formats.precomputed), while the catalog is as it was loaded."""
    kept = cat.__dict__.get("_spec_json")
    if kept is not None and kept[1] == cat.spec_guard():
        return kept[0]
    return json.dumps(spec(cat))


_ENGINES: dict[int, tuple[Catalog, _core.Engine]] = {}
_ENGINES_LOCK = threading.Lock()   # parser threads asking at once compile it once


def engine(cat: Catalog) -> _core.Engine:
    """The compiled engine of a catalog (compiled once per catalog object)."""
    got = _ENGINES.get(id(cat))
    if got is None or got[0] is not cat:
        with _ENGINES_LOCK:
            got = _ENGINES.get(id(cat))
            if got is None or got[0] is not cat:
                from .. import _core
                got = (cat, _core.Engine(spec_json(cat)))
                _ENGINES[id(cat)] = got
    return got[1]


def file_parser(cat: Catalog, file_id: int, file: str, hints: dict, tz: str = "UTC",
                envelopes: list[str] | None = None, max_line: int = MAX_LINE) -> _core.FileParser:
    """A parser for one file; `envelopes` None: line envelopes + those the head calls for."""
    from .. import _core
    return _core.FileParser(engine(cat), file_id, file, sorted((k, str(v)) for k, v in hints.items() if v is not None),
                            tz, envelopes, max_line)


def line_envelopes(cat: Catalog) -> list[str]:
    return [e.name for e in cat.envelopes if e.scope == "line"]


# The columns of view `events` (queries/schema/002_views.sql), in its order.
EVENT_COLUMNS = (
    "event_id", "file_id", "file", "line", "end_line", "byte_offset", "ts", "ts_kind", "ts_text",
    "format", "pattern", "envelopes", *IDENTITY_COLUMNS, "level", "severity", "kind", "role", "message", "raw", "marks")


def widen(rows: pa.Table | pa.RecordBatch, classes: pa.Table | pa.RecordBatch) -> pa.Table:
    """Rows joined to their classes, with the columns of view `events`: what
    a reader of the store sees, for tests and `formats check`. `classes`
    holds every class the rows have (a batch carries only the classes new
    to its file: gather them from the batches before)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    at = pc.index_in(rows["class_id"], classes["class_id"])
    if at.null_count:
        raise ValueError(f"{at.null_count} rows have a class that is not among the classes given")
    fields, cols = [], []
    for name in EVENT_COLUMNS:
        if name == "message":
            fields.append(pa.field("message", pa.string()))
            cols.append(messages(rows))
            continue
        own = name in rows.schema.names
        fields.append((rows if own else classes).schema.field(name))
        cols.append(rows[name] if own else pc.take(classes[name], at))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def messages(rows: pa.Table | pa.RecordBatch) -> pa.Array:
    """The messages of the engine's rows: substr(raw, message_at, message_len),
    as view event_rows cuts them (1-based, in characters)."""
    import polars as pl
    import pyarrow as pa
    frame = pl.from_arrow(pa.table({n: rows[n] for n in ("raw", "message_at", "message_len")}))
    cut = frame.select(pl.col("raw").str.slice(pl.col("message_at") - 1, pl.col("message_len")))
    return cut.to_series().to_arrow().cast(pa.string())


def parse_text(cat: Catalog, text: str, *, envelopes: list[str] | None = None, tz: str = "UTC",
               file_id: int = 1, file: str = "<sample>"):
    """Events (with the columns of view `events`) and facts (polars) of
    `text` parsed as one whole file."""
    import polars as pl
    parser = file_parser(cat, file_id, file, {}, tz, envelopes)
    parser.feed(text.encode(), True)
    events, classes, facts = whole(batches(parser))
    if events is None:
        events, classes, _ = _empty(cat)
    return (pl.from_arrow(widen(events, classes)),
            {t: pl.concat([pl.from_arrow(b) for b in parts], how="diagonal_relaxed") for t, parts in facts.items()})


def events_table(outs) -> pa.Table | None:
    """The events of the batches `outs` (of one file) as view `events` shows
    them; None: no batch."""
    rows, classes, _ = whole(outs)
    return None if rows is None else widen(rows, classes)


def whole(outs) -> tuple[pa.Table | None, pa.Table | None, dict[str, list[pa.RecordBatch]]]:
    """The batches `outs` (of one file) as one table of rows, one of
    classes, and each fact table's batches (None, None, {}: no batch)."""
    import pyarrow as pa
    rows, classes, facts = [], [], {}
    for ev, cl, f in outs:
        rows.append(ev)
        classes.append(cl)
        for t, b in f.items():
            facts.setdefault(t, []).append(b)
    if not rows:
        return None, None, {}
    return pa.Table.from_batches(rows), pa.Table.from_batches(classes), facts


def batches(parser: _core.FileParser, sink: _core.LinesSink | None = None):
    """The parsed batches of what was fed to `parser`, one at a time:
    (event rows, the classes new to the file, facts); with a `sink`, the
    engine writes the rows into it and the batch gives their count."""
    while (out := parser.next_batch(sink)) is not None:
        yield out


def _empty(cat: Catalog):
    parser = file_parser(cat, 0, "", {}, "UTC", [])
    parser.feed(b"x\n", True)
    ev, cl, _ = parser.next_batch()
    return ev.slice(0, 0), cl.slice(0, 0), {}
