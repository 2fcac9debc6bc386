"""The engine's marks (parsers/marks.toml) are prefilters: a query that tests
has_mark(marks, 'NAME') before its text tests must lose no line the text tests
would pass. Every LIKE / ILIKE a guard in queries/ or the code guards, made into
a line, must come out of the engine marked (an AND needs one marked part, an OR
all); has_mark is true for unknown (NULL) marks and for the mark's own bit only."""

from __future__ import annotations

import random
import re
from pathlib import Path

import duckdb
import pytest

from ranktrace import marks
from ranktrace.correlate.util import sql_file
from ranktrace.formats import load_catalog
from ranktrace.ingest import core
from ranktrace.resources import data_dir

GUARD = re.compile(r"has_mark\((?:\w+\.)?marks, '(\w+)'\) AND \(")
REPO = Path(__file__).resolve().parents[2]


def string_end(text: str, at: int) -> int:
    """The index of the quote that closes the SQL string opened at `at` ('' is a quote in it)."""
    i = at + 1
    while not (text[i] == "'" and text[i + 1:i + 2] != "'"):
        i += 2 if text[i] == "'" else 1
    return i


def balanced(text: str, at: int) -> str:
    """The text from `at` (just after an opening parenthesis) to its closing one; SQL strings kept whole."""
    depth, i = 1, at
    while True:
        ch = text[i]
        if ch == "'":
            i = string_end(text, i)
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[at:i]
        i += 1


def guards() -> list[tuple[str, str, str]]:
    """(where, mark, the condition it guards) of every has_mark(marks, 'NAME') AND (...) in
    queries/ and in the package's code, comments left out."""
    out = []
    files = sorted(data_dir("queries").rglob("*.sql")) + sorted((REPO / "src" / "ranktrace").rglob("*.py"))
    for path in files:
        text = path.read_text()
        for m in GUARD.finditer(text):
            cond = balanced(text, m.end())
            cond = "\n".join(line.split("--", 1)[0] for line in cond.splitlines())   # comments say '%...%' too
            out.append((f"{path.name}:{text.count(chr(10), 0, m.start()) + 1}", m.group(1), cond))
    return out


def parse(expr: str):
    """The boolean structure of an SQL condition: ('or' | 'and', [children]) or ('atom', text).
    Strings and function calls stay whole inside atoms."""
    toks, i, atom = [], 0, ""
    while i < len(expr):
        ch = expr[i]
        if ch == "'":
            j = string_end(expr, i)
            atom, i = atom + expr[i:j + 1], j + 1
        elif ch == "(" and re.search(r"\w$", atom):          # a function call: to its closing parenthesis
            args = balanced(expr, i + 1)
            atom, i = atom + "(" + args + ")", i + len(args) + 2
        elif ch in "()":
            toks += [atom, ch] if atom.strip() else [ch]
            atom, i = "", i + 1
        elif m := re.match(r"\s(AND|OR)\s", expr[i:]):
            toks += [atom, m.group(1)] if atom.strip() else [m.group(1)]
            atom, i = "", i + len(m.group(0)) - 1
        else:
            atom, i = atom + ch, i + 1
    if atom.strip():
        toks.append(atom)
    toks = [t.strip() for t in toks if t.strip()]

    def seq(k):
        items, ops = [], set()
        while k < len(toks) and toks[k] != ")":
            if toks[k] in ("AND", "OR"):
                ops.add(toks[k].lower())
                k += 1
                continue
            if toks[k] == "(":
                node, k = seq(k + 1)
                k += 1
            else:
                node, k = ("atom", toks[k]), k + 1
            items.append(node)
        assert len(ops) <= 1, f"mixed AND / OR without parentheses: {toks}"
        return ((ops.pop() if ops else "and"), items), k
    return seq(0)[0]


def like_atoms(node) -> list[tuple[str, str]]:
    if node[0] == "atom":
        m = re.fullmatch(r"(?:\w+\.)?(?:message|raw) (I?LIKE) '((?:[^']|'')*)'", node[1])
        return [(m.group(1), m.group(2).replace("''", "'"))] if m else []
    return [a for child in node[1] for a in like_atoms(child)]


def covered(node, marked) -> bool:
    """Whether every line that passes `node` contains a literal of the mark: a LIKE the
    engine marks; an AND of which one child is covered; an OR of covered children."""
    if node[0] == "atom":
        got = like_atoms(node)
        return bool(got) and marked[got[0]]
    kids = [covered(child, marked) for child in node[1]]
    return any(kids) if node[0] == "and" else all(kids)


def a_line_like(op: str, pattern: str, rng: random.Random) -> str:
    """A line that `pattern` matches: `%` some filler, `_` one character (not the one
    the pattern wrote there), for ILIKE the letters in a random case."""
    out = []
    for ch in pattern:
        if ch == "%":
            out.append(rng.choice(["", " x ", "Q", "12"]))
        elif ch == "_":
            out.append(rng.choice("-.Z "))
        else:
            out.append(ch.swapcase() if op == "ILIKE" and rng.random() < 0.5 else ch)
    return "".join(out)


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_the_guards_are_found():
    found = {(where.split(":")[0], mark) for where, mark, _ in guards()}
    assert {("hot_events.sql", "hot"), ("anchor_lines.sql", "hot"), ("anchors.sql", "hot"),
            ("identity.py", "hot"), ("bar_clock.sql", "bar")} <= found, found
    assert {mark for _, mark in found} <= {m.name for m in marks.load()}


@pytest.mark.parametrize("where,mark,cond", guards(), ids=lambda v: v if ":" in str(v) else None)
def test_every_guarded_text_test_has_a_literal_the_engine_marks(cat, where, mark, cond):
    rng = random.Random(7)
    con = duckdb.connect()
    bit = 1 << next(m.bit for m in marks.load() if m.name == mark)
    tree = parse(cond)
    likes = sorted(set(like_atoms(tree)))
    assert likes, f"{where}: the guard of mark {mark!r} guards no LIKE"
    lines, wanted = [], []
    for op, pattern in likes:
        for _ in range(3):
            line = a_line_like(op, pattern, rng)
            assert con.execute(f"SELECT ? {op} ?", [line, pattern]).fetchone()[0], (line, pattern)
            lines.append(line)
            wanted.append((op, pattern))
    events, _ = core.parse_text(cat, "\n".join(lines) + "\n")
    got = events["marks"].to_list()
    assert len(got) == len(lines)
    marked = {w: True for w in likes}
    for w, m in zip(wanted, got):
        marked[w] = marked[w] and bool(m & bit)
    assert covered(tree, marked), (f"{where}: a line its text tests pass may have no literal of mark {mark!r}: "
                                   f"{sorted(w for w, ok in marked.items() if not ok)}")


def test_the_coverage_check_fails_where_a_literal_is_missing():
    tree = parse("message LIKE '%a%' OR (raw LIKE '%b%' AND raw LIKE '%c%') OR ((message ILIKE '%d%' "
                 "OR message LIKE '%e%') AND regexp_matches(message, 'd|e (x)'))")
    every = {("LIKE", "%a%"): True, ("LIKE", "%b%"): False, ("LIKE", "%c%"): True,
             ("ILIKE", "%d%"): True, ("LIKE", "%e%"): True}
    assert covered(tree, every)
    assert not covered(tree, every | {("LIKE", "%c%"): False})    # neither of the AND
    assert not covered(tree, every | {("LIKE", "%e%"): False})    # one of the OR
    assert not covered(parse("message LIKE '%a%' OR regexp_matches(message, 'a')"), every)


def test_lines_without_a_literal_are_not_marked_and_non_ascii_lines_are(cat):
    events, _ = core.parse_text(cat, "NCCL INFO Channel 00/0 : 0 -> 1 via P2P/IPC/read\n"
                                     "caf\u00e9 Channel 00/0\n")
    assert events["marks"].to_list() == [0, (1 << len(marks.load())) - 1]


def test_the_taken_mark_holds_the_class_terms_of_hot_events():
    """Mark `taken` is set by the classes hot_events.sql takes whole: its roles, kinds, kind prefixes and
    format are that file's (and hot_ids.sql's) lists, and its line tests the two terms of no literal."""
    taken = next(m for m in marks.load() if m.name == "taken")
    for name in ("hot_events", "hot_ids"):
        text = "\n".join(line.split("--", 1)[0] for line in sql_file(f"align/{name}.sql").splitlines())
        lists = lambda col: {w for group in re.findall(rf"\b{col} IN \(([^)]*)\)", text)
                             for w in re.findall(r"'([^']*)'", group)}
        assert set(taken.roles) == lists("role"), name
        assert set(taken.kinds) == lists("kind"), name
        assert set(taken.kind_prefixes) == set(re.findall(r"starts_with\(kind, '([^']*)'\)", text)), name
        assert set(taken.formats) == set(re.findall(r"\bformat = '([^']*)'", text)), name
        assert "'^\\s*(time|host|rank|exitcode)\\s*:'" in text and "'^[a-z0-9][a-z0-9.-]*\\s+\\d+/\\d+\\s+\\S+\\s+\\d+'" in text
    assert set(taken.lines) == set(marks.LINE_TESTS)


def test_the_engine_sets_the_taken_mark_by_class_and_line_tests(cat):
    """A Root Cause entry, a pods row and the lines of a kind or role hot_events.sql takes are marked
    `taken`; an NCCL line and a step line are not."""
    bit = 1 << next(m.bit for m in marks.load() if m.name == "taken")
    lines = {"  host      : node-3": True,                                    # report_entry
             "trainer-0-worker-3   1/1   Running   0   5m": True,             # pods_row
             "NCCL INFO Channel 00/0 : 0 -> 1 via P2P/IPC/read": False,
             "step 12 | loss 3.1": False,                                     # kind progress
             "[2024-05-01 12:00:00,000] torch.distributed.elastic.agent.server.api: [WARNING] Sending process 7 "
             "closing signal SIGTERM": True,                                  # kind sigterm_sent
             "slurmstepd: error: *** STEP 12.0 ON node1 CANCELLED AT 2024-05-01T12:00:00 ***": True,
             "RuntimeError: CUDA error: an illegal memory access was encountered": True}   # role cause
    events, _ = core.parse_text(cat, "\n".join(lines) + "\n")
    got = [bool(m & bit) for m in events["marks"].to_list()]
    assert got == list(lines.values()), list(zip(events["kind"].to_list(), events["role"].to_list(), got))


def test_has_mark_tests_its_own_bit_and_passes_unknown_marks():
    con = duckdb.connect()
    marks.define(con, trusted=True)
    names = [m.name for m in marks.load()]
    for m in marks.load():
        other = sum(1 << b.bit for b in marks.load() if b.name != m.name)
        assert con.execute(f"SELECT has_mark({1 << m.bit}, '{m.name}'), has_mark({other}, '{m.name}'), "
                           f"has_mark(NULL, '{m.name}')").fetchone() == (True, False, True), names


def test_a_store_marked_otherwise_is_not_trusted(tmp_path):
    from ranktrace import store
    db = tmp_path / "s.duckdb"
    con = store.open_store(db)
    marks.define(con)
    assert con.execute("SELECT has_mark(0, 'hot')").fetchone()[0] is False   # new store: this version's marks
    con.execute("INSERT INTO files (file_id, path, sha256) VALUES (1, 'a.log', 'x')")
    con.execute("UPDATE meta SET value = 'another' WHERE key = 'marks'")
    con.close()
    con = store.open_store(db)       # an ingest into it would add lines of this version's marks
    assert con.execute("SELECT value FROM meta WHERE key = 'marks'").fetchone()[0] == "mixed"
    marks.define(con)
    assert con.execute("SELECT has_mark(0, 'hot')").fetchone()[0] is True
    con.close()
