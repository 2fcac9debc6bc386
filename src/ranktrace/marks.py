"""marks: the prefilter bits the engine sets per line (parsers/marks.toml), and
the SQL macro `has_mark(marks, 'NAME')` that queries test them with.

A store's marks are those of the marks.toml its lines were parsed with: meta
'marks' holds that file's fingerprint, or 'mixed' when an ingest with other
marks added lines to it. has_mark trusts the bits only when the store's
fingerprint is this version's; otherwise it is true (every text test runs, as
before marks existed): slower, never wrong."""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from functools import lru_cache

from .resources import data_dir


@dataclass(frozen=True)
class Mark:
    name: str
    bit: int
    literals: tuple[str, ...]
    # set by a line's class, decided once per class (crates/engine/src/marks.rs: ClassMarks)
    roles: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    kind_prefixes: tuple[str, ...] = ()
    formats: tuple[str, ...] = ()
    # the engine's named line tests (LINE_TESTS)
    lines: tuple[str, ...] = ()


# The line tests the engine knows by name (crates/engine/src/marks.rs, summary.rs), each exactly a
# term of queries/align/hot_events.sql that has no literal.
LINE_TESTS = ("report_entry", "pods_row")


class MarksError(ValueError):
    pass


@lru_cache(maxsize=1)
def load() -> tuple[Mark, ...]:
    """The marks of parsers/marks.toml, bit 0 first."""
    path = data_dir("parsers") / "marks.toml"
    doc = tomllib.loads(path.read_text())
    out = []
    for i, m in enumerate(doc.get("mark", [])):
        lits = tuple(m.get("literals", ()))
        by = {k: tuple(m.get(k, ())) for k in ("roles", "kinds", "kind_prefixes", "formats", "lines")}
        if (not m.get("name") or not (lits or any(by.values()))
                or not all(isinstance(x, str) and x for v in (lits, *by.values()) for x in v)):
            raise MarksError(f"{path}: mark #{i + 1} needs a name and non-empty literals, classes or line tests")
        if set(by["lines"]) - set(LINE_TESTS):
            raise MarksError(f"{path}: mark {m['name']!r}: unknown line tests {sorted(set(by['lines']) - set(LINE_TESTS))} "
                             f"(the engine knows {list(LINE_TESTS)})")
        out.append(Mark(m["name"], i, lits, **by))
    if len(out) > 31:
        raise MarksError(f"{path}: {len(out)} marks; the column holds 31")
    return tuple(out)


def spec() -> list[list[str]]:
    """What the engine reads (crates/engine/src/marks.rs): the literals of each bit."""
    return [list(m.literals) for m in load()]


def class_spec() -> list[dict]:
    """What the engine reads of the marks set by a line's class or a line test (marks.rs: ClassMarks)."""
    return [{"bit": m.bit, "roles": list(m.roles), "kinds": list(m.kinds), "kind_prefixes": list(m.kind_prefixes),
             "formats": list(m.formats), "lines": list(m.lines)}
            for m in load() if m.roles or m.kinds or m.kind_prefixes or m.formats or m.lines]


@lru_cache(maxsize=1)
def fingerprint() -> str:
    return hashlib.sha256(json.dumps([[m.name, *m.literals] for m in load()] + class_spec()).encode()).hexdigest()[:16]


def macro_sql(trusted: bool = True) -> str:
    """A temp macro: whether a line may pass the text tests mark `name` guards
    (NULL marks: a line stored before marks existed, or by hand; it may).
    Not `trusted`: true for every line.

    A mark is tested as `m IN (every value with its bit)`, not as a bit
    test: DuckDB takes an IN list on a column into the scan as a filter, so
    the text tests beside it (and view event_rows' cutting of the message
    out of raw) run on the marked lines only; a bit test stayed a filter
    above them, run after them on every line (0.50 -> 0.03 s for one LIKE
    on the 512 MB store). The engine sets no other bits (marks.rs: `all`)."""
    marks = load()
    if not trusted or not marks:
        return "CREATE OR REPLACE TEMP MACRO has_mark(m, name) AS true"
    values = range(1 << (max(m.bit for m in marks) + 1))
    cases = " ".join(f"WHEN '{m.name}' THEN m IN ({', '.join(str(v) for v in values if v >> m.bit & 1)})"
                     for m in marks)
    return f"CREATE OR REPLACE TEMP MACRO has_mark(m, name) AS (m IS NULL OR CASE name {cases} END)"


def _stored(con) -> str | None:
    from .store import meta_value   # (late: the build makes spec() without duckdb)
    return meta_value(con, "marks")


def define(con, trusted: bool | None = None) -> None:
    """Make has_mark() known to connection `con`; it trusts the stored bits when
    the store's lines were all marked by this version's marks (or `trusted`)."""
    con.execute(macro_sql(_stored(con) == fingerprint() if trusted is None else trusted))


def stamp(con) -> None:
    """Before an ingest or a merge writes lines: an empty store takes this
    version's marks; one marked otherwise (or before marks) becomes 'mixed'."""
    if con.execute("SELECT count(*) FROM files").fetchone()[0] == 0:
        value = fingerprint()
    elif _stored(con) == fingerprint():
        return
    else:
        value = "mixed"
    con.execute("INSERT OR REPLACE INTO meta VALUES ('marks', ?)", [value])
