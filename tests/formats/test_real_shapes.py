"""Issue 2's bar on ../shared/real_log_shapes: every file ingests without
error, >= 95% of non-blank lines are claimed, every [rankN]: line has rank
N, every NCCL line has its host, every line that begins with a timestamp
has ts."""

import re

import pytest

from rt_testlib import SHAPES
from ranktrace.store import connect as store_connect

pytestmark = pytest.mark.skipif(not SHAPES.is_dir(), reason=f"{SHAPES} not present")


@pytest.fixture(scope="module")
def shapes_store(tmp_path_factory, catalog):
    import duckdb
    from ranktrace.ingest.pipeline import ingest
    db = tmp_path_factory.mktemp("shapes") / "shapes.duckdb"
    summary = ingest([str(SHAPES)], str(db), catalog)
    con = store_connect(str(db))
    yield summary, con
    con.close()


def test_every_file_ingests_without_error(shapes_store):
    summary, _ = shapes_store
    bad = [(f.path, f.status, f.problems) for f in summary.files if f.status != "ingested"]
    assert bad == []


def test_claimed_share(shapes_store):
    _, con = shapes_store
    # Non-blank lines: an event covers end_line - line + 1 lines.
    total, raw = con.execute("""
        SELECT sum(end_line - line + 1), sum(CASE WHEN format = 'raw' THEN 1 ELSE 0 END)
        FROM events WHERE file NOT LIKE '%.json' AND file NOT LIKE '%README.md'""").fetchone()
    assert (total - raw) / total >= 0.95, f"{raw} of {total} lines unclaimed"


def test_rank_prefixed_lines_have_their_rank(shapes_store):
    _, con = shapes_store
    rows = con.execute(r"""
        SELECT file, line, rank, raw FROM events
        WHERE regexp_matches(raw, '^(?:\S+ )*\[rank\d+\]:') AND end_line = line AND file LIKE '%.log'""").fetchall()
    assert rows, "the shapes have [rankN]: lines"
    wrong = [(f, ln, r, raw[:80]) for f, ln, r, raw in rows
             if r != int(re.search(r"\[rank(\d+)\]:", raw).group(1))]
    assert wrong == []


def test_nccl_lines_have_their_host(shapes_store):
    _, con = shapes_store
    rows = con.execute(r"""
        SELECT file, line, host, raw FROM events
        WHERE regexp_matches(raw, '\[\d+\] (?:\S+ )?NCCL (?:INFO|WARN)') AND file LIKE '%.log'""").fetchall()
    assert len(rows) > 50
    assert [(f, ln, raw[:80]) for f, ln, h, raw in rows if not h] == []


def test_lines_beginning_with_a_time_have_ts(shapes_store):
    _, con = shapes_store
    rows = con.execute(r"""
        SELECT file, line, ts_kind, raw FROM events
        WHERE regexp_matches(raw, '^\s?(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[?[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|[IWEF]\d{4} \d\d:\d\d:\d\d)')
          AND file LIKE '%.log'
    """).fetchall()
    assert len(rows) > 20
    assert [(f, ln, k, raw[:80]) for f, ln, k, raw in rows if k not in ("exact", "local", "year_inferred", "envelope", "collector")] == []
