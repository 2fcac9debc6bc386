"""writer: parsed batches into the store, many files per transaction.

DuckDB pays per transaction and per INSERT, not per row, and most of all
for row groups left part-full: an INSERT writes its rows out as row groups
of ROW_GROUP rows, and the last, partial one of every INSERT is written,
compressed and later rewritten. 2 M events went in with 9.8 s of CPU and a
104 MB file in inserts of 300 k rows, with 5.5 s and 56 MB in inserts of
whole row groups (and one DuckDB thread: two cut the insert into two
partial groups each). So the writer gathers rows from several files and
inserts whole row groups only (one, most often), keeping the rest for the
next INSERT; it commits when COMMIT_ROWS rows have gone in *and* no file is
half-written, and only then inserts a partial group. A file is in the store
completely or not at all (a killed ingest loses the files of the open
transaction, whole); a file that fails half-way has its rows taken out
again before the commit.
"""

from __future__ import annotations

import polars as pl

from .. import store

ROW_GROUP = 122_880               # DuckDB's rows per row group
GROUP_ROWS = ROW_GROUP            # insert once this many events are waiting (3 groups: +230 MB RSS, no faster)
COMMIT_ROWS = 12 * ROW_GROUP      # commit (at a file boundary) once this many went in
# Frames of small files are copied into one every COMPACT_PARTS: an engine batch
# of a one-line file holds ~80 KB of buffers, 10k of them 1.3 GB before the first INSERT.
COMPACT_PARTS = 256
COMMIT_FILES = 10_000             # or this many files: their rows wait for the commit (~3 KB each)
# Events waiting hold at most this many bytes, whatever their rows: 300 lines of
# 1 MiB are 300 rows, far from a row group, and 1.2 GB of raw and message text.
GROUP_BYTES = 64 << 20

FILE_ROW_SQL = "INSERT INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"


class Writer:
    def __init__(self, con, group_rows: int = GROUP_ROWS, commit_rows: int = COMMIT_ROWS,
                 row_group: int = ROW_GROUP):
        self.con, self.group_rows, self.commit_rows, self.row_group = con, group_rows, commit_rows, row_group
        self._reset()

    def _reset(self) -> None:
        """Nothing buffered, nothing open, no transaction."""
        self.events: list[pl.DataFrame] = []
        self.facts: dict[str, list[pl.DataFrame]] = {}
        self.buffered = 0            # events waiting for the next INSERT
        self.buffered_bytes = 0      # and their size
        self.written = 0             # rows inserted in the open transaction
        self.open: set[int] = set()  # files with rows in, not finished
        self.inserted: dict[int, set[str]] = {}  # file -> tables it has rows in (open transaction)
        self.file_rows: list[list] = []
        self.in_txn = False

    def add(self, file_id: int, events: pl.DataFrame, facts: dict[str, pl.DataFrame]) -> None:
        self.open.add(file_id)
        if len(events):
            self.events = _append(self.events, events)
            self.buffered += len(events)
            self.buffered_bytes += events.estimated_size()
        for table, f in facts.items():
            if len(f):
                self.facts[table] = _append(self.facts.get(table, []), f)
        if self.buffered >= self.group_rows:
            self._flush()
        if self.buffered_bytes >= GROUP_BYTES:
            self._flush(whole_groups=False)   # long lines: a part-full row group is the lesser cost

    def done(self, file_id: int, row: list | None) -> None:
        """The file is finished: `row` is its `files` row; None takes its rows
        out again (it failed and must leave nothing behind)."""
        self.open.discard(file_id)
        if row is None:
            self._discard(file_id)
        else:
            self.file_rows.append(row)
        if not self.open and (self.written >= self.commit_rows or len(self.file_rows) >= COMMIT_FILES):
            self.commit()

    def commit(self) -> None:
        self._flush(whole_groups=False)
        if self.file_rows:
            self._begin()
            store.insert_rows(self.con, "files", self.file_rows)   # one INSERT: executemany costs ~2 ms a row
        if self.in_txn:
            self.con.commit()
        self.in_txn, self.written, self.file_rows = False, 0, []
        self.inserted.clear()

    def close(self) -> None:
        """Commit what is complete; a file still open here is a bug upstream."""
        if self.open:
            unfinished = sorted(self.open)
            self.abort()
            raise RuntimeError(f"writer closed with unfinished files {unfinished}")
        self.commit()

    def abort(self) -> None:
        if self.in_txn:
            self.con.rollback()
        self._reset()

    def _begin(self) -> None:
        if not self.in_txn:
            self.con.begin()
            self.in_txn = True

    def _flush(self, whole_groups: bool = True) -> None:
        """Insert what is buffered: whole row groups of each table, the rest
        stays buffered; everything when not `whole_groups`."""
        if not self.events and not self.facts:
            return
        self._begin()
        self.events = self._insert("events", self.events, whole_groups)
        self.buffered = sum(len(e) for e in self.events)
        self.buffered_bytes = sum(e.estimated_size() for e in self.events)
        self.facts = {t: rest for t, parts in self.facts.items() if (rest := self._insert(t, parts, whole_groups))}

    def _insert(self, table: str, parts: list[pl.DataFrame], whole_groups: bool) -> list[pl.DataFrame]:
        """Insert the head of `parts` (whole row groups, or all); returns the rest.
        The parts go in by file (stable): parsers interleave their files' batches,
        and a row group that alternates between files every batch compresses
        worse (1 MB batches of two files: store +15%)."""
        parts = sorted(parts, key=lambda p: p["file_id"][0] if len(p) else -1)
        df = pl.concat(parts, how="diagonal_relaxed", rechunk=False)
        n = len(df) - len(df) % self.row_group if whole_groups else len(df)
        if n == 0:
            return [df] if len(df) else []
        head = df.head(n)
        if table == "events":
            store.insert_events(self.con, head)
            self.written += n
        else:
            store.insert_facts(self.con, table, head)
        for fid in head["file_id"].unique().to_list():
            self.inserted.setdefault(fid, set()).add(table)
        return [df.tail(len(df) - n)] if n < len(df) else []

    def _discard(self, file_id: int) -> None:
        keep = pl.col("file_id") != file_id
        kept = [e.filter(keep) for e in self.events]
        self.buffered = sum(len(e) for e in kept)
        self.buffered_bytes = sum(e.estimated_size() for e in kept)
        self.events = [e for e in kept if len(e)]
        self.facts = {t: [f.filter(keep) for f in parts] for t, parts in self.facts.items()}
        for table in sorted(self.inserted.pop(file_id, ())):
            self.con.execute(f'DELETE FROM "{table}" WHERE file_id = ?', [file_id])


def _append(parts: list[pl.DataFrame], df: pl.DataFrame) -> list[pl.DataFrame]:
    """parts + [df]; the last COMPACT_PARTS small frames copied into one
    (through Arrow: polars' concat of string views keeps every source's
    buffers alive; 20k one-line files: +240 MB that way, +50 MB so)."""
    parts.append(df)
    tail = [p for p in parts[-COMPACT_PARTS:] if len(p) < 1024]
    if len(tail) == COMPACT_PARTS and len(parts) >= COMPACT_PARTS:
        merged = pl.concat(parts[-COMPACT_PARTS:], how="diagonal_relaxed", rechunk=True)
        parts[-COMPACT_PARTS:] = [pl.from_arrow(merged.to_arrow())]
    return parts
