"""rows: parsed rows waiting to be written, as Arrow.

The engine's batches cross into Python as pyarrow RecordBatches (C data
interface) and go on to DuckDB or Parquet as they are: no polars frames in
between. The round trip through polars cost a third of the store's side of
an ingest (54 MB of torchrun logs: 2.93 s of CPU to convert, count and
insert against 1.83 s straight from Arrow; polars' string views are copied
out and back, and DuckDB reads them slower).

Both writers (writer.py, parts.py) keep one Pending per table: batches of
many files, taken out in whole row groups, in file order.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

# Batches of small files are copied into one every COMPACT_PARTS: an engine
# batch of a one-line file holds ~80 KB of buffers, 10k of them 1.3 GB before
# the first INSERT.
COMPACT_PARTS = 256
SMALL = 1024


def as_table(batch: pa.RecordBatch | pa.Table) -> pa.Table:
    return batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])


def concat(parts: list[pa.Table]) -> pa.Table:
    """One table of `parts`; a column some parts lack is null in them (the
    writers insert BY NAME)."""
    return pa.concat_tables(parts, promote_options="permissive")


def file_ids(table: pa.Table) -> list[int]:
    return pc.unique(table["file_id"]).to_pylist()


class Pending:
    """Rows of one table waiting to be written."""

    def __init__(self) -> None:
        self.parts: list[pa.Table] = []
        self.rows = 0
        self.nbytes = 0

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        if not batch.num_rows:
            return
        self.parts.append(as_table(batch))
        self.rows += batch.num_rows
        self.nbytes += batch.nbytes
        tail = self.parts[-COMPACT_PARTS:]
        if len(tail) == COMPACT_PARTS and all(p.num_rows < SMALL for p in tail):
            # combine_chunks copies into fresh buffers: the batches' own are freed
            self.parts[-COMPACT_PARTS:] = [concat(tail).combine_chunks()]

    def take(self, row_group: int, whole_groups: bool) -> pa.Table | None:
        """The head of the rows: whole row groups of `row_group` rows (the
        rest stays), or all of them; None when there is nothing to take.
        Rows go out by file (stable): parsers interleave their files'
        batches, and a row group that alternates between files every batch
        compresses worse (1 MB batches of two files: store +15%)."""
        if not self.parts:
            return None
        parts = sorted(self.parts, key=lambda p: p["file_id"][0].as_py())
        table = concat(parts)
        n = table.num_rows - table.num_rows % row_group if whole_groups else table.num_rows
        if n == 0:
            self._keep([table])
            return None
        self._keep([table.slice(n)] if n < table.num_rows else [])
        return table.slice(0, n)

    def discard(self, file_id: int) -> None:
        """Drop the rows of file `file_id`."""
        self._keep([k for p in self.parts if (k := p.filter(pc.not_equal(p["file_id"], file_id))).num_rows])

    def _keep(self, parts: list[pa.Table]) -> None:
        self.parts = parts
        self.rows = sum(p.num_rows for p in parts)
        self.nbytes = sum(p.nbytes for p in parts)
