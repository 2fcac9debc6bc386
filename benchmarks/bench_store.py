"""Where the lines live, measured on both sides: writing them, and the readers.

    python benchmarks/bench_store.py STORE              # writing the store's lines, each way alone
    python benchmarks/bench_store.py --readers STORE    # diagnose on copies of the store, each way

A store's lines are Parquet files written by the engine's parser threads
(ranktrace.store, crates/engine/src/lines_parquet.rs). The way before them
was a DuckDB row per line (store schema 5). This compares the two on the same
lines of a store made by `ranktrace ingest` (e.g. `bench_ingest.py --keep`):

Writing (the lines read into memory first, then stored, nothing else running,
one thread; CPU seconds and input MB per CPU-second):
  - `duckdb rows`: INSERTs of whole row groups into a DuckDB table, as the
    row writer of schema 5 did (its floor: issue 12);
  - `parquet (pyarrow)`: the same rows as one Parquet file, zstd, by Arrow C++.
The engine's own writer alone is `cargo run --release --example parquet_alone
-- SPEC.json N FILE...` (crates/engine/examples: it needs the engine's batches).

Readers (--readers): `ranktrace diagnose` in a child process on copies of the
store (CPU seconds, and the ratio to the store as it is; the verdicts must be
the same, or a layout lost lines):
  - `as stored`: the store itself (lines as Parquet parts);
  - `lines in duckdb`: the same lines copied into a DuckDB table, view
    event_lines over it (the reader side of schema 5).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import duckdb

from ranktrace import store

ROW_GROUP = 122_880


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def write_duckdb(rows, path: Path) -> float:
    con = duckdb.connect(str(path))
    con.execute("SET threads = 1")
    con.execute("SET preserve_insertion_order = false")
    con.execute("CREATE TABLE event_lines AS SELECT * FROM rows LIMIT 0")
    c0 = _cpu()
    for i in range(0, rows.num_rows, ROW_GROUP):
        chunk = rows.slice(i, ROW_GROUP)  # noqa: F841 - referenced by name in SQL
        con.execute("INSERT INTO event_lines SELECT * FROM chunk")
    con.execute("CHECKPOINT")
    cpu = _cpu() - c0
    con.close()
    return cpu


def write_pyarrow(rows, path: Path) -> float:
    import pyarrow.parquet as pq
    c0 = _cpu()
    pq.write_table(rows, path, compression="zstd", row_group_size=ROW_GROUP)
    return _cpu() - c0


def writing(src: Path, tmp: Path) -> list[dict]:
    con = store.connect(src)
    rows = con.sql("SELECT * FROM event_lines").to_arrow_table().combine_chunks()
    input_bytes = con.execute("SELECT sum(bytes) FROM files").fetchone()[0] or 0
    con.close()
    out = []
    print(f"lines {rows.num_rows:,}, input {input_bytes / 1e6:,.0f} MB; CPU s to store them, MB of input per CPU-s, size")
    for name, fn in (("duckdb rows", write_duckdb), ("parquet (pyarrow)", write_pyarrow)):
        path = tmp / name.replace(" ", "_")
        cpu = max(fn(rows, path), 0.01)   # os.times() ticks in 10 ms
        size = path.stat().st_size
        out.append({"layout": name, "cpu_s": cpu, "mb_per_cpu_s": input_bytes / 1e6 / cpu, "bytes": size})
        print(f"{name:18s} {cpu:6.2f} s CPU {input_bytes / 1e6 / cpu:7.1f} MB/s per core {size / 1e6:10.1f} MB", flush=True)
    return out


# The copies of --readers: (name, SQL run in a writable copy of the store).
READER_LAYOUTS = [
    ("as stored", []),
    ("lines in duckdb", [
        "CREATE TABLE event_lines_table AS SELECT * FROM event_lines",
        "CREATE OR REPLACE VIEW event_lines AS SELECT * FROM event_lines_table",
    ]),
]


def reader_layout(src: Path, name: str, steps: list[str], work: Path) -> Path:
    """A copy of store `src` with its lines kept as layout `name`."""
    d = work / name.replace(" ", "_")
    shutil.copytree(src, d)
    if steps:
        con = store.connect(d, read_only=False)
        try:
            for sql in steps:
                con.execute(sql)
            con.execute("CHECKPOINT")
        finally:
            con.close()
    return d


def readers(src: Path, tmp: Path) -> list[dict]:
    """`ranktrace diagnose` on each of READER_LAYOUTS of store `src`."""
    import bench_ingest
    import measure
    out, first = [], None
    for name, steps in READER_LAYOUTS:
        db = reader_layout(src, name, steps, tmp)
        r = measure.run([bench_ingest.ranktrace_exe(), "diagnose", "--db", str(db), "--format", "json"]).check()
        verdict = json.loads(r.stdout)["verdict"]
        first = first or (r, verdict)
        if verdict != first[1]:
            sys.exit(f"{name}: another verdict than the store's own ({verdict} vs {first[1]}): the layout lost lines")
        out.append({"layout": name, "diagnose_s": r.wall_s, "diagnose_cpu_s": r.cpu_s,
                    "peak_rss_mib": r.peak_rss_mib, "cpu_vs_stored": r.cpu_s / first[0].cpu_s})
        print(f"{name:17s} diagnose {r.wall_s:6.2f} s wall {r.cpu_s:6.2f} s CPU {r.peak_rss_mib:6.0f} MiB  "
              f"{r.cpu_s / first[0].cpu_s:5.2f}x the stored layout's CPU", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path, help="a store made by ranktrace ingest")
    ap.add_argument("--readers", action="store_true", help="diagnose copies of the store in each layout")
    args = ap.parse_args()
    if not (args.store / store.DB_FILE).exists():
        sys.exit(f"{args.store}: no such store (make one with benchmarks/bench_ingest.py --keep)")
    with tempfile.TemporaryDirectory(prefix="rt-bench-store-") as tmp:
        if args.readers:
            readers(args.store, Path(tmp))
        else:
            writing(args.store, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
