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

import pyarrow as pa

from .. import store
from .rows import Pending, file_ids

ROW_GROUP = 122_880               # DuckDB's rows per row group
GROUP_ROWS = ROW_GROUP            # insert once this many events are waiting (3 groups: +230 MB RSS, no faster)
COMMIT_ROWS = 12 * ROW_GROUP      # commit (at a file boundary) once this many went in
COMMIT_FILES = 10_000             # or this many files: their rows wait for the commit (~3 KB each)
# Events waiting hold at most this many bytes, whatever their rows: 300 lines of
# 1 MiB are 300 rows, far from a row group, and 1.2 GB of raw and message text.
GROUP_BYTES = 64 << 20


class Writer:
    def __init__(self, con, group_rows: int = GROUP_ROWS, commit_rows: int = COMMIT_ROWS,
                 row_group: int = ROW_GROUP):
        self.con, self.group_rows, self.commit_rows, self.row_group = con, group_rows, commit_rows, row_group
        self._reset()

    def _reset(self) -> None:
        """Nothing buffered, nothing open, no transaction."""
        # event rows and their classes (view `events`), then fact tables
        self.pending: dict[str, Pending] = {"event_lines": Pending(), "event_classes": Pending()}
        self.written = 0             # rows inserted in the open transaction
        self.open: set[int] = set()  # files with rows in, not finished
        self.inserted: dict[int, set[str]] = {}  # file -> tables it has rows in (open transaction)
        self.file_rows: list[list] = []
        self.in_txn = False

    @property
    def buffered(self) -> int:
        """Events waiting for the next INSERT."""
        return self.pending["event_lines"].rows

    def add(self, file_id: int, events: pa.RecordBatch | pa.Table, classes: pa.RecordBatch | pa.Table,
            facts: dict[str, pa.RecordBatch | pa.Table]) -> None:
        self.open.add(file_id)
        self.pending["event_lines"].add(events)
        self.pending["event_classes"].add(classes)
        for table, f in facts.items():
            self.pending.setdefault(table, Pending()).add(f)
        if self.buffered >= self.group_rows:
            self._flush()
        if self.pending["event_lines"].nbytes >= GROUP_BYTES:
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
        for table, pending in self.pending.items():
            head = pending.take(self.row_group, whole_groups)
            if head is None:
                continue
            self._begin()
            store.insert_table(self.con, table, head)
            if table == "event_lines":
                self.written += head.num_rows
            for fid in file_ids(head):
                self.inserted.setdefault(fid, set()).add(table)

    def _discard(self, file_id: int) -> None:
        for pending in self.pending.values():
            pending.discard(file_id)
        for table in sorted(self.inserted.pop(file_id, ())):
            self.con.execute(f'DELETE FROM "{table}" WHERE file_id = ?', [file_id])
