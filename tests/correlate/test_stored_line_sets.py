"""What diagnose would otherwise read from every line is kept in the store by the ingest that
selected it, stamped in meta: the lines of hot_events.sql's filter (hot_src_stored) and the clock's
anchors (clock_anchors_stored, anchors.sql's rows). Readers take them instead of scanning every line
again, and only while the store, the SQL and the code are as they were."""

from __future__ import annotations


from ranktrace.correlate import diagnose
from ranktrace.correlate.clock import LINE_SETS, align, anchor_rows, forget_line_sets
from ranktrace.ingest.pipeline import ingest
from ranktrace.store import connect as store_connect

from rt_testlib import halved_copy

from rt_testlib import sample_files as _files
from .test_sample_bundles import BUNDLES


def _kinds(con) -> dict[str, str]:
    """What each line set is on this connection: a VIEW over the store's table, or a TABLE selected now."""
    got = dict(con.execute("SELECT view_name, 'VIEW' FROM duckdb_views() WHERE temporary UNION ALL "
                           "SELECT table_name, 'TABLE' FROM duckdb_tables() WHERE temporary").fetchall())
    return {name: got.get(name) for name in LINE_SETS}


def _anchor_src_made(con) -> bool:
    return con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name = 'anchor_src'"
                       ).fetchone()[0] == 1


def _sets(con) -> dict[str, list[tuple]]:
    return {name: sorted(con.execute(f"SELECT * FROM {name}").fetchall(), key=repr) for name in LINE_SETS}


def test_line_sets_are_read_from_the_store_only_while_it_is_unchanged(tmp_path, catalog, monkeypatch):
    # a run that restarted: a reader splits the groups by attempt, which the ingest did after the clock
    bundle = next(b for b in BUNDLES if b.name == "torchrun_restart_resume")
    db = str(tmp_path / "s.duckdb")
    monkeypatch.chdir(bundle.parent)
    ingest(_files(bundle), db, catalog)
    con = store_connect(db)
    assert all(con.execute("SELECT count(*) FROM meta WHERE key = ?", [f"{n}_stamp"]).fetchone()[0] == 1
               for n in LINE_SETS)
    assert con.execute("SELECT count(*) FROM meta WHERE key = 'clock_anchors_stamp'").fetchone()[0] == 1
    # kept as their lines (clock.STORED_AS): event_lines' columns, not the class's text or the message again
    lines_cols = [r[0] for r in con.execute("DESCRIBE event_lines").fetchall()]
    assert all([r[0] for r in con.execute(f"DESCRIBE {n}_stored").fetchall()] == lines_cols for n in LINE_SETS)
    align(con)
    assert _kinds(con) == {n: "VIEW" for n in LINE_SETS}
    assert _anchor_src_made(con) is False   # the anchors came from the store: no line was read for them
    stored = _sets(con)
    anchors = anchor_rows(con)
    assert all(stored.values()) and anchors, "the bundle has hot lines and clock anchors"
    verdict = diagnose(con)
    assert len(verdict["attempts"]) > 1
    con.close()

    # selected anew (the store's tables gone): the same rows, the same verdict
    con = store_connect(db, read_only=False)
    forget_line_sets(con)
    align(con)
    assert _kinds(con) == {n: "TABLE" for n in LINE_SETS}
    assert _anchor_src_made(con) is True
    assert _sets(con) == stored
    assert anchor_rows(con) == anchors
    con.close()
    con = store_connect(db)
    assert diagnose(con) == verdict
    con.close()


def test_a_changed_store_selects_its_lines_anew(tmp_path, catalog, monkeypatch):
    bundle = BUNDLES[0]
    db = str(tmp_path / "s.duckdb")
    monkeypatch.chdir(bundle.parent)
    ingest(_files(bundle), db, catalog)
    con = halved_copy(db, str(tmp_path / "changed.duckdb"))
    align(con)
    assert _kinds(con) == {n: "TABLE" for n in LINE_SETS}
    assert _anchor_src_made(con) is True
    fresh = _sets(con)
    ids = {r[0] for r in con.execute("SELECT event_id FROM kept_lines").fetchall()}
    assert all(r[0] in ids for rows in fresh.values() for r in rows)   # event_id is every set's first column
    assert con.execute("SELECT count(*) FROM hot_src_stored WHERE event_id NOT IN (SELECT event_id FROM kept_lines)"
                       ).fetchone()[0] > 0   # the kept set holds lines the changed store has not
    con.close()
