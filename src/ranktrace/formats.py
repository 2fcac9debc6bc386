"""Load, validate and order the declarative log formats of parsers/.

A format file (parsers/formats/*.toml) declares line patterns, multi-line
blocks, typed facts, classification rules and SAMPLES. An envelope file
(parsers/envelopes/*.toml) declares a prefix peeled off lines before the
formats see them. parsers/kinds.toml is the catalogue of event kinds.

The loader refuses a format without samples, a sample that its declared
pattern does not claim (after precedence), and a rule no sample exercises.
Precedence between patterns is derived from the samples: a pattern that
matches another pattern's samples while that one does not match its own is
more generic and goes after it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import re as pyregex

from .resources import data_dir

# Capture names that fill columns of the events table. Any other capture is
# kept for facts only.
IDENTITY_COLUMNS = (
    "host", "rank", "local_rank", "task", "pid", "tid", "job_id", "step_id",
    "pod", "namespace", "container", "gpu", "program",
)
INT_IDENTITY = ("rank", "local_rank", "task", "pid", "tid")
# The columns an identity token may fill (parsers/identity.toml), and the fact
# table that records each fill (which token, on which event): where a value came from.
TOKEN_COLUMNS = ("rank", "local_rank", "task", "host", "pid", "pod", "namespace", "container", "gpu",
                 "job_id", "step_id")
FOUND_TABLE = "identity_found"
RESERVED = IDENTITY_COLUMNS + ("ts", "level", "message")
SEVERITIES = ("debug", "info", "notice", "warning", "error", "critical")
ROLES = ("cause", "symptom", "lifecycle", "info")
TAXONOMY = (
    "none", "exception", "crash", "killed", "oom", "gpu_oom", "gpu_fault",
    "cuda_error", "hang", "node_failure", "rendezvous_timeout", "network_error",
    "desync", "time_limit", "cancelled", "scheduling", "control_plane", "unknown",
)
FACT_TYPES = ("str", "int", "float")
ZONES = ("utc", "offset", "naive")

FORMATS_ENV = "RANKTRACE_FORMATS"


class FormatError(ValueError):
    """A format or envelope file is invalid; the message names file and problem."""


@dataclass(frozen=True)
class TimeSpec:
    field: str
    layout: str              # polars/chrono strftime layout of the captured text
    zone: str = "naive"      # utc | offset | naive
    year: str = "given"      # given | infer (the text carries no year)
    clock: str = "own"       # own | collector: an envelope's time written by a program that gathers other
                             # processes' lines (mpirun --timestamp-output), on its host's clock


@dataclass(frozen=True)
class Pattern:
    format: str
    id: str
    regex: str
    prefilter: str | None = None
    ts: TimeSpec | None = None
    kind: str | None = None        # default event kind of lines of this pattern
    carry: tuple[str, ...] = ()    # identity captures forward-filled in the file
    end_carry: tuple[str, ...] = ()  # carried identity that stops at this line (a new section)
    program: str | None = None
    stream: tuple[str, ...] = ()   # captured identity that holds for the line's whole stream (stream.rs)

    @property
    def key(self) -> str:
        return f"{self.format}.{self.id}"

    @cached_property
    def compiled(self):
        return pyregex.compile(self.regex)


@dataclass(frozen=True)
class IdentityToken:
    """A token of parsers/identity.toml: matched anywhere in a line's message, its captures
    named like TOKEN_COLUMNS fill the columns the line left empty."""
    id: str
    regex: str
    source: str
    stream: tuple[str, ...] = ()   # columns naming the line's emitter: carried over its stream
    blocks: tuple[str, ...] = ()   # columns no later token fills once this one matched
    links: tuple[str, ...] = ()    # columns kept in identity_found only (the line was written elsewhere)
    samples: tuple[tuple[str, dict], ...] = ()   # (text, the identity captures expected; {}: no match)

    @cached_property
    def compiled(self):
        return pyregex.compile(self.regex)

    @cached_property
    def columns(self) -> tuple[str, ...]:
        return tuple(c for c in self.compiled.groupindex if c in TOKEN_COLUMNS)

    def captures(self, text: str) -> dict[str, str]:
        """The identity captures of the token's first match in `text` ({}: none)."""
        m = self.compiled.search(text)
        return {} if m is None else {c: m.group(c) for c in self.columns if m.group(c) is not None}


@dataclass(frozen=True)
class Block:
    """Consecutive lines of one stream that form one event (a traceback)."""
    format: str
    id: str
    start: str
    cont: str
    end: str | None = None
    message: str = "last"          # which line becomes the message: first | last
    max_lines: int = 400
    kind: str | None = None
    program: str | None = None
    ts: TimeSpec | None = None     # the block's time: ts.field names a group of ts_regex
    ts_regex: str | None = None    # searched in the block's text (first match)

    @property
    def key(self) -> str:
        return f"{self.format}.{self.id}"


@dataclass(frozen=True)
class Fact:
    format: str
    table: str
    regex: str
    on: str | None = None            # pattern/block id it applies to (None: any of the format)
    types: dict = field(default_factory=dict)
    identity: tuple[str, ...] = ()   # captures that also fill event identity
    multi: bool = False              # every match in a block, not just the first
    field: str = "message"           # the column it reads: message, or an envelope's capture

    @cached_property
    def compiled(self):
        return pyregex.compile(self.regex, pyregex.MULTILINE)

    @cached_property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.compiled.groupindex)


@dataclass(frozen=True)
class Rule:
    format: str
    index: int
    regex: str
    kind: str
    on: str | None = None
    field: str = "message"           # message | raw
    severity: str | None = None
    role: str | None = None

    @cached_property
    def compiled(self):
        return pyregex.compile(self.regex)


@dataclass(frozen=True)
class Sample:
    format: str
    text: str
    pattern: str                      # pattern or block id expected to claim it
    expect: dict
    kind: str | None = None
    facts: dict = field(default_factory=dict)
    envelope: bool = False            # text carries envelopes: peel first


@dataclass
class Format:
    name: str
    path: Path
    description: str
    provenance: str
    levels: dict
    patterns: list[Pattern]
    blocks: list[Block]
    facts: list[Fact]
    rules: list[Rule]
    samples: list[Sample]


@dataclass(frozen=True)
class Envelope:
    name: str
    path: Path
    regex: str                        # must have a `rest` group
    scope: str                        # line | file
    ts: TimeSpec | None
    prefilter: str | None
    samples: tuple[tuple[str, dict], ...]
    order: int = 100
    deny: tuple[str, ...] = ()        # bodies starting with these are never peeled
    weak: tuple[str, ...] = ()        # identity it gives only when the line itself says nothing
    facts: tuple[Fact, ...] = ()      # facts from its captures (a tqdm bar glued before a line)

    @property
    def kept(self) -> dict[str, str]:
        """Captures its facts read -> the batch column that keeps them."""
        return {f.field.removeprefix(envelope_column(self.name, "")): f.field for f in self.facts}

    @cached_property
    def compiled(self):
        return pyregex.compile(self.regex)


@dataclass(frozen=True)
class KindInfo:
    name: str
    role: str
    severity: str
    failure: str | None
    description: str


@dataclass
class Catalog:
    formats: list[Format]
    envelopes: list[Envelope]
    kinds: dict[str, KindInfo]
    patterns: list[Pattern]          # in precedence order
    blocks: list[Block]
    facts: list[Fact]
    rules: list[Rule]
    warnings: list[str] = field(default_factory=list)
    tokens: list[IdentityToken] = field(default_factory=list)   # parsers/identity.toml, in priority order
    rejects: list[tuple[str, str]] = field(default_factory=list)   # (column, regex of values naming nobody)

    def format(self, name: str) -> Format:
        for f in self.formats:
            if f.name == name:
                return f
        raise KeyError(name)

    @cached_property
    def line_tests(self) -> tuple[tuple[str, str | None], ...]:
        """(regex, prefilter) of what ingest tries on whole lines: patterns,
        envelopes, block starts."""
        out = [(p.regex, p.prefilter) for p in self.patterns] + [(e.regex, e.prefilter) for e in self.envelopes]
        out += [(b.start, None) for b in self.blocks]
        return tuple(dict.fromkeys(out))

    @cached_property
    def message_tests(self) -> tuple[tuple[str, str | None], ...]:
        """(regex, None) of the rules and facts that read an event's message."""
        out = [(r.regex, None) for r in self.rules if r.field == "message"]
        out += [(f.regex, None) for f in self.facts if f.field == "message"]
        return tuple(dict.fromkeys(out))

    @cached_property
    def fact_tables(self) -> dict[str, dict[str, str]]:
        """table -> {column: type}; types agree across formats (checked at load)."""
        out: dict[str, dict[str, str]] = {}
        for fact in self.facts:
            cols = out.setdefault(fact.table, {})
            for c in fact.columns:
                cols.setdefault(c, fact.types.get(c, "str"))
        if self.tokens or any(p.stream for p in self.patterns):
            # token: the identity token, or 'stream:<pattern or token>' for the line that names a
            # stream's value; stream: 'file' / 'envelope' (the carried value's scope), NULL for a token
            out[FOUND_TABLE] = {"token": "str", "stream": "str",
                                **{c: ("int" if c in INT_IDENTITY else "str") for c in TOKEN_COLUMNS}}
        return out

    @cached_property
    def levels(self) -> dict[str, dict[str, str]]:
        return {f.name: f.levels for f in self.formats}

    def spec_guard(self) -> tuple:
        """What a spec made for this catalog was made from (the lists, by
        identity and length): a spec kept with the catalog (precomputed) is
        used only while this is unchanged."""
        parts = (self.formats, self.envelopes, self.kinds, self.patterns, self.blocks, self.facts, self.rules,
                 self.tokens, self.rejects)
        return tuple((id(x), len(x)) for x in parts)


def _req(doc: dict, key: str, where: str):
    if key not in doc:
        raise FormatError(f"{where}: missing required key {key!r}")
    return doc[key]


def _compile_check(rx: str, where: str, flags: int = 0):
    """The compiled regex (kept by the item it is of: compiling ~600 regexes
    is most of a load, and re's cache holds 512). `flags` (MULTILINE, for
    facts) change how a regex matches, never whether it compiles."""
    try:
        compiled = pyregex.compile(rx, flags)
    except pyregex.error as exc:
        raise FormatError(f"{where}: invalid regex: {exc}") from None
    # The portable subset: no look-around, no back-references (RE2 and Rust
    # regex refuse them).
    for bad in ("(?=", "(?!", "(?<=", "(?<!", "\\1", "(?P="):
        if bad in rx:
            raise FormatError(f"{where}: {bad!r} is not in the portable regex subset (RE2/Rust)")
    return compiled


def _keep(item, compiled):
    """`item` with its `compiled` (a cached_property) already computed."""
    item.__dict__["compiled"] = compiled
    return item


def _time_spec(doc: dict | None, where: str) -> TimeSpec | None:
    if doc is None:
        return None
    spec = TimeSpec(
        field=doc.get("field", "ts"),
        layout=_req(doc, "layout", where),
        zone=doc.get("zone", "naive"),
        year=doc.get("year", "given"),
        clock=doc.get("clock", "own"),
    )
    if spec.clock not in ("own", "collector"):
        raise FormatError(f"{where}: ts.clock must be 'own' or 'collector', not {spec.clock!r}")
    if spec.clock == "collector" and spec.year == "infer":
        raise FormatError(f"{where}: ts.clock = 'collector' needs a time with its year (ts.year = 'given')")
    if spec.zone not in ZONES:
        raise FormatError(f"{where}: ts.zone must be one of {ZONES}, not {spec.zone!r}")
    if spec.year not in ("given", "infer"):
        raise FormatError(f"{where}: ts.year must be 'given' or 'infer'")
    return spec


def load_kinds(path: Path) -> dict[str, KindInfo]:
    doc = tomllib.loads(path.read_text())
    kinds = {}
    for name, k in doc.get("kind", {}).items():
        where = f"{path}: kind {name}"
        role = k.get("role", "info")
        sev = k.get("severity", "info")
        failure = k.get("failure")
        if role not in ROLES:
            raise FormatError(f"{where}: role must be one of {ROLES}")
        if sev not in SEVERITIES:
            raise FormatError(f"{where}: severity must be one of {SEVERITIES}")
        if failure is not None and failure not in TAXONOMY:
            raise FormatError(f"{where}: failure {failure!r} is not in the taxonomy {TAXONOMY}")
        kinds[name] = KindInfo(name, role, sev, failure, k.get("description", ""))
    return kinds


def load_format(path: Path) -> Format:
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise FormatError(f"{path}: not valid TOML: {exc}") from None
    name = _req(doc, "name", str(path))
    where = f"{path} (format {name})"
    program = doc.get("program")
    patterns = []
    for i, p in enumerate(doc.get("pattern", [])):
        pid = _req(p, "id", f"{where} pattern #{i}")
        rx = _req(p, "regex", f"{where} pattern {pid}")
        compiled = _compile_check(rx, f"{where} pattern {pid}")
        patterns.append(_keep(Pattern(
            format=name, id=pid, regex=rx, prefilter=p.get("prefilter"),
            ts=_time_spec(p.get("ts"), f"{where} pattern {pid}"),
            kind=p.get("kind"), carry=tuple(p.get("carry", ())), end_carry=tuple(p.get("end_carry", ())),
            program=p.get("program", program), stream=tuple(p.get("stream", ())),
        ), compiled))
        for c in (*patterns[-1].carry, *patterns[-1].end_carry):
            if c not in IDENTITY_COLUMNS:
                raise FormatError(f"{where} pattern {pid}: carry/end_carry {c!r} is not one of {IDENTITY_COLUMNS}")
        for c in patterns[-1].stream:
            if c not in TOKEN_COLUMNS or c not in compiled.groupindex:
                raise FormatError(f"{where} pattern {pid}: stream {c!r} must be a capture and one of {TOKEN_COLUMNS}")
    blocks = []
    for i, b in enumerate(doc.get("block", [])):
        bid = _req(b, "id", f"{where} block #{i}")
        bw = f"{where} block {bid}"
        for key in ("start", "continue"):
            _compile_check(_req(b, key, bw), bw)
        if b.get("end"):
            _compile_check(b["end"], bw)
        ts_doc = dict(b["ts"]) if "ts" in b else None
        ts_regex = ts_doc.pop("regex", None) if ts_doc else None
        if ts_doc and not ts_regex:
            raise FormatError(f"{bw}: a block's ts needs a regex (searched in the block's text)")
        if ts_regex:
            if ts_doc.get("field", "ts") not in _compile_check(ts_regex, bw).groupindex:
                raise FormatError(f"{bw}: ts.regex has no (?P<{ts_doc.get('field', 'ts')}>...) group")
        blocks.append(Block(
            format=name, id=bid, start=b["start"], cont=b["continue"], end=b.get("end"),
            message=b.get("message", "last"), max_lines=int(b.get("max_lines", 400)),
            kind=b.get("kind"), program=b.get("program", program),
            ts=_time_spec(ts_doc, bw), ts_regex=ts_regex,
        ))
    ids = [p.id for p in patterns] + [b.id for b in blocks]
    if len(set(ids)) != len(ids):
        raise FormatError(f"{where}: pattern/block ids must be unique: {ids}")
    facts = _load_facts(doc, name, where, ids=ids)
    rules = []
    for i, r in enumerate(doc.get("rule", [])):
        rw = f"{where} rule #{i}"
        rx = _req(r, "regex", rw)
        compiled = _compile_check(rx, rw)
        rule = _keep(Rule(format=name, index=i, regex=rx, kind=_req(r, "kind", rw), on=r.get("on"),
                          field=r.get("field", "message"), severity=r.get("severity"), role=r.get("role")),
                     compiled)
        if rule.on is not None and rule.on not in ids:
            raise FormatError(f"{rw}: on={rule.on!r} names no pattern or block of this format")
        if rule.field not in ("message", "raw"):
            raise FormatError(f"{rw}: field must be 'message' or 'raw'")
        if rule.severity is not None and rule.severity not in SEVERITIES:
            raise FormatError(f"{rw}: severity must be one of {SEVERITIES}")
        if rule.role is not None and rule.role not in ROLES:
            raise FormatError(f"{rw}: role must be one of {ROLES}")
        rules.append(rule)
    samples = []
    for i, s in enumerate(doc.get("sample", [])):
        sw = f"{where} sample #{i}"
        text = _req(s, "text", sw)
        pid = s.get("pattern", patterns[0].id if len(ids) == 1 and patterns else None)
        if pid is None or pid not in ids:
            raise FormatError(f"{sw}: pattern={pid!r} must name a pattern or block of this format")
        samples.append(Sample(
            format=name, text=text.rstrip("\n"), pattern=pid,
            expect={k: str(v) for k, v in s.get("expect", {}).items()},
            kind=s.get("kind"), facts=s.get("facts", {}), envelope=bool(s.get("envelope", False)),
        ))
    if not samples:
        raise FormatError(f"{where}: a format must have samples (at least one [[sample]])")
    levels = {str(k): str(v) for k, v in doc.get("levels", {}).items()}
    for lv, sev in levels.items():
        if sev not in SEVERITIES:
            raise FormatError(f"{where}: level {lv!r} maps to {sev!r}, not one of {SEVERITIES}")
    return Format(
        name=name, path=path, description=doc.get("description", ""),
        provenance=doc.get("provenance", ""), levels=levels, patterns=patterns,
        blocks=blocks, facts=facts, rules=rules, samples=samples,
    )


IDENTITY_FILE = "identity.toml"


def load_identity(path: Path) -> tuple[list[IdentityToken], list[tuple[str, str]]]:
    """The identity tokens and rejects of an identity.toml. Refused: a token without a
    source or samples, a regex outside the portable subset or capturing no TOKEN_COLUMNS
    (unless it blocks some), stream/blocks naming other columns, a sample whose captures
    are not the ones it expects."""
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise FormatError(f"{path}: not valid TOML: {exc}") from None
    tokens: list[IdentityToken] = []
    for i, t in enumerate(doc.get("token", [])):
        tid = _req(t, "id", f"{path} token #{i}")
        where = f"{path} (identity token {tid})"
        compiled = _compile_check(_req(t, "regex", where), where)
        tok = _keep(IdentityToken(
            id=tid, regex=t["regex"], source=_req(t, "source", where),
            stream=tuple(t.get("stream", ())), blocks=tuple(t.get("blocks", ())), links=tuple(t.get("links", ())),
            samples=tuple((s["text"], {k: str(v) for k, v in s.get("expect", {}).items()})
                          for s in t.get("sample", [])),
        ), compiled)
        if any(x.id == tid for x in tokens):
            raise FormatError(f"{where}: token ids must be unique")
        if not tok.columns and not tok.blocks:
            raise FormatError(f"{where}: the regex captures none of {TOKEN_COLUMNS} (name a group like one)")
        for c in (*tok.stream, *tok.blocks, *tok.links):
            if c not in TOKEN_COLUMNS:
                raise FormatError(f"{where}: stream/blocks/links {c!r} is not one of {TOKEN_COLUMNS}")
        for c in (*tok.stream, *tok.links):
            if c not in tok.columns:
                raise FormatError(f"{where}: stream/links {c!r} is not a capture of the regex")
        if set(tok.stream) & set(tok.links):
            raise FormatError(f"{where}: a column is either carried over the stream or a link, not both")
        if not any(expect for _, expect in tok.samples) and not (tok.blocks and tok.samples):
            raise FormatError(f"{where}: a token must have samples (at least one [[token.sample]] that it matches)")
        for text, expect in tok.samples:
            got = tok.captures(text)
            if got != expect:
                raise FormatError(f"{where}: sample {text!r} gives {got}, expected {expect}")
        tokens.append(tok)
    rejects = []
    for i, r in enumerate(doc.get("reject", [])):
        where = f"{path} reject #{i}"
        col = _req(r, "column", where)
        if col not in TOKEN_COLUMNS:
            raise FormatError(f"{where}: column {col!r} is not one of {TOKEN_COLUMNS}")
        _compile_check(_req(r, "regex", where), where)
        rejects.append((col, r["regex"]))
    return tokens, rejects


def envelope_column(envelope: str, capture: str) -> str:
    """The batch column that keeps an envelope's capture for its facts."""
    return f"_env_{envelope}_{capture}"


def _load_facts(doc: dict, owner: str, where: str, *, ids: list | None = None,
                captures: set | None = None) -> list[Fact]:
    """[[fact]] tables of a format (read the message; `on` a pattern or block
    in `ids`) or of an envelope (`field` = one of its `captures`)."""
    facts = []
    for i, f in enumerate(doc.get("fact", [])):
        fw = f"{where} fact #{i}"
        rx = _req(f, "regex", fw)
        compiled = _compile_check(rx, fw, pyregex.MULTILINE)   # Fact.compiled
        column = "message"
        if captures is not None:
            cap = _req(f, "field", fw)
            if cap not in captures or cap == "rest":
                raise FormatError(f"{fw}: field {cap!r} must name a capture of the envelope (not rest)")
            column = envelope_column(owner, cap)
        fact = _keep(Fact(
            format=owner, table=_req(f, "table", fw), regex=rx, on=f.get("on"),
            types=dict(f.get("types", {})), identity=tuple(f.get("identity", ())),
            multi=bool(f.get("multi", False)), field=column,
        ), compiled)
        for c, t in fact.types.items():
            if t not in FACT_TYPES:
                raise FormatError(f"{fw}: type of {c} must be one of {FACT_TYPES}")
            if c not in fact.columns:
                raise FormatError(f"{fw}: typed column {c!r} is not a capture of the regex")
        for c in fact.identity:
            if c not in IDENTITY_COLUMNS or c not in fact.columns:
                raise FormatError(f"{fw}: identity {c!r} must be a capture and one of {IDENTITY_COLUMNS}")
        if fact.on is not None and (ids is None or fact.on not in ids):
            raise FormatError(f"{fw}: on={fact.on!r} names no pattern or block of this format")
        if captures is not None and (fact.multi or fact.identity):
            raise FormatError(f"{fw}: an envelope's fact has no multi or identity")
        facts.append(fact)
    return facts


def load_envelope(path: Path) -> Envelope:
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise FormatError(f"{path}: not valid TOML: {exc}") from None
    name = _req(doc, "name", str(path))
    where = f"{path} (envelope {name})"
    rx = _req(doc, "regex", where)
    compiled = _compile_check(rx, where)
    if "rest" not in compiled.groupindex:
        raise FormatError(f"{where}: an envelope regex needs a (?P<rest>...) group")
    scope = doc.get("scope", "line")
    if scope not in ("line", "file"):
        raise FormatError(f"{where}: scope must be 'line' or 'file'")
    samples = tuple((s["text"], {k: str(v) for k, v in s.get("expect", {}).items()})
                    for s in doc.get("sample", []))
    if not samples:
        raise FormatError(f"{where}: an envelope must have samples")
    env = Envelope(name=name, path=path, regex=rx, scope=scope,
                   ts=_time_spec(doc.get("ts"), where), prefilter=doc.get("prefilter"),
                   samples=samples, order=int(doc.get("order", 100)),
                   deny=tuple(doc.get("deny", ())), weak=tuple(doc.get("weak", ())),
                   facts=tuple(_load_facts(doc, name, where, captures=set(compiled.groupindex))))
    _keep(env, compiled)
    for c in env.weak:
        if c not in IDENTITY_COLUMNS:
            raise FormatError(f"{where}: weak {c!r} is not one of {IDENTITY_COLUMNS}")
    for text, expect in samples:
        m = env.compiled.match(text)
        if not m:
            raise FormatError(f"{where}: sample does not match: {text!r}")
        got = {k: v for k, v in m.groupdict().items() if v is not None}
        for k, v in expect.items():
            if got.get(k) != v:
                raise FormatError(f"{where}: sample {text!r}: {k} = {got.get(k)!r}, expected {v!r}")
    return env


def _own_samples(patterns: list[Pattern], samples: list[Sample]) -> dict[str, list[str]]:
    """pattern key -> the first lines of its own (non-envelope) samples."""
    own: dict[str, list[str]] = {p.key: [] for p in patterns}
    for s in samples:
        k = f"{s.format}.{s.pattern}"
        if k in own and not s.envelope:
            own[k].append(s.text.split("\n")[0])
    return own


def _eats(patterns: list[Pattern], own: dict[str, list[str]],
          known: tuple[frozenset, frozenset] | None = None) -> set[tuple[str, str]]:
    """{(p, q): q matches one of p's own samples}, by key. `known` (keys,
    pairs) is this relation already computed among the patterns `keys`
    (the bundled catalog's, at build time): a pair of those is looked up,
    not tried. A pattern's own samples are those of its format, so the
    relation between two patterns does not depend on the other formats."""
    keys, pairs = known or (frozenset(), frozenset())
    out: set[tuple[str, str]] = set()
    for p in patterns:
        texts = own[p.key]
        if not texts:
            continue
        for q in patterns:
            if q is p:
                continue
            if p.key in keys and q.key in keys:
                if (p.key, q.key) in pairs:
                    out.add((p.key, q.key))
                continue
            search = q.compiled.search
            if any(search(t) for t in texts):
                out.add((p.key, q.key))
    return out


def _precedence(patterns: list[Pattern], samples: list[Sample],
                known: tuple[frozenset, frozenset] | None = None) -> tuple[list[Pattern], list[str]]:
    """Order patterns so that specific ones come before generic ones.

    P must precede Q when Q matches a sample of P but P matches none of Q's
    samples (Q is the more generic). Among patterns free to go in either
    order, those with a required literal go first (a literal test is cheap,
    and the lines they claim are then never tried against the broad
    patterns without one), then file order (format name, then position):
    the order is deterministic."""
    by_key = {p.key: p for p in patterns}
    eats = _eats(patterns, _own_samples(patterns, samples), known)
    before: dict[str, set[str]] = {p.key: set() for p in patterns}  # q -> {p that must precede q}
    warnings = []
    for p in patterns:
        for q in patterns:
            if p is q:
                continue
            q_eats_p = (p.key, q.key) in eats
            p_eats_q = (q.key, p.key) in eats
            if q_eats_p and not p_eats_q:
                before[q.key].add(p.key)
            elif q_eats_p and p_eats_q and p.key < q.key:
                warnings.append(f"patterns {p.key} and {q.key} match each other's samples; "
                                "file order decides between them")
    # Kahn's algorithm with a stable tie-break on the original position.
    from .ingest.dispatch import required_literals   # late: dispatch is part of the engine
    pos = {p.key: (not (p.prefilter or required_literals(p.regex)), i) for i, p in enumerate(patterns)}
    order: list[str] = []
    remaining = dict(before)
    while remaining:
        ready = sorted((k for k, deps in remaining.items() if not deps - set(order)), key=pos.get)
        if not ready:  # a cycle: break it at the earliest pattern, and say so
            k = min(remaining, key=pos.get)
            warnings.append(f"precedence cycle around {k}; file order decides")
            ready = [k]
        order.append(ready[0])
        del remaining[ready[0]]
    return [by_key[k] for k in order], warnings


def format_dirs(extra: list[str | Path] | None = None) -> list[Path]:
    dirs = [data_dir("parsers")]
    env = os.environ.get(FORMATS_ENV)
    if env:
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs += [Path(p) for p in (extra or [])]
    return dirs


# Files of the catalog directory that are neither formats nor envelopes (read by their own modules).
NOT_FORMATS = ("path_hints.toml", "marks.toml", "identity.toml")


def _dir_files(d: Path) -> tuple[list[Path], list[Path], list[Path], list[Path]]:
    """The files load_catalog reads from one directory, in its order: kinds,
    envelopes, formats, and the .toml files directly in it (each either a
    format, an envelope, or skipped: kinds*, NOT_FORMATS)."""
    return (sorted(d.glob("kinds*.toml")), sorted(d.glob("envelopes/*.toml")),
            sorted(d.glob("formats/*.toml")), sorted(d.glob("*.toml")))


def _load_dir(d: Path) -> tuple[list[Format], list[Envelope], dict[str, KindInfo], tuple[list, list]]:
    """The formats, envelopes (in file order), kinds and identity (tokens, rejects) of one directory."""
    formats: list[Format] = []
    envelopes: list[Envelope] = []
    kinds: dict[str, KindInfo] = {}
    kind_files, envelope_files, format_files, top = _dir_files(d)
    for kpath in kind_files:
        kinds.update(load_kinds(kpath))
    for path in envelope_files:
        envelopes.append(load_envelope(path))
    for path in format_files:
        formats.append(load_format(path))
    for path in top:
        if path.name.startswith("kinds") or path.name in NOT_FORMATS:
            continue
        doc = tomllib.loads(path.read_text())
        (envelopes.append(load_envelope(path)) if doc.get("envelope")
         else formats.append(load_format(path)))
    identity = load_identity(d / IDENTITY_FILE) if (d / IDENTITY_FILE).is_file() else ([], [])
    return formats, envelopes, kinds, identity


def _load_dirs(dirs: list[Path], pre: dict | None = None
               ) -> tuple[list[Format], list[Envelope], dict[str, KindInfo], Catalog]:
    """Load and check the directories `dirs` (the first from `pre`, the
    precomputed load of it, if given): formats, envelopes (sorted, as in the
    catalog), kinds, and the catalog they make."""
    formats: list[Format] = []
    envelopes: list[Envelope] = []
    kinds: dict[str, KindInfo] = {}
    tokens: list[IdentityToken] = []
    rejects: list[tuple[str, str]] = []
    for n, d in enumerate(dirs):
        if not d.is_dir():
            raise FormatError(f"{d}: formats directory does not exist")
        if n == 0 and pre is not None:
            got = pre["formats"], pre["envelopes"], pre["kinds"], pre.get("identity", ([], []))
        else:
            got = _load_dir(d)
        formats += got[0]
        envelopes += got[1]
        kinds.update(got[2])
        tokens += got[3][0]
        rejects += got[3][1]
    ids = [t.id for t in tokens]
    if len(set(ids)) != len(ids):
        raise FormatError(f"duplicate identity token ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    names = [f.name for f in formats]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise FormatError(f"duplicate format names: {sorted(dup)} (a user format must use a new name)")
    for f in formats:
        for item in (*f.patterns, *f.blocks, *f.rules):
            if item.kind is not None and item.kind not in kinds:
                raise FormatError(f"{f.path}: kind {item.kind!r} is not in parsers/kinds.toml")
    cat = _assemble(formats, envelopes, kinds, known=(pre or {}).get("eats"))
    cat.tokens, cat.rejects = tokens, rejects
    return formats, envelopes, kinds, cat


def load_catalog(extra_dirs: list[str | Path] | None = None, *, check_samples: bool | str = True) -> Catalog:
    """Load every format, envelope and kind. Raises FormatError on a bad file.

    check_samples: True refuses the catalog when any sample fails; "drop"
    leaves out each format whose samples fail (named in `warnings`) and goes
    on with the rest; False skips the sample run (tests run it themselves).
    The samples run only when a user directory adds formats: the built-in
    ones are proven by the test suite (tests/formats/test_samples.py) and by
    `ranktrace formats check`, and running them again costs seconds on
    every ingest.

    User directories may hold formats/*.toml and envelopes/*.toml, or the
    .toml files directly (an envelope file says `envelope = true`)."""
    dirs = format_dirs(extra_dirs)
    # The bundled directory (always the first) comes validated from the
    # build when its files and this loader are the ones the build validated
    # (see precomputed); a user directory is always loaded and checked here.
    pre = precomputed(dirs[0])
    if pre is not None and len(dirs) == 1:
        return pre["catalog"]
    formats, envelopes, kinds, cat = _load_dirs(dirs, pre)
    if check_samples and len(dirs) > 1:
        from .samples import check_catalog  # late: samples uses the pipeline
        problems = check_catalog(cat)
        if problems and check_samples == "drop":
            bad = sorted({p.split()[1] for p in problems if p.startswith("format ")})
            tokens, rejects = cat.tokens, cat.rejects
            cat = _assemble([f for f in formats if f.name not in bad], envelopes, kinds,
                            known=(pre or {}).get("eats"))
            cat.tokens, cat.rejects = tokens, rejects
            cat.warnings += [f"format {name} left out: its samples fail "
                             f"(`ranktrace formats check` says why)" for name in bad]
        elif problems:
            raise FormatError("format samples failed:\n  " + "\n  ".join(problems))
    return cat


# ---------------------------------------------------------------- the bundled catalog, validated at build

# The build (hatch_build.py) loads the bundled catalog (parsers/) with this
# loader, every check above included, and keeps the result here, beside this
# file: the catalog, the relation between its patterns that precedence is
# derived from, and the engine's spec (ingest/core.py). It is used only when
# its fingerprint is that of the files the loader would read now and of the
# code that reads them (and of this Python, whose `re` the checks use): an
# edited format, envelope or kinds file, or an edited loader, makes it stale,
# and a stale one is ignored (the files are loaded and checked as ever).
# Nothing is written at run time.
PRECOMPUTED = Path(__file__).resolve().with_name("_catalog.pickle")
_MAGIC = b"ranktrace-precomputed-catalog 1\n"
# The code whose output the precomputed catalog is (paths under the package).
_CODE = ("formats.py", "ingest/dispatch.py", "ingest/core.py", "marks.py")


def catalog_fingerprint(d: Path) -> str:
    """sha256 of what the loader reads from directory `d` (names and bytes),
    of the loader's code, and of the Python version."""
    h = hashlib.sha256()
    h.update(f"{sys.implementation.name} {tuple(sys.version_info)}\0".encode())
    pkg = Path(__file__).resolve().parent
    for rel in _CODE:
        h.update(f"{rel}\0".encode() + (pkg / rel).read_bytes() + b"\0")
    for path in sorted({p for group in _dir_files(d) for p in group}):
        h.update(f"{path.relative_to(d).as_posix()}\0".encode() + path.read_bytes() + b"\0")
    return h.hexdigest()


def precomputed(d: Path, artifact: Path | None = None) -> dict | None:
    """The build's load of directory `d` (the bundled one), or None when
    there is none or it is stale: {"catalog", "formats", "envelopes" (file
    order), "kinds", "eats" (keys, pairs: see _eats)}. Fresh objects on
    every call, as a load from the files gives."""
    try:
        data = (artifact or PRECOMPUTED).read_bytes()
        if not data.startswith(_MAGIC):
            return None
        head, _, payload = data[len(_MAGIC):].partition(b"\n")
        if head.decode("ascii") != catalog_fingerprint(d):
            return None
        got = pickle.loads(payload)
    except Exception:   # missing, unreadable or not this loader's: load the files
        return None
    for f in got["formats"]:
        f.path = d / f.path
    for e in got["envelopes"]:
        object.__setattr__(e, "path", d / e.path)
    cat: Catalog = got["catalog"]
    cat.__dict__["_spec_json"] = (got.pop("spec"), cat.spec_guard())
    return got


def write_precomputed(out: Path, d: Path | None = None) -> None:
    """Load directory `d` (default: the bundled parsers/) as load_catalog
    does, and write what precomputed() reads to `out`. Raises FormatError
    when the directory does not load."""
    import json

    from .ingest import core   # the spec: core needs no compiled engine for it
    d = d or data_dir("parsers")
    fingerprint = catalog_fingerprint(d)
    formats, envelopes, kinds, identity = _load_dir(d)
    in_order = list(envelopes)   # _load_dirs sorts the catalog's envelopes: a user's join them later
    formats, _, kinds, cat = _load_dirs([d], {"formats": formats, "envelopes": envelopes, "kinds": kinds,
                                              "identity": identity})
    patterns = [p for f in formats for p in f.patterns]
    eats = _eats(patterns, _own_samples(patterns, [s for f in formats for s in f.samples]))
    spec = json.dumps(core.spec(cat))
    # Regexes are compiled again where used (a compiled pattern does not
    # belong in the file); derived values of the catalog are derived again.
    for item in (*cat.patterns, *cat.rules, *cat.facts, *cat.envelopes, *cat.tokens):
        item.__dict__.pop("compiled", None)
        item.__dict__.pop("columns", None)
    for name in ("line_tests", "message_tests", "fact_tables", "levels", "_spec_json"):
        cat.__dict__.pop(name, None)
    for f in formats:
        f.path = f.path.relative_to(d).as_posix()
    for e in in_order:
        object.__setattr__(e, "path", e.path.relative_to(d).as_posix())
    payload = pickle.dumps({"catalog": cat, "formats": formats, "envelopes": in_order, "kinds": kinds,
                            "identity": (cat.tokens, cat.rejects),
                            "eats": (frozenset(p.key for p in patterns), frozenset(eats)), "spec": spec},
                           protocol=pickle.HIGHEST_PROTOCOL)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(_MAGIC + fingerprint.encode("ascii") + b"\n" + payload)
    os.replace(tmp, out)


def _assemble(formats: list[Format], envelopes: list[Envelope], kinds: dict,
              known: tuple[frozenset, frozenset] | None = None) -> Catalog:
    patterns = [p for f in formats for p in f.patterns]
    samples = [s for f in formats for s in f.samples]
    ordered, warnings = _precedence(patterns, samples, known)
    envelopes.sort(key=lambda e: (e.order, e.name))
    cat = Catalog(
        formats=formats, envelopes=envelopes, kinds=kinds, patterns=ordered,
        blocks=[b for f in formats for b in f.blocks],
        facts=[x for f in formats for x in f.facts] + [x for e in envelopes for x in e.facts],
        rules=[r for f in formats for r in f.rules], warnings=warnings,
    )
    _check_fact_types(cat)
    return cat


def _check_fact_types(cat: Catalog) -> None:
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    for fact in cat.facts:
        for c in fact.columns:
            t = fact.types.get(c, "str")
            prev = seen.setdefault((fact.table, c), (t, fact.format))
            if prev[0] != t:
                raise FormatError(
                    f"fact table {fact.table}.{c} is {prev[0]} in format {prev[1]} "
                    f"but {t} in format {fact.format}; make them agree")
