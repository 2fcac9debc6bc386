"""store.table_exists: the connection's catalog lookup (DuckDB 2) and the statement over the catalog
functions (any DuckDB) give the same answers on a real store in the middle of a diagnosis, and each
answer is whether a statement can read that name."""
from __future__ import annotations

import duckdb
import pytest

from ranktrace.correlate import diagnose
from ranktrace.store import table_exists, table_exists_by_statement

from rt_testlib import REPO


def _readable(con, name: str) -> bool:
    try:
        con.execute(f'SELECT * FROM "{name}" LIMIT 0')
        return True
    except duckdb.CatalogException:
        return False


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory, catalog):
    from ranktrace.ingest.pipeline import ingest
    from ranktrace.store import connect
    bundle = REPO / "sample_logs" / "torchrun_restart_resume"
    files = sorted(str(p) for p in bundle.rglob("*") if p.is_file() and p.name != "expected_verdict.json")
    db = str(tmp_path_factory.mktemp("catalog") / "store")
    ingest(files, db, catalog)
    con = connect(db)
    diagnose(con)   # leaves the diagnosis' temp tables and views beside the store's
    yield con
    con.close()


def test_both_lookups_answer_alike_and_as_a_statement_reads(diagnosed):
    con = diagnosed
    if not hasattr(con, "_table_kind"):
        pytest.skip("this DuckDB has no catalog lookup on its connection: table_exists is the statement")
    names = sorted({r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() UNION SELECT view_name FROM duckdb_views() WHERE NOT internal"
    ).fetchall()})
    assert len(names) > 50   # the store's tables and the diagnosis' temp ones
    con.execute("CREATE TEMP TABLE gone_soon (a INT)")
    con.execute("CREATE TEMP VIEW over_gone AS SELECT * FROM gone_soon")
    con.execute("DROP TABLE gone_soon")
    for name in names + ["over_gone", "gone_soon", "no_such_table", "events_aligned_x"]:
        fast, slow = table_exists(con, name), table_exists_by_statement(con, name)
        assert fast == slow, name
        if name != "over_gone":   # a view whose table is gone exists, and cannot be read
            assert fast == _readable(con, name), name
    assert table_exists(con, "over_gone") and not table_exists(con, "gone_soon")
