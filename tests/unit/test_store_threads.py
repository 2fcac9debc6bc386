"""DuckDB's threads follow the store's size: one for a store of few lines (a statement's set-up on
each thread costs more than the scan), every core beyond store.ONE_THREAD_BYTES of lines files; an
ingest that grows a store past it gives it every core again, and the verdict does not depend on it."""
from __future__ import annotations

import pytest

from ranktrace import store
from ranktrace.correlate import diagnose
from ranktrace.ingest.pipeline import ingest

from rt_testlib import REPO

BUNDLE = REPO / "sample_logs" / "torchrun_exception_skew"


def _files() -> list[str]:
    return sorted(str(p) for p in BUNDLE.rglob("*") if p.is_file() and p.suffix == ".log")


def _threads(con) -> int:
    return int(con.execute("SELECT current_setting('threads')").fetchone()[0])


def _default_threads() -> int:
    import duckdb
    with duckdb.connect() as con:
        n = _threads(con)
    if n == 1:
        pytest.skip("DuckDB runs one thread on this machine: nothing to tell apart")
    return n


def test_a_small_store_runs_on_one_thread_and_a_large_one_on_every_core(tmp_path, catalog, monkeypatch):
    db = tmp_path / "store"
    ingest(_files(), str(db), catalog)
    size = store.lines_bytes(db, 1 << 40)
    assert 0 < size <= store.ONE_THREAD_BYTES
    con = store.connect(db)
    try:
        assert _threads(con) == 1
        small = diagnose(con)["verdict"]
    finally:
        con.close()
    monkeypatch.setattr(store, "ONE_THREAD_BYTES", size - 1)   # the same store, now "large"
    con = store.connect(db)
    try:
        assert _threads(con) == _default_threads()
        assert diagnose(con)["verdict"] == small
    finally:
        con.close()


def test_an_ingest_that_grows_the_store_past_the_limit_gives_it_every_core(tmp_path, catalog, monkeypatch):
    files = _files()
    db = tmp_path / "store"
    ingest(files[:1], str(db), catalog)
    first = store.lines_bytes(db, 1 << 40)
    monkeypatch.setattr(store, "ONE_THREAD_BYTES", first)      # the next file's lines take it past
    seen = []
    real = store.fit_threads

    def spy(con, store_dir, parts=()):
        real(con, store_dir, parts)
        seen.append(_threads(con))
    monkeypatch.setattr(store, "fit_threads", spy)
    ingest(files[1:], str(db), catalog)
    assert seen[0] == 1                        # opened at `first` bytes: one thread
    assert seen[-1] == _default_threads()      # the merge and what follows it: every core
    assert store.lines_bytes(db, 1 << 40) > first


def test_lines_bytes_counts_only_lines_files_and_stops_at_the_limit(tmp_path):
    part = tmp_path / store.PARTS / "p1"
    part.mkdir(parents=True)
    (part / "event_lines-0.parquet").write_bytes(b"x" * 100)
    (part / "event_lines-1.parquet").write_bytes(b"x" * 50)
    (part / "kernel_oom.parquet").write_bytes(b"x" * 1000)
    assert store.lines_bytes(tmp_path, 1 << 20) == 150
    assert store.lines_bytes(tmp_path, 10) in (50, 100)       # stopped at the first file past 10
    assert store.lines_bytes(tmp_path / "nowhere", 10) == 0
    elsewhere = tmp_path / "incoming" / "p2"           # a part about to be merged, outside the store
    elsewhere.mkdir(parents=True)
    (elsewhere / "event_lines-0.parquet").write_bytes(b"x" * 7)
    assert store.lines_bytes(tmp_path, 1 << 20, (elsewhere, part)) == 157   # (a part counted once)
