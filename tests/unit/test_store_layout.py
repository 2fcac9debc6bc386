"""The store's layout (schema 6): a directory whose lines are Parquet files of
its parts (view event_lines), and one DuckDB file; view `events` over
event_rows (what is each line's own) and event_classes (what many lines of a
file share, stored once: crates/engine/src/classes.rs). Stores of older
schemas are refused (tests/unit/test_store_open_errors.py)."""

from __future__ import annotations

import shutil

import duckdb
import pytest

from ranktrace.cli import main
from rt_testlib import REPO
from ranktrace.store import connect as store_connect

BUNDLE = REPO / "sample_logs"   # every bundle: many formats, envelopes, identities


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    db = tmp_path_factory.mktemp("layout") / "fresh.duckdb"
    assert main(["ingest", str(BUNDLE), "--db", str(db), "-q"]) in (0, 1)
    return db


def _all(db, sql):
    con = store_connect(str(db))
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_classes_are_few_numbered_per_file_and_every_row_has_one(fresh):
    n_rows, n_classes, orphans, per_file_ok = _all(fresh, """
        SELECT (SELECT count(*) FROM event_rows), (SELECT count(*) FROM event_classes),
               (SELECT count(*) FROM event_rows r ANTI JOIN event_classes c USING (class_id)),
               (SELECT bool_and(class_id >> 32 = file_id) FROM event_classes)""")[0]
    assert n_rows == _all(fresh, "SELECT count(*) FROM events")[0][0] > 1000
    assert orphans == 0 and per_file_ok
    assert n_classes * 3 < n_rows           # what the layout is for: shared columns stored once
    # a file's classes are numbered 0, 1, 2, ... in the order their first line comes
    firsts = _all(fresh, """
        SELECT file_id, list(class_id & 4294967295 ORDER BY first_line)
        FROM (SELECT file_id, class_id, min(line) AS first_line FROM event_rows GROUP BY ALL) GROUP BY file_id""")
    assert firsts and all(ks == list(range(len(ks))) for _, ks in firsts)


def test_lines_are_the_parts_parquet_files_inside_the_store(fresh):
    """No DuckDB row per line: event_lines is a view over the lines files of
    the store's parts, named relative to the store, every one inside it."""
    assert _all(fresh, "SELECT table_type FROM information_schema.tables WHERE table_name = 'event_lines'") == [("VIEW",)]
    files = _all(fresh, "SELECT path, lines FROM lines_files ORDER BY seq")
    assert files and all(not p.startswith("/") and (fresh / p).is_file() for p, _ in files)
    assert sum(n for _, n in files) == _all(fresh, "SELECT count(*) FROM event_lines")[0][0]
    assert _all(fresh, "SELECT count(*) FROM duckdb_tables() WHERE estimated_size > 100000") == [(0,)]


README_QUERY = """SELECT host, rank, max(ats) AS last_progress
FROM events_aligned WHERE kind = 'progress' AND rank IS NOT NULL
GROUP BY host, rank ORDER BY last_progress LIMIT 5"""


def test_a_moved_store_is_read_wherever_it_is(fresh, tmp_path, monkeypatch, capsys):
    """A store is moved as one directory: ranktrace reads it from anywhere, and
    `cd STORE && duckdb ranktrace.duckdb` runs the README's queries with
    nothing else set; from elsewhere, plain DuckDB does not find its lines
    (why ranktrace sets the search path)."""
    import os
    before = _all(fresh, README_QUERY)
    assert before
    moved = tmp_path / "elsewhere" / "inc.store"
    moved.parent.mkdir()
    shutil.copytree(fresh, moved)   # (a copy: the module's other tests read `fresh`)
    capsys.readouterr()
    assert main(["sql", README_QUERY, "--db", str(moved), "--format", "json"]) == 0
    assert len(__import__("json").loads(capsys.readouterr().out)) == len(before)
    monkeypatch.chdir(moved)
    con = duckdb.connect("ranktrace.duckdb", read_only=True)
    assert con.execute(README_QUERY).fetchall() == before
    con.close()
    monkeypatch.chdir(tmp_path)
    con = duckdb.connect(os.path.join(moved, "ranktrace.duckdb"), read_only=True)
    with pytest.raises(duckdb.Error, match="No files found|does not exist|IO Error"):
        con.execute("SELECT count(*) FROM event_lines").fetchall()
    con.close()


def test_a_message_is_cut_out_of_raw_by_characters_not_bytes(tmp_path, catalog):
    """message_at / message_len count characters, as SQL's substr() and polars' str.slice do:
    lines with multi-byte characters before and inside their message read back whole."""
    from ranktrace.ingest.core import parse_text
    # syslog: the host (non-ASCII here) comes before the message, so a start counted in bytes
    # would cut the message short
    lines = ["Mar  1 00:00:00 nodé-1 kernel: ünïcödé → message ✓ done",
             "Mar  1 00:00:01 node-2 kernel: plain ascii message",
             "Mar  1 00:00:02 ノード3 kernel: 日本語のメッセージ",
             "Mar  1 00:00:03 nœud-4 kernel: \U0001F525 fire, é at the end é"]
    log = tmp_path / "u" / "utf8.log"
    log.parent.mkdir()
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp_path / "u.store"
    assert main(["ingest", str(log.parent), "--db", str(db), "-q"]) == 0
    want = [line.split("kernel: ", 1)[1] for line in lines]
    assert [m for (m,) in _all(db, "SELECT message FROM events ORDER BY line")] == want
    events, _ = parse_text(catalog, log.read_text())
    assert events["message"].to_list() == want
