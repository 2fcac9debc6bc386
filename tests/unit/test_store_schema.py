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


def test_a_one_table_store_moves_to_the_keyed_tables(tmp_path, catalog):
    # Stores before schema 3 kept events in one wide table (and, older still,
    # without `task`): opening one for writing moves its events over, and
    # the view `events` shows them as they were.
    from ranktrace.ingest.pipeline import ingest
    from rt_testlib import REPO
    db = str(tmp_path / "s.duckdb")
    ingest([str(REPO / "sample_logs" / "torchrun_rdzv_missing_node")], db, catalog)
    con = store.open_store(db, catalog)
    before = sorted(con.execute("SELECT * EXCLUDE (task) FROM events").fetchall(), key=repr)
    assert len(before) > 50
    con.execute("CREATE TABLE wide AS SELECT * EXCLUDE (task) FROM events")
    con.execute("DROP VIEW events")
    con.execute("DROP TABLE event_rows; DROP TABLE event_sources; DROP TABLE event_classes")
    con.execute("ALTER TABLE wide RENAME TO events")
    con.close()

    con = store.open_store(db, catalog)
    kinds = dict(con.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall())
    assert kinds["events"] == "VIEW" and "events_v2" not in kinds
    after = sorted(con.execute("SELECT * EXCLUDE (task) FROM events").fetchall(), key=repr)
    assert after == before
    assert con.execute("SELECT count(*) FROM events WHERE task IS NOT NULL").fetchone()[0] == 0
    # Every event row has its source and class, each key names one combination.
    for dim, key in (("event_sources", "source_id"), ("event_classes", "class_id")):
        assert con.execute(f"SELECT count(*) FROM event_rows r ANTI JOIN {dim} d USING ({key})").fetchone()[0] == 0
    con.close()


def test_keyed_columns_are_the_view(tmp_path, catalog):
    # store.py names which columns live where; the schema file must agree.
    con = store.open_store(str(tmp_path / "s.duckdb"), catalog)
    assert _columns(con, "event_sources") == ["source_id", *store.SOURCE_COLUMNS]
    assert _columns(con, "event_classes") == ["class_id", *store.CLASS_COLUMNS]
    assert _columns(con, "event_rows") == [*store.ROW_COLUMNS, "source_id", "class_id"]
    view = set(_columns(con, "events"))
    assert view == (set(store.SOURCE_COLUMNS) | set(store.CLASS_COLUMNS) | set(store.ROW_COLUMNS)) - {"message_at"}
    con.close()
