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
        if not m.get("name") or not lits or not all(isinstance(x, str) and x for x in lits):
            raise MarksError(f"{path}: mark #{i + 1} needs a name and non-empty literals")
        out.append(Mark(m["name"], i, lits))
    if len(out) > 31:
        raise MarksError(f"{path}: {len(out)} marks; the column holds 31")
    return tuple(out)


def spec() -> list[list[str]]:
    """What the engine reads (crates/engine/src/marks.rs): the literals of each bit."""
    return [list(m.literals) for m in load()]


@lru_cache(maxsize=1)
def fingerprint() -> str:
    return hashlib.sha256(json.dumps([[m.name, *m.literals] for m in load()]).encode()).hexdigest()[:16]


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
