"""The store's layout (schema 3): view `events` over event_rows (what is each
line's own) and event_classes (what many lines of a file share, stored once:
crates/engine/src/classes.rs); stores of schema 2 (one wide `events` table)
are brought to it by the first write."""

from __future__ import annotations

import shutil

import duckdb
import pytest

from ranktrace.cli import main
from ranktrace.store import SCHEMA_VERSION, open_store
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


def _drop_views(con) -> None:
    for (v,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' "
                            "AND NOT temporary").fetchall():
        con.execute(f'DROP VIEW "{v}"')


def _as_schema2(db) -> None:
    """Rewrite `db` as ranktrace wrote stores of schema 2: one wide table `events`."""
    con = store_connect(str(db), read_only=False)
    con.execute("CREATE TABLE events_wide AS SELECT * FROM events")
    _drop_views(con)
    con.execute("DROP TABLE event_lines")
    con.execute("DROP TABLE event_classes")
    con.execute("ALTER TABLE events_wide RENAME TO events")
    con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    con.close()


def _refused_then_brought_up_to_date(old, version: str, fresh, capsys, catalog) -> None:
    """A store of an older schema `version`: reading it is refused, naming the version;
    a write brings it up to date, with the events of the same logs ingested today."""
    capsys.readouterr()
    assert main(["diagnose", "--db", str(old)]) == 2
    assert f"schema version {version}" in capsys.readouterr().err
    open_store(old, catalog).close()
    assert _all(old, "SELECT value FROM meta WHERE key = 'schema_version'") == [(SCHEMA_VERSION,)]
    want = "SELECT * FROM events ORDER BY event_id"
    assert _all(old, want) == _all(fresh, want)


def test_a_schema_2_store_is_refused_to_read_and_rewritten_by_a_write(fresh, tmp_path, capsys, catalog):
    old = tmp_path / "old.duckdb"
    shutil.copy(fresh, old)
    _as_schema2(old)
    assert _all(old, "SELECT table_type FROM information_schema.tables WHERE table_name = 'events'") == [("BASE TABLE",)]
    _refused_then_brought_up_to_date(old, "2", fresh, capsys, catalog)
    assert _all(old, "SELECT table_type FROM information_schema.tables WHERE table_name = 'events'") == [("VIEW",)]
    # the classes are numbered as the engine numbers them
    ids = "SELECT event_id, class_id FROM event_rows ORDER BY event_id"
    assert _all(old, ids) == _all(fresh, ids)
    assert not _all(old, "SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'events%'")


def _as_schema4(db) -> None:
    """Rewrite `db` as ranktrace wrote stores of schema 4: table event_rows, every line's message as text."""
    con = store_connect(str(db), read_only=False)
    _drop_views(con)
    con.execute("UPDATE event_lines SET message = substr(raw, message_at, message_len)")
    con.execute("ALTER TABLE event_lines DROP COLUMN message_at")
    con.execute("ALTER TABLE event_lines DROP COLUMN message_len")
    con.execute("ALTER TABLE event_lines RENAME TO event_rows")
    # schema 4's views: those of today but view event_rows, then a table
    views = (REPO / "queries" / "schema" / "002_views.sql").read_text()
    at = views.index("CREATE OR REPLACE VIEW event_rows")
    con.execute(views[:at] + views[views.index(";", at) + 1:])
    con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    con.close()


def test_a_schema_4_store_keeps_its_messages_when_a_write_brings_it_up_to_date(fresh, tmp_path, capsys, catalog):
    """Schema 5 stores a line's message as its place in raw; a schema 4 store's lines keep their
    message text, and view event_rows gives both kinds of line their message."""
    old = tmp_path / "old4.duckdb"
    shutil.copy(fresh, old)
    _as_schema4(old)
    assert _all(old, "SELECT count(*) FROM event_rows WHERE message IS NOT NULL")[0][0] > 1000
    _refused_then_brought_up_to_date(old, "4", fresh, capsys, catalog)
    assert _all(old, "SELECT table_type FROM information_schema.tables WHERE table_name = 'event_rows'") == [("VIEW",)]
    # the old lines kept their text; new lines (the fresh store's) hold only their place in raw
    assert _all(old, "SELECT count(*) FROM event_lines WHERE message IS NULL") == [(0,)]
    assert _all(fresh, "SELECT count(*) FROM event_lines WHERE message IS NOT NULL OR message_at IS NULL") == [(0,)]


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
    db = tmp_path / "u.duckdb"
    assert main(["ingest", str(log.parent), "--db", str(db), "-q"]) == 0
    want = [line.split("kernel: ", 1)[1] for line in lines]
    assert [m for (m,) in _all(db, "SELECT message FROM events ORDER BY line")] == want
    events, _ = parse_text(catalog, log.read_text())
    assert events["message"].to_list() == want
