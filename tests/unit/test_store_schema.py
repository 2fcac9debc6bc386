"""open_store brings any store up to the catalog: missing fact tables are
created whole, fact tables of an older catalog gain the columns they lack."""

from ranktrace import store


def _columns(con, table):
    return [r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
        [table]).fetchall()]


def test_fact_tables_are_created_and_completed(tmp_path, catalog):
    db = str(tmp_path / "s.duckdb")
    con = store.open_store(db, catalog)
    table, cols = next(iter(catalog.fact_tables.items()))
    other = list(catalog.fact_tables)[1]
    assert _columns(con, table) == ["event_id", "file_id", *cols]
    # An older catalog: one table lacks its last column, another is not there at all.
    con.execute(f'ALTER TABLE "{table}" DROP COLUMN "{list(cols)[-1]}"')
    con.execute(f'DROP TABLE "{other}"')
    con.close()
    con = store.open_store(db, catalog)
    assert _columns(con, table) == ["event_id", "file_id", *cols]
    assert _columns(con, other) == ["event_id", "file_id", *catalog.fact_tables[other]]
    con.close()


def test_a_store_whose_views_predate_ts_logged_is_diagnosed_as_before(tmp_path):
    """A store of this schema written before column ts_logged keeps its own views (a reader opens it
    read-only): the rows the diagnosis makes over its kept lines have its columns, and the verdict is
    the one the store gives with ts_logged."""
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path
    import duckdb
    bundle = Path(__file__).resolve().parents[2] / "sample_logs" / "torchrun_exception_skew"
    new = tmp_path / "new.duckdb"
    run = lambda *a: subprocess.run([sys.executable, "-m", "ranktrace.cli", *a], capture_output=True,  # noqa: E731
                                    text=True, check=True).stdout
    run("ingest", str(bundle), "--db", str(new), "-q")
    want = json.loads(run("diagnose", "--db", str(new), "--format", "json"))
    old = tmp_path / "old.duckdb"
    shutil.copytree(new, old)
    con = duckdb.connect(str(old / "ranktrace.duckdb"))
    con.execute(f"SET file_search_path = '{old}'")   # (the views read the parts relative to the store)
    for view in ("event_lines", "event_rows", "events"):
        sql = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = ?", [view]).fetchone()[0]
        cut = sql.replace(", ts AS ts_logged", "").replace(", ts_logged", "").replace(", r.ts_logged", "")
        assert "ts_logged" in sql and "ts_logged" not in cut, view
        con.execute(cut.replace("CREATE VIEW", "CREATE OR REPLACE VIEW", 1))
    con.execute("ALTER TABLE hot_src_stored DROP COLUMN ts_logged")
    con.close()
    got = json.loads(run("diagnose", "--db", str(old), "--format", "json"))
    assert got == want
