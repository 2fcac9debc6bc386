"""Samples are tests: run every format's samples through the real pipeline.

Used by the loader (a failing sample refuses the catalog), by
`ranktrace formats check` and by the test suite."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from .formats import Catalog, Sample


@dataclass
class TextResult:
    events: pl.DataFrame
    facts: dict


def run_text(cat: Catalog, text: str, *, envelopes: bool = True, tz: str = "UTC") -> TextResult:
    """Events and facts of `text` as if it were a whole file (envelopes=False: none peeled)."""
    from .ingest import core
    return TextResult(*core.parse_text(cat, text, envelopes=None if envelopes else [], tz=tz))


def _check_events(cat: Catalog, s: Sample, ev: pl.DataFrame, facts: dict) -> list[str]:
    where = f"format {s.format} sample {s.text[:60]!r}"
    if len(ev) == 0:
        return [f"{where}: produced no event"]
    first = ev.row(0, named=True)
    want = f"{s.format}.{s.pattern}"
    if first["pattern"] != want:
        return [f"{where}: claimed by {first['pattern'] or 'nothing (raw)'}, expected {want}"]
    if "\n" in s.text and first["end_line"] - first["line"] != s.text.count("\n"):
        return [f"{where}: block took {first['end_line'] - first['line'] + 1} lines, expected the whole sample"]
    problems = []
    fmt = cat.format(s.format)
    pat = next((p for p in fmt.patterns if p.id == s.pattern), None)
    caps = {}
    if pat is not None and not s.envelope:
        m = pat.compiled.search(s.text)
        caps = {k: v for k, v in (m.groupdict() if m else {}).items() if v is not None}
    for k, v in s.expect.items():
        if k in first and k != "raw":
            got = first[k]
            got = None if got is None else (got.strftime("%Y-%m-%dT%H:%M:%S.%f") if k == "ts" else str(got))
        else:
            got = caps.get(k)
        if got != v:
            problems.append(f"{where}: {k} = {got!r}, expected {v!r}")
    if s.kind is not None and first["kind"] != s.kind:
        problems.append(f"{where}: kind = {first['kind']!r}, expected {s.kind!r}")
    for table, expect in s.facts.items():
        got_t = facts.get(table)
        got_t = None if got_t is None else got_t.filter(pl.col("event_id") == first["event_id"])
        if got_t is None or len(got_t) == 0:
            problems.append(f"{where}: no {table} fact, expected {expect}")
            continue
        rows = [{k: (None if v is None else str(v)) for k, v in r.items()} for r in got_t.iter_rows(named=True)]
        for w in (expect if isinstance(expect, list) else [expect]):
            if not any(all(r.get(k) == str(v) for k, v in w.items()) for r in rows):
                problems.append(f"{where}: {table} has no row with {w}; got {rows}")
    return problems


def _run_all(cat: Catalog, samples: list[Sample]) -> list[tuple[Sample, pl.DataFrame, dict]]:
    """Run samples through the pipeline: all plain samples in ONE batch
    (separated by blank lines, which end any block), envelope samples one by
    one (their envelopes are sniffed per file). Returns (sample, its events, facts)."""
    from .ingest import core
    groups: dict[tuple, list[Sample]] = {}
    for s in samples:
        envs = ()
        if s.envelope:
            parser = core.file_parser(cat, 1, "<sample>", {})
            parser.feed(s.text.encode(), True)
            parser.next_batch()   # the envelopes are sniffed on the first batch
            envs = tuple(parser.file_envelopes()) or ("-",)
        groups.setdefault(envs, []).append(s)
    out = []
    for envs, group in groups.items():
        starts, text, line = [], [], 1
        for s in group:
            starts.append(line)
            text.append(s.text)
            line += s.text.count("\n") + 2
        res = _run_group(cat, "\n\n".join(text), envs)
        for s, first in zip(group, starts):
            last = first + s.text.count("\n")
            out.append((s, res.events.filter(pl.col("line").is_between(first, last)), res.facts))
    return out


def _run_group(cat: Catalog, text: str, env_names: tuple) -> TextResult:
    if not env_names:
        return run_text(cat, text, envelopes=False)
    from .ingest import core
    envs = core.line_envelopes(cat) + [n for n in env_names if n != "-"]
    return TextResult(*core.parse_text(cat, text, envelopes=envs))


def check_sample(cat: Catalog, s: Sample) -> list[str]:
    (_, ev, facts), = _run_all(cat, [s])
    return _check_events(cat, s, ev, facts)


def check_catalog(cat: Catalog) -> list[str]:
    problems = []
    fired: set[tuple[str, int]] = set()
    samples = [s for f in cat.formats for s in f.samples]
    for s, ev, facts in _run_all(cat, samples):
        problems += _check_events(cat, s, ev, facts)
        if len(ev) == 0:
            continue
        first = ev.row(0, named=True)
        for r in cat.format(s.format).rules:
            if r.kind == first["kind"] and (r.on is None or first["pattern"] == f"{s.format}.{r.on}") \
                    and r.compiled.search(first[r.field] or ""):
                fired.add((s.format, r.index))
    for f in cat.formats:
        for r in f.rules:
            if (f.name, r.index) not in fired:
                problems.append(f"format {f.name} rule #{r.index} ({r.kind}: {r.regex!r}) "
                                "is exercised by no sample: add one")
    return problems
