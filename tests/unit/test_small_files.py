"""Small files are parsed together (pipeline.parse_small_files): the store
must be exactly what parsing them one by one gives."""

import duckdb
import pytest

from ranktrace.ingest import pipeline
from rt_testlib import REPO, SHAPES, write

TABLES_SKIP = {"meta"}


def _dump(db):
    con = duckdb.connect(db, read_only=True)
    out = {}
    for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE table_name NOT IN ('meta')").fetchall():
        cols = "* EXCLUDE (ingested_at)" if t == "files" else "*"
        out[t] = sorted(map(repr, con.execute(f'SELECT {cols} FROM "{t}"').fetchall()))
    con.close()
    return out


def test_grouped_small_files_store_the_same_as_one_by_one(tmp_path, catalog, monkeypatch):
    paths = [str(REPO / "sample_logs"), str(SHAPES)]
    grouped = str(tmp_path / "grouped.duckdb")
    pipeline.ingest(paths, grouped, catalog, workers=2)
    monkeypatch.setattr(pipeline, "SMALL_FILE", 0)   # nothing is small: one file at a time
    single = str(tmp_path / "single.duckdb")
    pipeline.ingest(paths, single, catalog, workers=2)
    a, b = _dump(grouped), _dump(single)
    assert len(a["events"]) > 5000 and len(a["files"]) > 300
    assert a.keys() == b.keys()
    for t in a:
        assert a[t] == b[t], t


def test_files_of_a_group_keep_apart(tmp_path, ingest_to):
    # b.log starts with lines that have no time of their own and a traceback:
    # neither the time nor the block of a.log may reach into it.
    a = write(tmp_path / "in" / "a.log",
              "2026-03-02T03:12:09.481Z host-a kernel: hello\n"
              "Traceback (most recent call last):\n"
              '  File "x.py", line 1, in <module>\n')
    b = write(tmp_path / "in" / "b.log",
              '  File "y.py", line 2, in <module>\n'
              "ValueError: boom\n"
              "plain words\n")
    assert pipeline.is_small(next(iter(pipeline.discover([str(a)], print))))
    _s, con = ingest_to([tmp_path / "in"])
    rows = con.execute("SELECT file, line, end_line, ts, ts_kind FROM events ORDER BY file, line").fetchall()
    b_rows = [r for r in rows if r[0].endswith("b.log")]
    assert b_rows and all(r[3] is None and r[4] == "none" for r in b_rows), b_rows
    a_rows = [r for r in rows if r[0].endswith("a.log")]
    assert all(r[2] <= 3 for r in a_rows)        # a's traceback ends with a.log
    assert {r[1] for r in b_rows} >= {1}
