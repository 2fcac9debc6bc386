"""How fast DuckDB alone stores events: the floor under `ranktrace ingest`.

    python benchmarks/bench_store.py STORE.duckdb

Reads the events of a store made by `ranktrace ingest` (for example
`bench_ingest.py --keep`) into memory, as the engine hands them over (rows
and their classes), then inserts them into fresh stores with the same
schema, nothing else running:
  - `one insert`: a single INSERT, all cores: the most DuckDB can do;
  - `writer`: as ranktrace's writer does (whole row groups per INSERT, one
    DuckDB thread, a commit every writer.COMMIT_ROWS rows);
  - `300k inserts`: INSERTs of 300 k rows and two threads, as the writer did
    before (every INSERT leaves part-full row groups to rewrite).
Prints wall and CPU seconds and rows/s for each; no parsing is involved.

With --readers, the other side of the same layouts: copies of the store whose
event_lines are kept another way, each diagnosed by `ranktrace diagnose` in a
child process (CPU seconds, and its ratio to the store as it is; the verdicts
must be the same, or the layout lost something):
  - `as stored`: the store itself;
  - `rows as parquet`: event_lines one Parquet file (zstd) beside the store,
    event_lines a view over it (the bulk of lines where writing is cheap);
  - `message as text`: every line's message stored as text (schema 4), not
    cut out of raw by view event_rows.

Then the store layouts issue 12 asks to weigh, each storing every event once
(one thread, whole row groups as the writer does), with CPU seconds and the
input bytes stored per CPU-second: the ceiling of an ingest on one core
whose parsing cost nothing:
  - `wide`: view `events` as a table, one wide row per line (schema 2);
  - `rows + classes`: the store's tables: a line's own columns, and what
    many lines share once per class (schema 3, crates/engine/src/classes.rs),
    the message a span of raw (schema 5);
  - `+ message text`: the same with every message's text stored (schema 4);
  - `split`: significant events (role other than info) wide, the bulk
    narrow (ids, line, time, host, rank, pid, raw; NARROW below);
  - `raw only`: event_id and raw: the least a store with every line's text
    can hold;
  - `parquet wide`, `parquet narrow`: the same rows as Parquet files (zstd)
    written by Arrow C++ (pyarrow), for lines kept as files beside the store.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from ranktrace import store
from ranktrace.ingest import writer


def _insert_all(con, table, classes, size: int, commit_rows: int | None) -> None:
    n = table.num_rows
    step = size or n
    in_txn = 0
    con.execute("INSERT INTO event_classes BY NAME SELECT * FROM classes")
    for i in range(0, n, step):
        chunk = table.slice(i, step)  # noqa: F841 - referenced by name in SQL
        if not in_txn:
            con.begin()
        con.execute("INSERT INTO event_lines BY NAME SELECT * FROM chunk")
        in_txn += chunk.num_rows
        if commit_rows is None or in_txn >= commit_rows:
            con.commit()
            in_txn = 0
    if in_txn:
        con.commit()


def run(events, classes, path: Path, *, size: int, threads: int | None, commit_rows: int | None
        ) -> tuple[float, float]:
    con = store.open_store(path)
    con.execute("SET preserve_insertion_order = false")
    if threads:
        con.execute(f"SET threads = {threads}")
    t0, c0 = time.perf_counter(), os.times()
    _insert_all(con, events, classes, size, commit_rows)
    con.execute("CHECKPOINT")
    c1, t1 = os.times(), time.perf_counter()
    got = con.execute("SELECT count(*) FROM events").fetchone()[0]
    con.close()
    if got != events.num_rows:
        sys.exit(f"{path.name}: {got:,} events stored of {events.num_rows:,}")
    return t1 - t0, (c1.user - c0.user) + (c1.system - c0.system)


NARROW = ["event_id", "file_id", "line", "end_line", "ts", "host", "rank", "local_rank", "pid", "raw"]


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def layout_duckdb(events, path: Path, tables: list[tuple[str, list[str] | None, str | None]],
                  extra: list[tuple[str, object]] = ()) -> float:
    """CPU seconds to store `events` as `tables`: (name, columns or None for
    all, a filter on role or None), and the tables `extra` (name, Arrow
    table) beside them. The rows are split before the clock starts: a core
    would hand them over split."""
    import pyarrow.compute as pc
    parts = []
    for name, cols, role in tables:
        part = events if role is None else events.filter(
            pc.equal(events["role"], "info") if role == "info" else pc.not_equal(events["role"], "info"))
        parts.append((name, (part.select(cols) if cols else part).combine_chunks()))
    con = duckdb.connect(str(path))
    for name, rel in extra:  # noqa: B007 - rel is referenced by name in SQL
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM rel LIMIT 0")
    con.execute("SET threads = 1")
    con.execute("SET preserve_insertion_order = false")
    c0 = _cpu()
    stored = 0
    for name, part in parts:
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM part LIMIT 0")
        for i in range(0, part.num_rows, writer.ROW_GROUP):
            chunk = part.slice(i, writer.ROW_GROUP)  # noqa: F841 - referenced by name in SQL
            con.execute(f"INSERT INTO {name} SELECT * FROM chunk")
        stored += part.num_rows
    for name, rel in extra:  # noqa: B007 - rel is referenced by name in SQL
        con.execute(f"INSERT INTO {name} SELECT * FROM rel")
    con.execute("CHECKPOINT")
    cpu = _cpu() - c0
    con.close()
    if stored != events.num_rows:
        sys.exit(f"{path.name}: {stored:,} events stored of {events.num_rows:,}")
    return cpu


def layout_parquet(events, path: Path, cols: list[str] | None) -> float:
    import pyarrow.parquet as pq
    c0 = _cpu()
    pq.write_table(events.select(cols) if cols else events, path, compression="zstd")
    return _cpu() - c0


def layouts(events, rows, rows_text, classes, input_bytes: int, tmp: Path) -> None:
    cases = [
        ("wide", lambda p: layout_duckdb(events, p, [("events", None, None)])),
        ("rows + classes", lambda p: layout_duckdb(rows, p, [("event_lines", None, None)],
                                                   [("event_classes", classes)])),
        ("+ message text", lambda p: layout_duckdb(rows_text, p, [("event_lines", None, None)],
                                                   [("event_classes", classes)])),
        ("split", lambda p: layout_duckdb(events, p, [("significant", None, "significant"),
                                                      ("bulk", NARROW, "info")])),
        ("raw only", lambda p: layout_duckdb(events, p, [("lines", ["event_id", "raw"], None)])),
        ("parquet wide", lambda p: layout_parquet(events, p, None)),
        ("parquet narrow", lambda p: layout_parquet(events, p, NARROW)),
    ]
    print(f"layouts     input {input_bytes / 1e6:,.0f} MB; CPU s to store it, MB of input per CPU-second, size")
    for name, fn in cases:
        path = tmp / f"layout_{name.replace(' ', '_')}"
        cpu = fn(path)
        cpu = max(cpu, 0.01)  # os.times() ticks in 10 ms
        print(f"{name:15s} {cpu:6.2f} s CPU {input_bytes / 1e6 / cpu:7.1f} MB/s per core {path.stat().st_size / 1e6:10.3f} MB")


# The copies of --readers: (name, SQL turning a copy's table event_lines into the layout; {dir}
# is the copy's directory). Views event_rows, events, events_classified and events_aligned are
# made again over the new event_lines (queries/schema/002_views.sql, queries/store/clock.sql).
READER_LAYOUTS = [
    ("as stored", []),
    ("rows as parquet", [
        "COPY event_lines TO '{dir}/event_lines.parquet' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)",
        "DROP TABLE event_lines",
        "CREATE VIEW event_lines AS SELECT * FROM read_parquet('{dir}/event_lines.parquet')",
    ]),
    # schema 4: every line's message stored as text (view event_rows reads it instead of cutting raw)
    ("message as text", [
        "UPDATE event_lines SET message = substr(raw, message_at, message_len) WHERE message IS NULL",
    ]),
]


def reader_layout(src: Path, name: str, steps: list[str], work: Path) -> Path:
    """A copy of store `src` with its event_lines kept as layout `name`."""
    import shutil

    from ranktrace.resources import data_dir
    d = work / name.replace(" ", "_")
    d.mkdir(parents=True, exist_ok=True)
    db = d / "inc.duckdb"
    shutil.copy(src, db)
    con = duckdb.connect(str(db))
    try:
        if steps:
            for view in ("events_aligned", "events_classified", "events", "event_rows"):
                con.execute(f"DROP VIEW IF EXISTS {view}")
            for sql in steps:
                con.execute(sql.format(dir=d)).fetchall()
            con.execute((data_dir("queries") / "schema" / "002_views.sql").read_text())
            con.execute((data_dir("queries") / "store" / "clock.sql").read_text())
            con.execute("CHECKPOINT")
    finally:
        con.close()
    return db


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
                    "cpu_vs_stored": r.cpu_s / first[0].cpu_s})
        print(f"{name:17s} diagnose {r.wall_s:6.2f} s wall {r.cpu_s:6.2f} s CPU  {r.cpu_s / first[0].cpu_s:5.2f}x the stored "
              "layout's CPU", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path, help="a store made by ranktrace ingest")
    ap.add_argument("--readers", action="store_true", help="diagnose copies of the store in other layouts")
    args = ap.parse_args()
    if not args.store.exists():
        sys.exit(f"{args.store}: no such store (make one with benchmarks/bench_ingest.py --keep)")
    if args.readers:
        with tempfile.TemporaryDirectory(prefix="rt-bench-layouts-") as tmp:
            readers(args.store, Path(tmp))
        return 0
    src = duckdb.connect(str(args.store), read_only=True)
    events = src.sql("SELECT * FROM events").to_arrow_table()
    # the rows as the engine hands them over (the message a span of raw), and with its text (schema 4)
    rows = src.sql("SELECT * EXCLUDE (message) FROM event_lines").to_arrow_table()
    rows_text = src.sql("SELECT * FROM event_rows").to_arrow_table()
    classes = src.sql("SELECT * FROM event_classes").to_arrow_table()
    input_bytes = src.execute("SELECT sum(bytes) FROM files").fetchone()[0] or 0
    src.close()
    print(f"events      {events.num_rows:,} rows, {events.nbytes / 1e6:,.0f} MB in memory")
    cases = [("one insert", dict(size=0, threads=None, commit_rows=None)),
             ("writer", dict(size=writer.ROW_GROUP, threads=1, commit_rows=writer.COMMIT_ROWS)),
             ("300k inserts", dict(size=300_000, threads=2, commit_rows=300_000))]
    with tempfile.TemporaryDirectory(prefix="rt-bench-store-") as tmp:
        for name, kw in cases:
            wall, cpu = run(rows, classes, Path(tmp) / f"{name.replace(' ', '_')}.duckdb", **kw)
            print(f"{name:12s} {wall:6.2f} s wall {cpu:6.2f} s CPU  {events.num_rows / wall / 1e6:5.2f} M rows/s")
        if input_bytes:
            layouts(events, rows, rows_text, classes, input_bytes, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
