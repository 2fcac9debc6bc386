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
