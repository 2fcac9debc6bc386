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
store: 6.2 GB RSS, 27.6 s; streamed: 0.5 GB, 17.7 s).
"""

from __future__ import annotations

import json
import shutil
from contextlib import contextmanager
from pathlib import Path

from ..report import data as D

PARTITION = "node"
ROW_GROUP = 32_768                  # rows per Parquet row group: what each open partition buffers
# What the export may hold: DuckDB spills to DIR/SPILL beyond its memory
# limit; the partitioned writer flushes every ROW_GROUP rows and keeps at
# most 32 partitions' files open (more nodes than that: more files each).
EXPORT_SETTINGS = {"memory_limit": "'512MB'", "threads": "1", "partitioned_write_flush_threshold": str(ROW_GROUP),
                   "partitioned_write_max_open_files": "32"}
SPILL = ".ranktrace-spill"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _string_columns(con, table: str) -> dict[str, str]:
    """VARCHAR and VARCHAR[] columns of a table: {name: type}."""
    return {c: t for c, t in con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'main' "
        "AND table_name = ? ORDER BY ordinal_position", [table]).fetchall() if t in ("VARCHAR", "VARCHAR[]")}


def _install_redactor(con, tables: list[str]) -> dict[str, int]:
    """SQL macro rt_redact(VARCHAR): the report's redactor (report/redact.py)
    over every string of the exported tables, as a lookup table. Every
    distinct string is learnt and mapped first, in sorted order, so the
    placeholders do not depend on the order rows are read in. Returns the
    redactor's counts."""
    import polars as pl

    from ..report import known_hosts, known_pods
    from ..report.redact import Redactor
    values: set[str] = set()
    for t in tables:
        for c, typ in _string_columns(con, t).items():
            expr = f"unnest({_q(c)})" if typ.endswith("[]") else _q(c)
            for (v,) in con.execute(f"SELECT DISTINCT {expr} FROM {_q(t)}").fetchall():
                if v:
                    values.add(v)
    ordered = sorted(values)
    r = Redactor(hosts=known_hosts(con), pods=known_pods(con))
    for v in ordered:
        r.learn(v)
    changed = [(v, w) for v, w in ((v, r.text(v)) for v in ordered) if w != v]
    rt_map = pl.DataFrame({"v": [v for v, _ in changed], "r": [w for _, w in changed]},  # noqa: F841 - SQL
                          schema={"v": pl.Utf8, "r": pl.Utf8})
    con.execute("CREATE OR REPLACE TEMP TABLE rt_map AS SELECT * FROM rt_map")
    con.execute("CREATE OR REPLACE TEMP MACRO rt_redact(x) AS coalesce((SELECT r FROM rt_map WHERE v = x), x)")
    return r.summary()


def _cols(con, table: str, alias: str, redact: bool, cols: list[str] | None = None) -> str:
    """The select list of a table, its strings through rt_redact when redacting."""
    strs = _string_columns(con, table) if redact else {}
    if cols is None:
        cols = [r[0] for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'main' AND table_name = ? "
            "ORDER BY ordinal_position", [table]).fetchall()]
    out = []
    for c in cols:
        ref = f"{alias}.{_q(c)}"
        if c in strs:
            ref = (f"CASE WHEN len({ref}) > 0 THEN (SELECT list(rt_redact(u)) FROM unnest({ref}) _u(u)) ELSE {ref} END"
                   if strs[c].endswith("[]") else f"rt_redact({ref})")
            ref += f" AS {_q(c)}"
        out.append(ref)
    return ", ".join(out)


@contextmanager
def _bounded(con, spill: Path):
    """`con` set to EXPORT_SETTINGS, spilling into `spill` (inside the
    directory the user named); DuckDB's defaults back afterwards (a value
    read back, such as '2.7 GiB', does not set the same limit again),
    `spill` removed."""
    try:
        for k, v in EXPORT_SETTINGS.items():
            con.execute(f"SET {k} = {v}")
        con.execute(f"SET temp_directory = {_lit(spill)}")
        yield
    finally:
        for k in (*EXPORT_SETTINGS, "temp_directory"):
            con.execute(f"RESET {k}")
        shutil.rmtree(spill, ignore_errors=True)


def export_parquet(con, out_dir: str, *, overwrite: bool = False, redact: bool = False) -> dict:
    d = Path(out_dir)
    if d.exists() and not d.is_dir():
        raise FileExistsError(f"{d}: exists and is not a directory")
    if d.exists() and any(d.iterdir()) and not overwrite:
        raise FileExistsError(f"{d}: directory is not empty (use --overwrite to replace its dataset)")
    d.mkdir(parents=True, exist_ok=True)
    with _bounded(con, d / SPILL):
        return _export(con, d, redact)


def _export(con, d: Path, redact: bool) -> dict:
    have = D.tables(con)
    counts: dict[str, int] = {}
    redacted = _install_redactor(con, ["events", "files", *D.fact_tables(con)]) if redact else None
    host = "rt_redact(e.host)" if redact else "e.host"
    node = f"coalesce({host}, '_unknown') AS {PARTITION}"
    opts = f"FORMAT PARQUET, PARTITION_BY ({PARTITION}), OVERWRITE_OR_IGNORE, COMPRESSION ZSTD, ROW_GROUP_SIZE {ROW_GROUP}"

    con.execute(f"COPY (SELECT {_cols(con, 'events', 'e', redact)}, {node} FROM events e) "
                f"TO {_lit(d / 'events')} ({opts})")
    counts["events"] = con.execute("SELECT count(*) FROM events").fetchone()[0]
    for t in D.fact_tables(con):
        cols = [r[0] for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'main' AND table_name = ? "
            "ORDER BY ordinal_position", [t]).fetchall()]
        extra = [c for c in ("host", "rank", "ts", "file", "line") if c not in cols]
        sel = ", ".join([_cols(con, t, "f", redact, cols)] + ([_cols(con, "events", "e", redact, extra)] if extra else []))
        n = con.execute(f"SELECT count(*) FROM {_q(t)}").fetchone()[0]
        if n:
            con.execute(f"COPY (SELECT {sel}, {node} FROM {_q(t)} f LEFT JOIN events e USING (event_id)) "
                        f"TO {_lit(d / t)} ({opts})")
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
            sel = _cols(con, t, t, redact and t == "files")
            con.execute(f"COPY (SELECT {sel} FROM {t} ORDER BY {order}) TO {_lit(d / t / (t + '.parquet'))} "
                        f"(FORMAT PARQUET, COMPRESSION ZSTD)")
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
