"""How fast DuckDB alone stores events: the floor under `ranktrace ingest`.

    python benchmarks/bench_store.py STORE.duckdb

Reads the events of a store made by `ranktrace ingest` (for example
`bench_ingest.py --keep`) into memory, then inserts them into fresh stores
with the same schema, nothing else running:
  - `one insert`: a single INSERT, all cores: the most DuckDB can do;
  - `writer`: as ranktrace's writer does (whole row groups per INSERT, one
    DuckDB thread, a commit every writer.COMMIT_ROWS rows);
  - `300k inserts`: INSERTs of 300 k rows and two threads, as the writer did
    before (every INSERT leaves part-full row groups to rewrite).
Prints wall and CPU seconds and rows/s for each; no parsing is involved.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from ranktrace import store
from ranktrace.ingest import writer


def _insert_all(con, table, size: int, commit_rows: int | None) -> None:
    n = table.num_rows
    step = size or n
    in_txn = 0
    for i in range(0, n, step):
        chunk = table.slice(i, step)  # noqa: F841 - referenced by name in SQL
        if not in_txn:
            con.begin()
        con.execute("INSERT INTO events BY NAME SELECT * FROM chunk")
        in_txn += chunk.num_rows
        if commit_rows is None or in_txn >= commit_rows:
            con.commit()
            in_txn = 0
    if in_txn:
        con.commit()


def run(events, path: Path, *, size: int, threads: int | None, commit_rows: int | None) -> tuple[float, float]:
    con = store.open_store(path)
    con.execute("SET preserve_insertion_order = false")
    if threads:
        con.execute(f"SET threads = {threads}")
    t0, c0 = time.perf_counter(), os.times()
    _insert_all(con, events, size, commit_rows)
    con.execute("CHECKPOINT")
    c1, t1 = os.times(), time.perf_counter()
    got = con.execute("SELECT count(*) FROM events").fetchone()[0]
    con.close()
    if got != events.num_rows:
        sys.exit(f"{path.name}: {got:,} events stored of {events.num_rows:,}")
    return t1 - t0, (c1.user - c0.user) + (c1.system - c0.system)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path, help="a store made by ranktrace ingest")
    args = ap.parse_args()
    if not args.store.exists():
        sys.exit(f"{args.store}: no such store (make one with benchmarks/bench_ingest.py --keep)")
    src = duckdb.connect(str(args.store), read_only=True)
    events = src.sql("SELECT * FROM events").to_arrow_table()
    src.close()
    print(f"events      {events.num_rows:,} rows, {events.nbytes / 1e6:,.0f} MB in memory")
    cases = [("one insert", dict(size=0, threads=None, commit_rows=None)),
             ("writer", dict(size=writer.ROW_GROUP, threads=1, commit_rows=writer.COMMIT_ROWS)),
             ("300k inserts", dict(size=300_000, threads=2, commit_rows=300_000))]
    with tempfile.TemporaryDirectory(prefix="rt-bench-store-") as tmp:
        for name, kw in cases:
            wall, cpu = run(events, Path(tmp) / f"{name.replace(' ', '_')}.duckdb", **kw)
            print(f"{name:12s} {wall:6.2f} s wall {cpu:6.2f} s CPU  {events.num_rows / wall / 1e6:5.2f} M rows/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
