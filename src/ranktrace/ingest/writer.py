"""writer: parsed batches into the store, many files per transaction.

DuckDB pays per transaction and per INSERT, not per row: a commit of fewer
rows than a row group (122,880) goes through the write-ahead log and a
checkpoint, which cost as much as the insert itself; an INSERT of 100 k
rows costs almost as much as one of 500 k. So the writer gathers rows from
several files into one INSERT and commits only when GROUP_ROWS rows have
gone in *and* no file is half-written. A file is in the store completely or
not at all (a killed ingest loses the files of the open transaction, whole);
a file that fails half-way has its rows taken out again before the commit.
"""

from __future__ import annotations

import polars as pl

from .. import store

GROUP_ROWS = 300_000

FILE_ROW_SQL = "INSERT INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"


class Writer:
    def __init__(self, con, group_rows: int = GROUP_ROWS):
        self.con, self.group_rows = con, group_rows
        self._reset()

    def _reset(self) -> None:
        """Nothing buffered, nothing open, no transaction."""
        self.events: list[pl.DataFrame] = []
        self.facts: dict[str, list[pl.DataFrame]] = {}
        self.buffered = 0            # rows waiting for the next INSERT
        self.written = 0             # rows inserted in the open transaction
        self.open: set[int] = set()  # files with rows in, not finished
        self.inserted: dict[int, set[str]] = {}  # file -> tables it has rows in (open transaction)
        self.file_rows: list[list] = []
        self.in_txn = False

    def add(self, file_id: int, events: pl.DataFrame, facts: dict[str, pl.DataFrame]) -> None:
        self.open.add(file_id)
        if len(events):
            self.events.append(events)
            self.buffered += len(events)
        for table, f in facts.items():
            if len(f):
                self.facts.setdefault(table, []).append(f)
        if self.buffered >= self.group_rows:
            self._flush()

    def done(self, file_id: int, row: list | None) -> None:
        """The file is finished: `row` is its `files` row; None takes its rows
        out again (it failed and must leave nothing behind)."""
        self.open.discard(file_id)
        if row is None:
            self._discard(file_id)
        else:
            self.file_rows.append(row)
        if not self.open and self.written + self.buffered >= self.group_rows:
            self.commit()

    def commit(self) -> None:
        self._flush()
        if self.file_rows:
            self._begin()
            self.con.executemany(FILE_ROW_SQL, self.file_rows)
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

    def _flush(self) -> None:
        if not self.events and not self.facts:
            return
        self._begin()
        if self.events:
            ev = pl.concat(self.events, how="vertical_relaxed", rechunk=False)
            store.insert_events(self.con, ev)
            for fid in ev["file_id"].unique().to_list():
                self.inserted.setdefault(fid, set()).add("events")
        for table, parts in self.facts.items():
            f = pl.concat(parts, how="diagonal_relaxed")
            store.insert_facts(self.con, table, f)
            for fid in f["file_id"].unique().to_list():
                self.inserted.setdefault(fid, set()).add(table)
        self.written += self.buffered
        self.events, self.facts, self.buffered = [], {}, 0

    def _discard(self, file_id: int) -> None:
        keep = pl.col("file_id") != file_id
        kept = [e.filter(keep) for e in self.events]
        self.buffered = sum(len(e) for e in kept)
        self.events = [e for e in kept if len(e)]
        self.facts = {t: [f.filter(keep) for f in parts] for t, parts in self.facts.items()}
        for table in sorted(self.inserted.pop(file_id, ())):
            self.con.execute(f'DELETE FROM "{table}" WHERE file_id = ?', [file_id])
