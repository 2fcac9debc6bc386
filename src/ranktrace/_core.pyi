"""ranktrace._core: the compiled ingest engine (crates/py). Typed boundary.

Batches cross as pyarrow RecordBatches (Arrow C data interface, no copies).
Event batches: the columns of the store's `event_lines` (the message as
its place in raw: message_at, message_len; the summaries' per-line text
tests decided in the scan: step, says_step, nranks, teardown, as
crates/engine/src/summary.rs says; the training position of the line's progress facts:
progress_lo, progress_hi); class batches: those
of `event_classes` (a class leaves once, with the first batch that has it:
crates/engine/src/classes.rs); fact batches: event_id, file_id and the
table's columns."""

import pyarrow as pa

class Engine:
    """A compiled catalog; `spec_json` as made by ranktrace.ingest.core.spec."""
    def __init__(self, spec_json: str) -> None: ...

class LinesSink:
    """A Parquet file of lines (the store's event_lines), written by the parser
    thread that hands it its batches (FileParser.next_batch(sink))."""
    def __init__(self, engine: Engine, path: str, codec: str | None = None) -> None: ...
    def rows(self) -> int:
        """Lines written so far."""
    def close(self) -> int:
        """Write the footer (the file is complete); the lines written."""

class FileParser:
    """The parse of one file, fed its bytes in chunks (the GIL is released)."""
    def __init__(self, engine: Engine, file_id: int, file: str, hints: list[tuple[str, str]], tz: str,
                 envelopes: list[str] | None, max_line: int) -> None: ...
    def feed(self, chunk: bytes, eof: bool) -> None:
        """Frame the lines `chunk` completes (all of them when `eof`: the last chunk)."""
    def next_batch(self, sink: LinesSink | None = None
                   ) -> tuple[pa.RecordBatch | int, pa.RecordBatch, dict[str, pa.RecordBatch]] | None:
        """Event rows, the classes new to the file, and facts of the next
        batch of framed lines (at most 65,536 lines), or None when nothing is
        left until the next feed. With a `sink`, the event rows are written
        into it and their count is given in their place."""
    def stats(self) -> dict[str, int | bool]:
        """bytes, lines, invalid_utf8, nul_bytes, truncated_lines, crlf, cr_only,
        implausible (times outside 1990-2099, ignored); and how lines were read
        (crates/engine/src/shape.rs): shape_hits (the structure of a shape met
        before), shapes (new shapes), own_reads (read from their own bytes)."""
    def format_counts(self) -> list[tuple[str, int]]:
        """Events so far per format name ('raw': claimed by none), formats with none left out."""
    def file_envelopes(self) -> list[str]:
        """File-scoped envelopes found in the file's head (after the first feed)."""
