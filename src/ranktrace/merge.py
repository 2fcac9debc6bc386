"""merge: parts (ingest/parts.py) into a store, without parsing again.

A part's lines stay the Parquet files the engine wrote: merge places them in
the store's directory (STORE/parts/<part>/: a hard link, or a copy from
another file system; nothing to do for the part an ingest wrote there) and
registers them under view event_lines; so are its files of the fact tables
of about a row per line (store.PART_FACTS: progress, nccl_comm), under their views. Its other tables (files, classes,
facts: a few rows per thousand lines) go into the store's DuckDB tables. All
parts go in with one transaction (a killed merge leaves the store as it was;
files placed for it are unregistered, and removed) and one INSERT per table,
DuckDB reading the parts' Parquet files straight into the tables: no row
passes through Python. A file the store has already (same sha256 and
the same path or source, as ingest decides) adds nothing, so merging twice,
or merging parts that share a file (a job's output on a shared file system,
ingested on every node), stores each file once: the first part in name
order keeps it. A file id taken already moves to the next free one, as
ingest does, and its events' ids with it: those two, rare, are the only
cases where a part's lines are written again (DuckDB copies them without the
duplicate files, with the new ids). The merge ends as ingest does: year-less
times get their year, the summaries are rebuilt.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from . import __version__, store
from .formats import Catalog
from .ingest.parts import INCOMING, MANIFEST, PART_FORMAT, catalog_fingerprint, sql_str

MERGE_DUCKDB_MEMORY = "512MB"


class PartError(Exception):
    """A part that cannot be merged: what, where, and what to do."""


@dataclass
class Part:
    path: Path
    manifest: dict

    @property
    def name(self) -> str:
        return self.path.name

    def table(self, table: str) -> Path:
        return self.path / self.manifest["tables"][table]

    def lines(self) -> dict[str, Path]:
        """The part's lines files, by name (event_lines-N)."""
        return {k: self.path / f for k, f in sorted((self.manifest.get("lines") or {}).items())}


@dataclass
class MergeSummary:
    parts: list[str] = field(default_factory=list)     # merged, in order
    files: int = 0                                     # files added
    duplicates: int = 0                                # files the store (or an earlier part) had
    events: int = 0                                    # events added
    renumbered: int = 0                                # files whose id was taken
    seconds: float = 0.0
    reference_year: int | None = None


def find_parts(dirs: list[str]) -> list[Part]:
    """The parts in `dirs` (each a part, or a directory of parts), in name
    order. Parts still being written (under .incoming/) are not parts yet."""
    found: dict[Path, Part] = {}
    for d in dirs:
        p = Path(d)
        if not p.is_dir():
            raise PartError(f"{d}: no such directory (give the directory `ranktrace ingest --part` wrote into)")
        cands = [p] if (p / MANIFEST).is_file() else sorted(
            c for c in p.iterdir() if c.is_dir() and c.name != INCOMING and (c / MANIFEST).is_file())
        if not cands:
            raise PartError(f"{d}: no part in it (a part is a directory with a {MANIFEST}, "
                            "written by `ranktrace ingest PATH... --part DIR`)")
        for c in cands:
            found.setdefault(c.resolve(), Part(c, _manifest(c)))
    return sorted(found.values(), key=lambda part: (part.name, str(part.path)))


def _manifest(path: Path) -> dict:
    try:
        m = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise PartError(f"{path / MANIFEST}: cannot read the part's manifest: {exc}") from exc
    if not isinstance(m, dict) or "ranktrace_part" not in m:
        raise PartError(f"{path / MANIFEST}: not a ranktrace part manifest")
    return m


def check_part(part: Part, cat: Catalog, fingerprint: str | None = None) -> None:
    """Refuse a part this version cannot merge as it is (PartError)."""
    m = part.manifest
    made = f"made by ranktrace {m.get('ranktrace_version')} on {m.get('host')}"
    redo = "ingest that node's logs again with this version (ranktrace ingest PATH... --part DIR)"
    if m.get("ranktrace_part") != PART_FORMAT:
        raise PartError(f"{part.path}: part format {m.get('ranktrace_part')} ({made}); this ranktrace "
                        f"{__version__} reads part format {PART_FORMAT}: {redo}")
    if m.get("ranktrace_version") != __version__:
        raise PartError(f"{part.path}: {made}, this is ranktrace {__version__}: merge it with ranktrace "
                        f"{m.get('ranktrace_version')}, or {redo}")
    if m.get("schema_version") != store.SCHEMA_VERSION:
        raise PartError(f"{part.path}: store schema version {m.get('schema_version')} ({made}); this "
                        f"ranktrace writes schema version {store.SCHEMA_VERSION}: {redo}")
    fingerprint = fingerprint or catalog_fingerprint(cat)
    if m.get("catalog") != fingerprint:
        raise PartError(f"{part.path}: parsed with another catalog of formats ({m.get('catalog')}, {made}) "
                        f"than this merge's ({fingerprint}): merge with the same --formats directories and "
                        f"parsers/ as the ingest, or {redo}")
    tables = m.get("tables") or {}
    missing = [t for t in ("files", "event_classes", *cat.fact_tables) if t not in tables]
    if missing:
        raise PartError(f"{part.path}: the manifest lists no file for {missing}: the part is damaged; {redo}")
    lines = part.lines()
    for t, n in sorted((m.get("counts") or {}).items()):
        f = lines[t] if t in lines else part.table(t)
        try:
            have = pq.ParquetFile(f).metadata.num_rows
        except (OSError, ValueError) as exc:
            raise PartError(f"{f}: cannot read: {exc}; the part is damaged: {redo}") from exc
        if have != n:
            raise PartError(f"{f}: {have} rows, the manifest says {n}: the part is damaged or incomplete; {redo}")


def merge(dirs: list[str], db: str, cat: Catalog) -> MergeSummary:
    """Merge every part found in `dirs` into the store `db` (created if new)."""
    t0 = time.perf_counter()
    parts = find_parts(dirs)
    fingerprint = catalog_fingerprint(cat)
    for part in parts:  # all of them first: a refused part leaves the store untouched
        check_part(part, cat, fingerprint)
    out = MergeSummary()
    con = store.open_store(db, cat)
    try:
        con.execute(f"SET memory_limit = '{MERGE_DUCKDB_MEMORY}'")
        merge_into(con, parts, cat, out)
    finally:
        con.close()
    out.seconds = time.perf_counter() - t0
    return out


def merge_into(con, parts: list[Part], cat: Catalog, out: MergeSummary) -> None:
    """Parts (checked) into the store of `con`, then the ranks files imply, year inference and
    the summaries: what `merge` and `ingest` end with."""
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET enable_progress_bar = false")
    # every core for a merge into a large store (its INSERTs of facts: ~1 M rows a table on 1 GB)
    store.fit_threads(con, store.store_dir_of(con), tuple(p.path for p in parts))
    _merge_parts(con, parts, cat, out)
    store.imply_ranks(con)   # (before the years: both are view event_lines' and the summaries read it)
    out.reference_year = store.infer_years(con)
    store.refresh_summaries(con)


def _claim(part: int, rows: list[tuple], keys: set, ids: set) -> tuple[list[tuple[int, int, int]], int]:
    """(part, old id, new id) of the files of a part the store does not have
    yet (ingest's Claims, over files rows); and how many it had."""
    mapping, dups = [], 0
    for fid, sha, path, source in sorted(rows, key=lambda r: (r[2], r[1], r[0])):
        if {(sha, path), (sha, source)} & keys:
            dups += 1
            continue
        new = fid
        while new in ids:
            new = (new + 1) & 0x7FFFFFFF
        keys |= {(sha, path), (sha, source)}
        ids.add(new)
        mapping.append((part, fid, new))
    return mapping, dups


def _merge_parts(con, parts: list[Part], cat: Catalog, out: MergeSummary) -> None:
    """Every part in one transaction and one INSERT per table: DuckDB writes
    whole row groups (an INSERT per part would leave a part-full one each)."""
    keys: set[tuple[str, str]] = set()
    ids: set[int] = set()
    for sha, path, source, fid in con.execute("SELECT sha256, path, source, file_id FROM files").fetchall():
        keys |= {(sha, path), (sha, source)}
        ids.add(fid)
    mapping: list[tuple[int, int, int]] = []
    whole: set[int] = set()     # parts whose files all go in under their own ids: lines kept as they are
    for i, part in enumerate(parts):
        rows = con.execute(f"SELECT file_id, sha256, path, source FROM read_parquet({sql_str(part.table('files'))})"
                           ).fetchall()
        m, dups = _claim(i, rows, keys, ids)
        out.duplicates += dups
        mapping += m
        if m:
            out.parts.append(part.name)
        if not dups and all(old == new for _, old, new in m):
            whole.add(i)
    if not mapping:
        return
    used = sorted({i for i, _, _ in mapping})
    con.execute("CREATE OR REPLACE TEMP TABLE _part_ids (part INTEGER, old BIGINT, new BIGINT, "
                "PRIMARY KEY (part, old))")
    con.executemany("INSERT INTO _part_ids VALUES (?, ?, ?)", mapping)
    kept = sorted(t for t in cat.fact_tables if t in store.PART_FACTS)   # read in place, as the lines
    placed = _place_lines(con, parts, used, whole, kept)
    con.begin()
    try:
        for table in ("files", "event_classes", *sorted(t for t in cat.fact_tables if t not in kept)):
            # Only the parts with rows of the table (their manifests' counts: the writer's own, or for a
            # merge checked against the files' footers by check_part): a small ingest has rows in a few
            # of ~60 fact tables, and an INSERT over read_parquet costs ~4 ms even when it reads nothing.
            full = [i for i in used if (parts[i].manifest.get("counts") or {}).get(table) != 0]
            if not full:
                continue
            # Which part a row comes from: its file's name, read_parquet(filename = true).
            names = ", ".join(f"({i}, {sql_str(parts[i].table(table))})" for i in full)
            files = ", ".join(sql_str(parts[i].table(table)) for i in full)
            n = con.execute(
                f'INSERT INTO "{table}" BY NAME SELECT t.* EXCLUDE (filename) REPLACE ({_moved(table)}) '
                f"FROM read_parquet([{files}], filename = true) t "
                f"JOIN (VALUES {names}) p(part, name) ON t.filename = p.name "
                f"JOIN _part_ids m ON m.part = p.part AND m.old = t.file_id").fetchone()[0]
        for name, lines, facts in placed:
            store.register_lines(con, name, lines)
            store.register_facts(con, name, facts)
            out.events += sum(n for _, n in lines)
        for i in used:
            fallback = parts[i].manifest.get("fallback_time")
            if fallback:
                con.execute("INSERT INTO meta VALUES ('fallback_time', ?) ON CONFLICT (key) DO UPDATE SET "
                            "value = greatest(value, excluded.value)", [fallback])
        con.execute("DROP TABLE _part_ids")
    except BaseException:
        con.rollback()
        for name, _, _ in placed:
            if not any(parts[i].path.resolve() == (store.store_dir_of(con) / store.PARTS / name).resolve()
                       for i in used):
                shutil.rmtree(store.store_dir_of(con) / store.PARTS / name, ignore_errors=True)
        store.make_lines_view(con)
        store.make_fact_views(con)
        raise
    con.commit()
    out.files = len(mapping)
    out.renumbered = sum(1 for _, old, new in mapping if old != new)


def _moved(table: str) -> str:
    """The REPLACE list that moves a row of `table` to its file's new id (ids
    that hold the file id, file_id << 32 | n, move with it)."""
    moved = {"files": [], "event_classes": ["class_id"], "event_lines": ["event_id", "class_id"],
             **{t: ["event_id", "line_class_id"] for t in store.LINE_FACTS}}.get(table, ["event_id"])
    return "m.new AS file_id" + "".join(f", (m.new << 32) | (t.{c} & 4294967295) AS {c}" for c in moved)


def _place_lines(con, parts: list[Part], used: list[int], whole: set[int], kept: list[str]
                 ) -> list[tuple[str, list[tuple[str, int]], list[tuple[str, str, int]]]]:
    """The lines files of the parts `used`, and their files of the fact tables `kept` (store.PART_FACTS),
    in the store's directory (its parts/<part name>/): where they are already (the part an ingest wrote
    there), hard-linked or copied, or (a part with files the store has, or whose ids were taken) written
    again by DuckDB without those files and with the new ids. (part name, [(lines path relative to the
    store, lines)], [(fact table, path relative to the store, rows)])."""
    root = store.store_dir_of(con)
    placed = []
    for i in used:
        part = parts[i]
        dest = root / store.PARTS / part.name
        here = dest.exists() and part.path.resolve() == dest.resolve()
        if not here:
            if dest.exists():
                shutil.rmtree(dest)   # left by a merge that failed (its lines were never registered)
            dest.mkdir(parents=True)
        lines, facts, written = [], [], set()
        files = [(name, src, "event_lines") for name, src in part.lines().items()]
        files += [(t, part.table(t), t) for t in kept]
        for name, src, table in files:
            target = dest / src.name
            if i in whole:
                if not here:
                    _link_or_copy(src, target)
                n = part.manifest["counts"].get(name, 0)
            else:
                tmp = target.with_suffix(".tmp")
                con.execute(f"COPY (SELECT t.* EXCLUDE (filename) REPLACE ({_moved(table)}) "
                            f"FROM read_parquet({sql_str(src)}, filename = true) t "
                            f"JOIN _part_ids m ON m.part = {i} AND m.old = t.file_id ORDER BY t.event_id) "
                            f"TO {sql_str(tmp)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)")
                n = con.execute(f"SELECT count(*) FROM read_parquet({sql_str(tmp)})").fetchone()[0]
                os.replace(tmp, target)
            written.add(src.name)
            rel = f"{store.PARTS}/{part.name}/{src.name}"
            if n and table == "event_lines":
                lines.append((rel, n))
            elif n:
                facts.append((table, rel, n))
        if not here:
            for f in part.path.iterdir():   # the rest of the part: it stays a part inside the store
                if f.is_file() and f.name not in written:
                    _link_or_copy(f, dest / f.name)
        placed.append((part.name, lines, facts))
    return placed


def _link_or_copy(src: Path, dst: Path) -> None:
    """`src` at `dst`: a hard link (no bytes copied) where both are on one file system."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
