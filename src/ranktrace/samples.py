"""Samples are tests: run every format's samples through the real pipeline.

Used by the loader (a failing sample refuses the catalog), by
`ranktrace formats check` and by the test suite."""

from __future__ import annotations

import polars as pl

from .formats import Catalog, Sample


def run_text(cat: Catalog, text: str, *, envelopes: bool = True, tz: str = "UTC"):
    """Events and facts of `text` as if it were a whole file."""
    from .ingest import envelope, pipeline
    lines = text.split("\n")
    batch = pl.DataFrame({"line": range(1, len(lines) + 1), "offset": [0] * len(lines), "raw": lines},
                         schema={"line": pl.Int64, "offset": pl.Int64, "raw": pl.String})
    envs = []
    if envelopes:
        envs = [e for e in cat.envelopes if e.scope == "line"] + envelope.sniff(batch["raw"], cat.envelopes)
        envs.sort(key=lambda e: (e.order, e.name))
    ctx = pipeline.FileContext(file_id=1, file="<sample>", hints={}, tz=tz)
    return pipeline.process_batch(batch, ctx, cat, envs, final=True)


def check_sample(cat: Catalog, s: Sample) -> list[str]:
    where = f"format {s.format} sample {s.text[:60]!r}"
    out = run_text(cat, s.text, envelopes=s.envelope)
    ev = out.events
    if len(ev) == 0:
        return [f"{where}: produced no event"]
    first = ev.row(0, named=True)
    want = f"{s.format}.{s.pattern}"
    if first["pattern"] != want:
        return [f"{where}: claimed by {first['pattern'] or 'nothing (raw)'}, expected {want}"]
    if first["end_line"] != first["line"] + s.text.count("\n") and "\n" in s.text:
        return [f"{where}: block took lines {first['line']}-{first['end_line']}, expected the whole sample"]
    problems = []
    fmt = cat.format(s.format)
    pat = next((p for p in fmt.patterns if p.id == s.pattern), None)
    caps = {}
    if pat is not None:
        body = s.text
        m = pat.compiled.search(body) if not s.envelope else None
        caps = {k: v for k, v in (m.groupdict() if m else {}).items() if v is not None}
    for k, v in s.expect.items():
        if k in first and k not in ("raw",):
            got = first[k]
            got = None if got is None else (got.strftime("%Y-%m-%dT%H:%M:%S.%f") if k == "ts" else str(got))
        else:
            got = caps.get(k)
        if got != v:
            problems.append(f"{where}: {k} = {got!r}, expected {v!r}")
    if s.kind is not None and first["kind"] != s.kind:
        problems.append(f"{where}: kind = {first['kind']!r}, expected {s.kind!r}")
    for table, expect in s.facts.items():
        got_t = out.facts.get(table)
        if got_t is None or len(got_t) == 0:
            problems.append(f"{where}: no {table} fact, expected {expect}")
            continue
        rows = [{k: (None if v is None else str(v)) for k, v in r.items()} for r in got_t.iter_rows(named=True)]
        wants = expect if isinstance(expect, list) else [expect]
        for w in wants:
            if not any(all(r.get(k) == str(v) for k, v in w.items()) for r in rows):
                problems.append(f"{where}: {table} has no row with {w}; got {rows}")
    return problems


def check_catalog(cat: Catalog) -> list[str]:
    problems = []
    fired: set[tuple[str, int]] = set()
    for f in cat.formats:
        for s in f.samples:
            problems += check_sample(cat, s)
            out = run_text(cat, s.text, envelopes=s.envelope)
            if len(out.events) == 0:
                continue
            first = out.events.row(0, named=True)
            for r in f.rules:
                if r.kind == first["kind"] and (r.on is None or first["pattern"] == f"{f.name}.{r.on}") \
                        and r.compiled.search(first[r.field] or ""):
                    fired.add((f.name, r.index))
        for r in f.rules:
            if (f.name, r.index) not in fired:
                problems.append(f"format {f.name} rule #{r.index} ({r.kind}: {r.regex!r}) "
                                "is exercised by no sample: add one")
    return problems
