"""The store as a Parquet dataset for fleet-wide analysis (DuckDB, Spark, Trino).

    DIR/events/node=<host>/data_0.parquet     every event (all columns)
    DIR/<fact table>/node=<host>/...          each typed fact table, with the
                                              event's host/rank/ts/file/line
    DIR/files/files.parquet                   one row per input file
    DIR/kinds/kinds.parquet                   the kind catalogue
    DIR/_ranktrace.json                       what is where, row counts

Partitioned by `node` = the event's host ('_unknown' when the event has
none): a stable key across stores, and the usual filter in fleet queries.
The `host` column itself stays in the files unchanged (NULL stays NULL).
Readers: DuckDB `read_parquet('DIR/events/**/*.parquet', hive_partitioning
= true)`, Spark `spark.read.parquet("DIR/events")`, Trino (Hive connector,
partitioned_by = ARRAY['node']). Files starting with '_' are ignored by
Spark and Hive.

Rows keep the store's order (a file's lines together, in line order): one
DuckDB thread streams them through the Parquet writer in small row groups,
so memory stays bounded and the files are the same on every run. A sort by
host, rank and time held the whole store in memory (a 512 MB corpus's
store: 6.2 GB RSS, 27.6 s; streamed: 0.5 GB, 17.7 s). The export has a
DuckDB instance of its own (the store attached read-only): DuckDB keeps an
instance's spill directory once used, and the caller's is left alone.

--redact runs the report's redactor over every string: first over the
store's distinct strings, sorted by DuckDB (twice: to learn the names, then
to number them), then over the rows on their way from DuckDB to the Parquet
writer, a batch at a time. Python holds a batch and the redactor's names,
never the store's strings: a lookup table of them grew with the store (0.86
GB for a 512 MB corpus's store); now the peak is 0.74 GB, most of it DuckDB
within its 512 MB limit.
"""

from __future__ import annotations

import json
import shutil
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Callable

import duckdb

from ..report import data as D

PARTITION = "node"
STORE = "store"                     # the store's name in the export's own DuckDB instance
NODE = "_rt_node"                   # the column the partition is made from, while the rows are on their way
ROW_GROUP = 32_768                  # rows per Parquet row group: what each open partition buffers
# What the export may hold: DuckDB spills to DIR/SPILL beyond its memory
# limit; the partitioned writer flushes every ROW_GROUP rows and keeps at
# most 32 partitions' files open (more nodes than that: more files each).
EXPORT_SETTINGS = {"memory_limit": "'512MB'", "threads": "1", "partitioned_write_flush_threshold": str(ROW_GROUP),
                   "partitioned_write_max_open_files": "32"}
SPILL = ".ranktrace-spill"
# --redact reads strings and rows back this many at a time (a line is at most 1 MiB, a block
# at most its format's max_lines of them),
BATCH_ROWS = 64
# and keeps what it made of this many strings of up to CACHED_LEN characters (the values of the
# low-cardinality columns: host, kind, format, ...), at most ~100 MB
CACHED_STRINGS, CACHED_LEN = 100_000, 256


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _columns(con, table: str) -> dict[str, str]:
    """A table's columns in order: {name: type}."""
    return dict(con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'main' "
        "AND table_name = ? ORDER BY ordinal_position", [table]).fetchall())


def _string_columns(con, table: str) -> dict[str, str]:
    """VARCHAR and VARCHAR[] columns of a table: {name: type}."""
    return {c: t for c, t in _columns(con, table).items() if t in ("VARCHAR", "VARCHAR[]")}


def _redactor(con, tables: list[str]) -> tuple[Callable[[str | None], str | None], dict[str, int]]:
    """The report's redactor (report/redact.py) over every string of the
    exported tables, as a function of one string; and the redactor's counts.

    The redactor numbers its placeholders as it first meets each name, so it
    meets every distinct string of the store twice first, in sorted order:
    to learn the names known only in context, then to number them all. The
    export's rows, read in any order, then get those numbers (nothing is new
    to the redactor any more).

    Memory stays bounded whatever the store: DuckDB sorts the distinct
    strings (every line's raw text among them) within the export's limit,
    into temp table rt_vals, and hands them back BATCH_ROWS at a time;
    Python holds one batch, the redactor's names and a cache of
    the short strings (hosts, kinds, formats: the same on many rows)."""
    from ..report import known_hosts, known_pods
    from ..report.redact import Redactor
    sources = [f"SELECT {f'unnest({_q(c)})' if typ.endswith('[]') else _q(c)} AS v FROM {_q(t)}"
               for t in tables for c, typ in _string_columns(con, t).items()]
    con.execute("CREATE OR REPLACE TEMP TABLE rt_vals AS SELECT DISTINCT v "
                f"FROM ({' UNION ALL '.join(sources)}) WHERE v <> '' ORDER BY v")

    def distinct_values():   # in sorted order (the table's), a few at a time
        for batch in con.sql("SELECT v FROM rt_vals").to_arrow_reader(BATCH_ROWS):
            yield from batch.column(0).to_pylist()

    r = Redactor(hosts=known_hosts(con), pods=known_pods(con))
    for v in distinct_values():
        r.learn(v)
    for v in distinct_values():
        r.text(v)
    con.execute("DROP TABLE rt_vals")

    @lru_cache(maxsize=CACHED_STRINGS)
    def short(v: str) -> str:
        return r.text(v)

    def text(v: str | None) -> str | None:
        return v if not v else short(v) if len(v) <= CACHED_LEN else r.text(v)
    return text, r.summary()


def _cols(con, table: str, alias: str, cols: list[str] | None = None) -> str:
    """The select list of a table's columns (all, or `cols`)."""
    if cols is None:
        cols = list(_columns(con, table))
    return ", ".join(f"{alias}.{_q(c)}" for c in cols)


def _copy(con, select: str, to: str, redact: Callable[[str | None], str | None] | None,
          shape: str = "SELECT * FROM {}") -> None:
    """COPY the rows of `select`, as `shape` makes them, TO `to` (the target and its options);
    with `redact`, every string (and every string of a list) of the rows goes through it
    first: DuckDB streams the rows out, Python redacts them a batch at a time, DuckDB writes
    them."""
    if redact is None:
        con.execute(f"COPY ({shape.format(f'({select})')}) TO {to}")
        return
    import pyarrow as pa

    def redacted(batch: pa.RecordBatch) -> pa.RecordBatch:
        cols = []
        for col in batch.columns:
            if pa.types.is_string(col.type):
                col = pa.array([redact(v) for v in col.to_pylist()], type=col.type)
            elif pa.types.is_list(col.type) and pa.types.is_string(col.type.value_type):
                col = pa.array([v if v is None else [redact(u) for u in v] for v in col.to_pylist()], type=col.type)
            cols.append(col)
        return pa.RecordBatch.from_arrays(cols, schema=batch.schema)

    with con.cursor() as reader, con.cursor() as writer:   # connections of their own to the same database
        for c in (reader, writer):
            c.execute(f"USE {STORE}")
        rows = reader.sql(select).to_arrow_reader(BATCH_ROWS)
        out = pa.RecordBatchReader.from_batches(rows.schema, (redacted(b) for b in rows))  # noqa: F841 - SQL
        writer.execute(f"COPY ({shape.format('out')}) TO {to}")


@contextmanager
def _bounded(db: str | Path, spill: Path):
    """A connection of its own to store `db`, read-only, with EXPORT_SETTINGS,
    spilling into `spill` (inside the directory the user named); closed and
    `spill` removed afterwards. Its own DuckDB instance, because DuckDB keeps
    an instance's temp directory once it has spilled there (a RESET fails), so
    the caller's connection could not be given its own back."""
    from ..store import locate
    root, file = locate(db)
    # (the store's lines files are relative to its directory: store.py)
    con = duckdb.connect(config={"temp_directory": str(spill), "file_search_path": str(root.resolve())})
    try:
        con.execute(f"ATTACH {_lit(file)} AS {STORE} (READ_ONLY)")
        con.execute(f"USE {STORE}")
        con.execute("SET TimeZone = 'UTC'")
        for k, v in EXPORT_SETTINGS.items():
            con.execute(f"SET {k} = {v}")
        yield con
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def export_parquet(db: str | Path, out_dir: str, *, overwrite: bool = False, redact: bool = False) -> dict:
    """Store `db` (a path: the export reads it through a connection of its own) as a
    Parquet dataset in `out_dir`."""
    from .. import store
    store.open_readonly(db).close()   # a missing store, not a store, another version: the store's own messages
    d = Path(out_dir)
    if d.exists() and not d.is_dir():
        raise FileExistsError(f"{d}: exists and is not a directory")
    if d.exists() and any(d.iterdir()) and not overwrite:
        raise FileExistsError(f"{d}: directory is not empty (use --overwrite to replace its dataset)")
    d.mkdir(parents=True, exist_ok=True)
    with _bounded(db, d / SPILL) as con:
        return _export(con, d, redact)


def _export(con, d: Path, redact: bool) -> dict:
    have = D.tables(con)
    counts: dict[str, int] = {}
    text, redacted = _redactor(con, ["events", "files", *D.fact_tables(con)]) if redact else (None, None)
    # The partition: the event's host (a fact's own host column may differ), redacted with the rest.
    node = f"e.host AS {NODE}"
    opts = f"FORMAT PARQUET, PARTITION_BY ({PARTITION}), OVERWRITE_OR_IGNORE, COMPRESSION ZSTD, ROW_GROUP_SIZE {ROW_GROUP}"

    def partitioned(select: str, table: str) -> None:
        _copy(con, select, f"{_lit(d / table)} ({opts})", text,
              shape=f"SELECT * EXCLUDE ({NODE}), coalesce({NODE}, '_unknown') AS {PARTITION} FROM {{}}")

    partitioned(f"SELECT {_cols(con, 'events', 'e')}, {node} FROM events e", "events")
    counts["events"] = con.execute("SELECT count(*) FROM events").fetchone()[0]
    for t in D.fact_tables(con):
        cols = list(_columns(con, t))
        extra = [c for c in ("host", "rank", "ts", "file", "line") if c not in cols]
        sel = ", ".join([_cols(con, t, "f", cols)] + ([_cols(con, "events", "e", extra)] if extra else []))
        n = con.execute(f"SELECT count(*) FROM {_q(t)}").fetchone()[0]
        if n:
            partitioned(f"SELECT {sel}, {node} FROM {_q(t)} f LEFT JOIN events e USING (event_id)", t)
        else:  # an empty table still gets its schema (one empty file), so readers find it
            (d / t / f"{PARTITION}=_unknown").mkdir(parents=True, exist_ok=True)
            con.execute(f"COPY (SELECT {sel} FROM {_q(t)} f LEFT JOIN events e USING (event_id) LIMIT 0) "
                        f"TO {_lit(d / t / f'{PARTITION}=_unknown' / 'data_0.parquet')} "
                        f"(FORMAT PARQUET, COMPRESSION ZSTD)")
        counts[t] = n
    for t in ("files", "kinds"):
        if t in have:
            (d / t).mkdir(exist_ok=True)
            order = "file_id" if t == "files" else "kind"
            _copy(con, f"SELECT {_cols(con, t, t)} FROM {t} ORDER BY {order}",
                  f"{_lit(d / t / (t + '.parquet'))} (FORMAT PARQUET, COMPRESSION ZSTD)", text if t == "files" else None)
            counts[t] = con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
    manifest = {
        "generator": "ranktrace",
        **({"redacted": redacted} if redact else {}),
        "partitioned_by": PARTITION,
        "partition_value": "the event's host; '_unknown' when it has none",
        "tables": {t: {"rows": n, "path": f"{t}/" + ("" if t not in ("files", "kinds") else f"{t}.parquet"),
                       "partitioned": t not in ("files", "kinds")} for t, n in counts.items()},
        "read_with": {
            "duckdb": f"SELECT * FROM read_parquet('{d}/events/**/*.parquet', hive_partitioning = true)",
            "spark": f"spark.read.parquet('{d}/events')",
        },
    }
    (d / "_ranktrace.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return {"dir": str(d), "tables": counts}
