"""parts: what every ingest writes: its logs' lines and tables as Parquet.

A part is a directory of Parquet files: `event_lines-N.parquet`, the lines,
one file per parser thread, written by the engine as it parses (the
columns of crates/engine/src/out.rs event_schema; a line's message is
substr(raw, message_at, message_len)); `event_classes.parquet` (the store's
view `events` is lines joined to classes on class_id), `files.parquet` (the
`files` rows) and `<fact table>.parquet`, with the store's column names and
types (times UTC, TIMESTAMP without zone), plus `manifest.json` (versions,
catalog fingerprint, host, row counts). DuckDB, Spark or Trino read parts
directly: `read_parquet('parts/*/event_lines-*.parquet') JOIN
read_parquet('parts/*/event_classes.parquet') USING (class_id)`.

`ranktrace ingest --part DIR` writes one into DIR; `ranktrace ingest --db
STORE` writes one into STORE/parts/ and merges it (merge.py), as a node's
part is merged. Memory stays bounded: lines leave in row groups as they are
parsed, and the other tables' rows as they come. A part is written under
`DIR/.incoming/` and renamed into `DIR/<host>-<hash>` when complete, so a
reader (or merge) never sees half a part and parts of many nodes never
clash. The hash is of the part's content (the files' sha256 and paths, the
catalog, the schema): the same logs give the same name, and ingesting them
again replaces the part.

Year-less times stay at the placeholder year in a part: the year is chosen
at merge, over every part, as ingest does over a store.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .. import __version__, store
from ..formats import Catalog, format_dirs
from .rows import Pending, file_ids

PART_FORMAT = 8                   # the layout of a part directory; bump on any change (2: event rows and classes; 3: marks; 4: event_lines, the message a span of raw; 5: lines written by the engine, a file per parser thread; 6: the lines' summary columns step, says_step, nranks, teardown; 7: and progress_lo, progress_hi; 8: nccl_comm's rows their line's columns, store.LINE_FACTS)
MANIFEST = "manifest.json"
INCOMING = ".incoming"            # parts being written (not matched by DIR/*/...)
ROW_GROUP = 122_880               # rows per Parquet row group (DuckDB's row group)


def catalog_fingerprint(cat: Catalog) -> str:
    """sha256 of what parses: every format, envelope and kind file the
    catalog was built from, and the path hints (by name and content). Two
    ingests with the same fingerprint parse a line the same way."""
    h = hashlib.sha256()
    files = {p.path for p in cat.formats} | {e.path for e in cat.envelopes}
    for d in format_dirs():
        files |= set(d.glob("kinds*.toml")) | set(d.glob("path_hints.toml")) | set(d.glob("marks.toml"))
    for path in sorted(files, key=lambda p: (p.name, str(p))):
        h.update(f"{path.name}\0".encode())
        h.update(Path(path).read_bytes())
        h.update(b"\0")
    for k in sorted(cat.kinds):  # user kinds files from --formats directories
        i = cat.kinds[k]
        h.update(f"{i.name}\0{i.role}\0{i.severity}\0{i.failure}\0".encode())
    return h.hexdigest()[:32]


def part_host() -> str:
    """The node a part is made on: Slurm's name for it inside a job step
    (every slurmd of a test cluster may share one kernel host name), else
    the host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname() or "host"


def sql_str(path) -> str:
    """A path as an SQL string literal."""
    return "'" + str(path).replace("'", "''") + "'"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "host"


LINES = "event_lines"             # the lines' files: event_lines-N.parquet


def table_schemas(con, cat: Catalog) -> dict[str, pa.Schema]:
    """The Arrow schema of every table a part holds but the lines (the
    engine's), from a store's DDL."""
    tables = ["files", "event_classes", *sorted(cat.fact_tables)]
    return {t: con.sql(f'FROM "{t}" LIMIT 0').to_arrow_table().schema for t in tables}


def conform(rows: pa.Table, schema: pa.Schema, table: str) -> pa.Table:
    """`rows` with exactly the table's columns and types (missing ones null).
    A column the table does not have is a bug upstream, as in INSERT BY NAME."""
    extra = sorted(set(rows.column_names) - set(schema.names))
    if extra:
        raise ValueError(f"{table}: columns {extra} are not in the table")
    cols = [rows[f.name].cast(f.type) if f.name in rows.column_names else pa.nulls(len(rows), f.type)
            for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


class PartWriter:
    """Writes one part under `parts_dir`; `con` is the (in-memory) store the
    ingest claims its files in: its DDL gives the column types and its meta
    the fallback time for year-less logs."""

    def __init__(self, parts_dir: str | os.PathLike, cat: Catalog, con, *, host: str | None = None,
                 row_group: int = ROW_GROUP):
        self.parts_dir = Path(parts_dir)
        self.cat, self.con, self.row_group = cat, con, row_group
        self.host = host or part_host()
        self.schemas = table_schemas(con, cat)
        incoming = self.parts_dir / INCOMING
        try:
            incoming.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OSError(f"{self.parts_dir}: cannot create the parts directory: {exc.strerror or exc}") from exc
        self.tmp = Path(tempfile.mkdtemp(prefix=f"{_safe(self.host)}-", dir=incoming))
        self.path: str | None = None          # the finished part, after close()
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.pending: dict[str, Pending] = {}
        self.counts: dict[str, int] = {}      # rows written out per table
        self.flushed: dict[str, set[int]] = {}  # table -> files with rows written out
        self.dirty: dict[str, set[int]] = {}    # table -> failed files whose rows are written out
        self.file_rows: list[list] = []
        self.sinks: list = []                   # the lines files, one per parser thread (lines_sink)
        self.lines_of: dict[int, int] = {}      # file id -> the lines file its lines went to

    def lines_sink(self):
        """A lines file of its own for a parser thread (the engine writes
        into it: ranktrace._core.LinesSink); its lines are tracked per file
        by `lines`."""
        from . import core
        from .. import _core
        k = len(self.sinks)
        sink = _core.LinesSink(core.engine(self.cat), str(self.tmp / f"{LINES}-{k}.parquet"))
        self.sinks.append(sink)
        return k, sink

    def lines(self, file_id: int, sink: int) -> None:
        """Lines of file `file_id` went into lines file `sink`."""
        self.lines_of[file_id] = sink

    def add(self, file_id: int, classes: pa.RecordBatch | pa.Table, facts: dict[str, pa.RecordBatch | pa.Table]) -> None:
        """A batch's new classes and its facts (its lines went into a sink)."""
        for table, rows in [("event_classes", classes), *facts.items()]:
            if not rows.num_rows:
                continue
            if table not in self.schemas:
                raise ValueError(f"{table}: not a table of this catalog")
            pending = self.pending.setdefault(table, Pending())
            pending.add(rows)
            if pending.rows >= self.row_group:
                self._flush(table, whole_groups=True)

    def done(self, file_id: int, row: list | None) -> None:
        """The file is finished: `row` is its `files` row; None takes its rows out."""
        if row is not None:
            self.file_rows.append(row)
            return
        for pending in self.pending.values():
            pending.discard(file_id)
        for table, fids in self.flushed.items():
            if file_id in fids:
                self.dirty.setdefault(table, set()).add(file_id)
        if file_id in self.lines_of:
            self.dirty.setdefault(f"{LINES}-{self.lines_of[file_id]}", set()).add(file_id)

    def close(self) -> None:
        """Write what is left, the files rows and the manifest; then move the
        part into place (replacing a part of the same content)."""
        try:
            for table in list(self.pending):
                self._flush(table, whole_groups=False)
            for table in self.schemas:
                if table != "files" and table not in self.writers:
                    self._writer(table)  # every table has its file, empty or not
            for w in self.writers.values():
                w.close()
            lines = {}
            for k, sink in enumerate(self.sinks):
                n, name = sink.close(), f"{LINES}-{k}"
                if n:
                    lines[name], self.counts[name] = f"{name}.parquet", n
                else:
                    (self.tmp / f"{name}.parquet").unlink()
            for table, fids in sorted(self.dirty.items()):
                self._drop_files(table, fids)
            files = pa.Table.from_pylist(
                [dict(zip(self.schemas["files"].names, r)) for r in sorted(self.file_rows, key=lambda r: r[0])],
                schema=self.schemas["files"])
            pq.write_table(files, self.tmp / "files.parquet", compression="zstd")
            self.counts["files"] = len(files)
            manifest = self._manifest(files, lines)
            (self.tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
            final = self.parts_dir / manifest["name"]
            old = None
            if final.exists():
                old = self.parts_dir / INCOMING / f"{manifest['name']}.old-{os.getpid()}"
                final.rename(old)
            self.tmp.rename(final)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
            self.path = str(final)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        for sink in self.sinks:
            try:
                sink.close()
            except Exception:
                pass
        self.sinks.clear()
        for w in self.writers.values():
            try:
                w.close()
            except Exception:
                pass
        self.writers.clear()
        self.pending.clear()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _manifest(self, files: pa.Table, lines: dict[str, str]) -> dict:
        fingerprint = catalog_fingerprint(self.cat)
        h = hashlib.sha256(f"{PART_FORMAT}\0{store.SCHEMA_VERSION}\0{fingerprint}\0{self.host}\0".encode())
        for sha, path in sorted(zip(files["sha256"].to_pylist(), files["path"].to_pylist())):
            h.update(f"{sha}\0{path}\n".encode())
        fallback = self.con.execute("SELECT value FROM meta WHERE key = 'fallback_time'").fetchone()
        return {
            "name": f"{_safe(self.host)}-{h.hexdigest()[:16]}",
            "ranktrace_part": PART_FORMAT,
            "ranktrace_version": __version__,
            "schema_version": store.SCHEMA_VERSION,
            "catalog": fingerprint,
            "host": self.host,
            "fallback_time": fallback[0] if fallback else None,
            "counts": dict(sorted(self.counts.items())),
            "tables": {t: f"{t}.parquet" for t in self.schemas},
            "lines": lines,
        }

    def _writer(self, table: str) -> pq.ParquetWriter:
        if table not in self.writers:
            schema = self.schemas[table]
            # A fact's event_id grows row by row (nearly one row an event): delta encoded, no
            # dictionary (tried on every page, then dropped). The long run's 15.4 M progress
            # facts: written in 0.63 CPU-s instead of 1.41, read into DuckDB in 3.26 instead of 3.76.
            ids = [c for c in ("event_id",) if c in schema.names]
            kw = {"use_dictionary": [c for c in schema.names if c not in ids],
                  "column_encoding": {c: "DELTA_BINARY_PACKED" for c in ids}} if ids else {}
            self.writers[table] = pq.ParquetWriter(self.tmp / f"{table}.parquet", schema, compression="zstd", **kw)
            self.counts.setdefault(table, 0)
        return self.writers[table]

    def _flush(self, table: str, whole_groups: bool) -> None:
        """Write the buffered rows of `table`: whole row groups (the rest
        stays buffered), or all of them."""
        head = self.pending[table].take(self.row_group, whole_groups)
        if head is None:
            return
        self._writer(table).write_table(conform(head, self.schemas[table], table), row_group_size=self.row_group)
        self.counts[table] += head.num_rows
        self.flushed.setdefault(table, set()).update(file_ids(head))

    def _drop_files(self, table: str, fids: set[int]) -> None:
        """Take the rows of files that failed after some of their rows were
        written out (rare: a file that breaks half-way), by rewriting that
        table's file through DuckDB (streaming, bounded memory)."""
        import duckdb
        src, tmp = self.tmp / f"{table}.parquet", self.tmp / f"{table}.parquet.tmp"
        con = duckdb.connect()
        try:
            con.execute("SET TimeZone = 'UTC'")
            ids = ",".join(str(int(f)) for f in sorted(fids))
            con.execute(f"COPY (SELECT * FROM read_parquet({sql_str(src)}) WHERE file_id NOT IN ({ids})) "
                        f"TO {sql_str(tmp)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {self.row_group})")
            self.counts[table] = con.execute(f"SELECT count(*) FROM read_parquet({sql_str(tmp)})").fetchone()[0]
        finally:
            con.close()
        tmp.replace(src)
