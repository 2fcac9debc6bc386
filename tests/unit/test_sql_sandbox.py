"""`ranktrace sql` and the TUI console read the store and nothing else
(issue 15): every escape of the issue fails with a message, normal queries
and the README's queries still run."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from ranktrace.cli import main
from ranktrace.query import QueryRefused, check_statements, run_query
from ranktrace.store import insert_events, open_store, refresh_summaries
from ranktrace.store import connect as store_connect

REPO = Path(__file__).resolve().parents[2]


def _store(path: Path) -> str:
    con = open_store(path)
    con.execute("""CREATE TEMP TABLE given AS SELECT * FROM events LIMIT 0""")
    con.execute("""INSERT INTO given (event_id, file_id, file, line, end_line, ts, ts_kind, format, host, rank,
                   severity, kind, role, message, raw)
                   VALUES (1, 1, 'n1.log', 1, 1, TIMESTAMP '2026-03-02 03:00:00', 'exact', 'test', 'n1', 0,
                           'info', 'progress', 'info', 'step 1', 'step 1'),
                          (2, 1, 'n1.log', 2, 2, TIMESTAMP '2026-03-02 03:00:05', 'exact', 'test', 'n1', 0,
                           'error', 'python_exception', 'cause', 'boom', 'boom')""")
    insert_events(con, "given")
    refresh_summaries(con)
    con.close()
    return str(path)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """(the store, another store next to it, a secret file next to them): made once for this file's
    tests, which each check that nothing of them changed; each writes (tries to) in its own tmp_path."""
    d = tmp_path_factory.mktemp("sandbox")
    db = _store(d / "inc.duckdb")
    other = _store(d / "other.duckdb")
    secret = d / "secret.txt"
    secret.write_text("hunter2\n")
    return db, other, secret


def _sql(capsys, *args) -> tuple[int, str, str]:
    rc = main(["sql", *args])
    out, err = capsys.readouterr()
    return rc, out, err


ESCAPES = {
    "attach_rw_delete": "ATTACH '{other}' AS v (READ_WRITE); DELETE FROM v.events",
    "attach_ro": "ATTACH '{other}' AS v (READ_ONLY)",
    "copy_to": "COPY (SELECT * FROM events) TO '{dir}/out.csv'",
    "copy_to_parquet": "COPY events TO '{dir}/out.parquet' (FORMAT parquet)",
    "explain_analyze_copy": "EXPLAIN ANALYZE COPY (SELECT 1) TO '{dir}/out2.csv'",
    "export_database": "EXPORT DATABASE '{dir}/exported'",
    "read_text": "SELECT * FROM read_text('/etc/passwd')",
    "read_text_secret": "SELECT content FROM read_text('{secret}')",
    "read_csv": "SELECT * FROM read_csv('{secret}')",
    "read_parquet": "SELECT * FROM read_parquet('{dir}/*.parquet')",
    "read_blob": "SELECT * FROM read_blob('{secret}')",
    "glob": "SELECT * FROM glob('/root/**')",
    "replacement_scan_file": "SELECT * FROM '{secret}'",
    "install_httpfs": "INSTALL httpfs",
    "load_httpfs": "LOAD httpfs",
    "url": "SELECT * FROM read_csv('https://example.com/x.csv')",
    "set_external_access": "SET enable_external_access = true",
    "reset_lock": "SET lock_configuration = false",
    "import_database": "PRAGMA import_database('{dir}')",
    "delete": "DELETE FROM event_lines",
    "drop": "DROP TABLE event_lines",
    "persistent_secret": "CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'k', SECRET 'v')",
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_every_escape_fails_with_a_message(stores, tmp_path, capsys, name):
    db, other, secret = stores
    q = ESCAPES[name].format(other=other, dir=tmp_path, secret=secret)
    before = set(p.name for p in tmp_path.iterdir())
    rc, out, err = _sql(capsys, q, "--db", db)
    assert rc != 0, out
    assert "hunter2" not in out
    assert err.startswith("ranktrace: ") and len(err) > 30
    assert "Traceback" not in err
    # nothing was written, both stores still have their rows
    assert set(p.name for p in tmp_path.iterdir()) == before
    for store in (other, db):
        con = store_connect(store)
        assert con.execute("SELECT count(*) FROM events").fetchone()[0] == 2
        con.close()


def test_allow_files_reads_local_files_but_never_writes(stores, tmp_path, capsys):
    db, other, secret = stores
    rc, out, err = _sql(capsys, f"SELECT content FROM read_text('{secret}')", "--db", db, "--allow-files")
    assert rc == 0 and "hunter2" in out
    before = set(p.name for p in tmp_path.iterdir())
    for q in (f"COPY (SELECT 1) TO '{tmp_path}/w.csv'", f"EXPORT DATABASE '{tmp_path}/e'",
              f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{tmp_path}/w2.csv'",
              f"ATTACH '{other}' AS v (READ_WRITE)", "INSTALL httpfs", "SET enable_external_access = false"):
        rc, out, err = _sql(capsys, q, "--db", db, "--allow-files")
        assert rc != 0, q
        assert "refused" in err or "locked" in err, err
    assert set(p.name for p in tmp_path.iterdir()) == before


def test_refusal_names_the_rule():
    with pytest.raises(QueryRefused, match="only reads the store"):
        check_statements("SELECT 1; COPY events TO 'x.csv'")
    check_statements("SELECT 1; SHOW TABLES; DESCRIBE events; SUMMARIZE events; EXPLAIN SELECT 1; "
                     "PRAGMA show_tables; FROM events; WITH a AS (SELECT 1) SELECT * FROM a")


def test_normal_queries_and_readme_queries_still_run(stores, capsys):
    db, _, _ = stores
    cols, rows = run_query(db, "SELECT rank, max(ts) FROM events GROUP BY rank")
    assert rows and rows[0][0] == 0
    cols, rows = run_query(db, "SELECT current_setting('TimeZone')")
    assert rows[0][0] == "UTC"
    readme = (REPO / "README.md").read_text()
    queries = [q for q in re.findall(r"```sql\n(.*?)```", readme, re.S) if "read_parquet" not in q]
    queries += re.findall(r'ranktrace sql "([^"]+)"', readme)
    assert len(queries) >= 2
    for q in queries:
        rc, out, err = _sql(capsys, q, "--db", db)
        assert rc == 0, (q, err)


def test_tui_console_is_confined_too(stores, tmp_path):
    from ranktrace.tui.data import StoreData
    db, other, secret = stores
    s = StoreData(db, verdict_fn=lambda con: None)
    try:
        ok = s.run_sql("SELECT count(*) FROM events")
        assert ok.error is None and ok.rows == [(2,)]
        for name in ("attach_rw_delete", "copy_to", "export_database", "read_text_secret", "glob",
                     "install_httpfs", "set_external_access"):
            r = s.run_sql(ESCAPES[name].format(other=other, dir=tmp_path, secret=secret))
            assert r.error, name
            assert not r.rows
        # the timeline's own reads still work on the locked connection
        assert s.lanes()
    finally:
        s.close()
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "exported").exists()
