"""marks: the prefilter bits the engine sets per line (parsers/marks.toml), and
the SQL macro `has_mark(marks, 'NAME')` that queries test them with.

A store's marks are those of the marks.toml its lines were parsed with: meta
'marks' holds that file's fingerprint, or 'mixed' when an ingest with other
marks added lines to it, and meta 'marks_spec' the marks themselves (not for a
mixed store). has_mark trusts the bits whole when the store's fingerprint is
this version's; else, mark by mark, what the stored bits still prove (a mark
that only gained literals: its bit, or a new literal in the line's raw text);
else it is true (every text test runs, as before marks existed): slower, never
wrong."""

from __future__ import annotations

import hashlib
import json
import re
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


def spec_json() -> str:
    """This version's marks as a store keeps them (meta 'marks_spec'): what a later version needs to
    know which lines each bit was set on."""
    return json.dumps([{"name": m.name, "bit": m.bit, "literals": list(m.literals), "roles": list(m.roles),
                        "kinds": list(m.kinds), "kind_prefixes": list(m.kind_prefixes), "formats": list(m.formats),
                        "lines": list(m.lines)} for m in load()])


def _re2_literal(text: str) -> str:
    return re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", text)


def _new_literals(m: Mark, old: dict) -> list[str]:
    """The literals of mark `m` that no literal of its stored spec `old` is part of (a line holding one
    that is part of it had the bit already)."""
    return [lit for lit in m.literals if not any(o.lower() in lit.lower() for o in old["literals"])]


def _literal_test(literals: list[str]) -> str:
    """SQL: whether `raw` holds one of `literals`, ASCII case-folded (as the engine compares them)."""
    pattern = "(?i)(?:" + "|".join(_re2_literal(lit) for lit in literals) + ")"
    return "regexp_matches(raw, '" + pattern.replace("'", "''") + "')"


def _still_proven(m: Mark, old: dict | None, top: int, added: list[int] | None = None) -> str | None:
    """SQL: mark `m` of this version from a store's bit `old` (its stored spec), over the line's marks `m`;
    None when the stored bit proves nothing of it. The bit was set on the lines that hold one of its
    literals (ASCII case-folded), on every non-ASCII line, and on those of its classes and line tests
    (`top`: the highest bit of any stored mark). It covers this version's mark when this version's classes
    and line tests are among those (a kind prefix within one of them); the lines of a literal it gained
    are `added` (their event_id: _added_lines), or, unknown (None), looked for in the line's raw text (a
    non-ASCII line has the bit already). The macro reads event_id or raw from the query it is used in:
    every relation a has_mark is asked of has both."""
    if old is None:
        return None
    for key in ("roles", "kinds", "formats", "lines"):
        if not set(getattr(m, key)) <= set(old[key]):
            return None
    if not all(any(p.startswith(q) for q in old["kind_prefixes"]) for p in m.kind_prefixes):
        return None
    sql = _bits(old["bit"], top)
    new = _new_literals(m, old)
    if new and added is None:
        sql += " OR " + _literal_test(new)
    elif new and added:
        sql += f" OR event_id IN ({', '.join(map(str, added))})"
    return sql


def _bits(bit: int, top: int) -> str:
    """SQL: marks `m` has bit `bit` (of bits 0..top)."""
    return f"m IN ({', '.join(str(v) for v in range(1 << (top + 1)) if v >> bit & 1)})"


# The lines that hold a literal a mark gained, and not its stored bit, are found once per connection (one
# pass over every line's raw text: 1.5 CPU-s on the 1 GB corpus) and named by event_id in the macro: the
# raw text tested in the macro cost 1.0-1.5 CPU-s in each query that asks has_mark (no filter on marks is
# taken into the Parquet scan then), and a diagnosis asks it in six passes over every line. Past this many
# lines, the macro tests the text.
ADDED_MAX = 10_000


def _added_lines(con, m: Mark, old: dict, top: int) -> list[int] | None:
    """The event_ids of the lines of mark `m`'s new literals without its stored bit; None: too many, or
    no view event_lines to read them from."""
    from .correlate.util import table_exists   # (late: the build makes spec() without duckdb)
    if not table_exists(con, "event_lines"):
        return None
    got = con.execute(f"SELECT event_id FROM event_lines WHERE marks IS NOT NULL "
                      f"AND NOT ({_bits(old['bit'], top).replace('m IN', 'marks IN')}) "
                      f"AND {_literal_test(_new_literals(m, old))} ORDER BY event_id LIMIT {ADDED_MAX + 1}").fetchall()
    return [i for (i,) in got] if len(got) <= ADDED_MAX else None


def macro_sql(trusted: bool = True, stored: list[dict] | None = None,
              added: dict[str, list[int] | None] | None = None) -> str:
    """A temp macro: whether a line may pass the text tests mark `name` guards
    (NULL marks: a line stored before marks existed, or by hand; it may).
    Not `trusted`: what the bits of marks `stored` (another version's spec_json) still prove of each
    mark (_still_proven; `added`: the lines of each mark's new literals, when known), true for the rest
    (without `stored`: true for every line).

    A mark is tested as `m IN (every value with its bit)`, not as a bit
    test: DuckDB takes an IN list on a column into the scan as a filter, so
    the text tests beside it (and view event_rows' cutting of the message
    out of raw) run on the marked lines only; a bit test stayed a filter
    above them, run after them on every line (0.50 -> 0.03 s for one LIKE
    on the 512 MB store). The engine sets no other bits (marks.rs: `all`)."""
    marks = load()
    if not marks:
        return "CREATE OR REPLACE TEMP MACRO has_mark(m, name) AS true"
    if trusted:
        cases = {m.name: _bits(m.bit, max(b.bit for b in marks)) for m in marks}
    else:
        old = {o["name"]: o for o in stored or ()}
        top = max((o["bit"] for o in old.values()), default=0)
        cases = {m.name: _still_proven(m, old.get(m.name), top, (added or {}).get(m.name)) for m in marks}
        if not any(cases.values()):
            return "CREATE OR REPLACE TEMP MACRO has_mark(m, name) AS true"
        cases = {n: c or "true" for n, c in cases.items()}
    whens = " ".join(f"WHEN '{n}' THEN {c}" for n, c in cases.items())
    return f"CREATE OR REPLACE TEMP MACRO has_mark(m, name) AS (m IS NULL OR CASE name {whens} END)"


def _stored(con) -> str | None:
    from .store import meta_value   # (late: the build makes spec() without duckdb)
    return meta_value(con, "marks")


def _stored_spec(con) -> list[dict] | None:
    from .store import meta_value
    got = meta_value(con, "marks_spec")
    return json.loads(got) if got else None


def define(con, trusted: bool | None = None) -> None:
    """Make has_mark() known to connection `con`; it trusts the stored bits when
    the store's lines were all marked by this version's marks (or `trusted`), and
    what they still prove of this version's marks when they were all marked by
    another's that the store keeps (meta 'marks_spec')."""
    if trusted is not None:
        con.execute(macro_sql(trusted))
    elif _stored(con) == fingerprint():
        con.execute(macro_sql(True))
    else:
        stored = _stored_spec(con) if _stored(con) != "mixed" else None
        old = {o["name"]: o for o in stored or ()}
        top = max((o["bit"] for o in old.values()), default=0)
        # (found once per connection: a diagnosis defines the macro more than once)
        if not con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name = 'marks_added'"
                           ).fetchone()[0]:
            added = {m.name: _added_lines(con, m, old[m.name], top) for m in load()
                     if m.name in old and _new_literals(m, old[m.name]) and _still_proven(m, old[m.name], top)}
            con.execute("CREATE TEMP TABLE marks_added (name VARCHAR, ids BIGINT[])")
            if added:
                con.executemany("INSERT INTO marks_added VALUES (?, ?)", list(added.items()))
        added = dict(con.execute("SELECT name, ids FROM marks_added").fetchall())
        con.execute(macro_sql(False, stored, added))


def stamp(con) -> None:
    """Before an ingest or a merge writes lines: an empty store takes this
    version's marks; one marked otherwise (or before marks) becomes 'mixed'
    (its spec gone: its lines' bits were set by two versions)."""
    if con.execute("SELECT count(*) FROM files").fetchone()[0] == 0:
        value = fingerprint()
    elif _stored(con) == fingerprint():
        if _stored_spec(con) is None:   # (a store of this version's marks written before specs were kept)
            con.execute("INSERT OR REPLACE INTO meta VALUES ('marks_spec', ?)", [spec_json()])
        return
    else:
        con.execute("DELETE FROM meta WHERE key = 'marks_spec'")
        con.execute("INSERT OR REPLACE INTO meta VALUES ('marks', 'mixed')")
        return
    con.execute("INSERT OR REPLACE INTO meta VALUES ('marks', ?)", [value])
    con.execute("INSERT OR REPLACE INTO meta VALUES ('marks_spec', ?)", [spec_json()])
