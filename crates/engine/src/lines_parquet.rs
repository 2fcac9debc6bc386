//! lines_parquet: a parser thread's lines written as Parquet while it parses.
//!
//! The store keeps its lines (table event_lines: out::event_schema) as
//! Parquet files of its parts, one per parser thread, and DuckDB reads them
//! in place (queries/schema/002_views.sql). Storing one DuckDB row per line
//! cost 5-6 CPU-seconds per 512 MB of logs (issue 12's floor: `raw` 2.3, each
//! integer column ~0.2 whatever its compression); written here, by the thread
//! that parsed them and without crossing into Python, the same columns cost
//! 0.23 us a line (`examples/parquet_alone.rs`: 402 MB of input per CPU-second
//! on the benchmark corpus' node files, against ~95 for DuckDB's rows).
//!
//! Settings, and why (measured on the 512 MB benchmark corpus):
//! - LZ4 (raw) on every column: DuckDB reads it at half the CPU of zstd (a sum
//!   over every line's raw, 5.4 M lines: 0.24 CPU-s against 0.33; the text
//!   tests of the summaries on marked lines about the same), and it writes
//!   cheaper (0.23 / 0.30 us a line); zstd's files were a third of the size.
//!   DuckDB still reads its own rows, or Parquet it wrote itself, faster (0.14
//!   for the same sum): its writer's pages, not the codec (pyarrow's files
//!   read like these). benchmarks/README.md has the readers' side.
//! - no dictionary for the columns that are unique per line (ids, places,
//!   times, text): a dictionary is tried, then dropped at 1 MB, for nothing.
//! - statistics per column chunk only, none for the text columns: the min and
//!   max of every page of `raw` cost a string compare a line and no reader
//!   prunes on text; the chunks' min/max of event_id, file_id, ts and marks
//!   let DuckDB skip row groups (an evidence line by event_id reads one).
//! - row groups of 122,880 lines (DuckDB's own): DuckDB scans a file with one
//!   thread per row group.

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

/// Lines per row group (DuckDB's row group).
pub const ROW_GROUP: usize = 122_880;

/// Columns whose values are (nearly) unique per line: no dictionary.
const UNIQUE: [&str; 8] = ["event_id", "line", "end_line", "byte_offset", "ts", "ts_text", "raw", "message_at"];
/// Columns no reader filters on: no statistics.
const TEXT: [&str; 2] = ["ts_text", "raw"];
/// Integers that grow line by line within a file: delta encoded.
const GROWING: [&str; 4] = ["event_id", "line", "end_line", "byte_offset"];

/// The writer properties of a lines file; `codec` overrides the compression
/// ("lz4" default, "zstd", "snappy", "none": for the benchmark of the writer).
pub fn properties(codec: Option<&str>) -> Result<WriterProperties, String> {
    let compression = match codec.unwrap_or("lz4") {
        "zstd" => Compression::ZSTD(ZstdLevel::try_new(1).map_err(|e| e.to_string())?),
        "lz4" => Compression::LZ4_RAW,
        "snappy" => Compression::SNAPPY,
        "none" => Compression::UNCOMPRESSED,
        other => return Err(format!("unknown Parquet compression {other:?} (zstd, lz4, snappy, none)")),
    };
    let mut b = WriterProperties::builder()
        .set_compression(compression)
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_created_by("ranktrace".into());
    for c in UNIQUE {
        b = b.set_column_dictionary_enabled(ColumnPath::from(c), false);
    }
    for c in TEXT {
        b = b.set_column_statistics_enabled(ColumnPath::from(c), EnabledStatistics::None);
    }
    for c in GROWING {
        b = b.set_column_encoding(ColumnPath::from(c), Encoding::DELTA_BINARY_PACKED);
    }
    Ok(b.build())
}

/// One Parquet file of lines, written a batch at a time.
pub struct LinesWriter {
    inner: Option<ArrowWriter<File>>,
    rows: u64,
}

impl LinesWriter {
    pub fn create(path: &Path, schema: Arc<Schema>, codec: Option<&str>) -> Result<LinesWriter, String> {
        let file = File::create(path).map_err(|e| format!("{}: cannot create: {e}", path.display()))?;
        let w = ArrowWriter::try_new(file, schema, Some(properties(codec)?)).map_err(|e| e.to_string())?;
        Ok(LinesWriter { inner: Some(w), rows: 0 })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), String> {
        let w = self.inner.as_mut().ok_or("the lines file is closed")?;
        w.write(batch).map_err(|e| e.to_string())?;
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Lines written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Write the footer; the file is complete. Closing twice is a no-op.
    pub fn close(&mut self) -> Result<u64, String> {
        if let Some(w) = self.inner.take() {
            w.close().map_err(|e| e.to_string())?;
        }
        Ok(self.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{DataType, Field};

    #[test]
    fn writes_a_readable_file() {
        let dir = std::env::temp_dir().join(format!("rt-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("l.parquet");
        let schema = Arc::new(Schema::new(vec![
            Field::new("event_id", DataType::Int64, false),
            Field::new("raw", DataType::Utf8, false),
        ]));
        let mut w = LinesWriter::create(&path, schema.clone(), None).unwrap();
        let b = RecordBatch::try_new(schema, vec![
            Arc::new(Int64Array::from(vec![1, 2, 3])),
            Arc::new(StringArray::from(vec!["a", "b", "c"])),
        ])
        .unwrap();
        w.write(&b).unwrap();
        w.write(&b).unwrap();
        assert_eq!(w.close().unwrap(), 6);
        assert_eq!(w.close().unwrap(), 6);
        let r = parquet::file::reader::SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        use parquet::file::reader::FileReader;
        assert_eq!(r.metadata().file_metadata().num_rows(), 6);
        assert!(properties(Some("gzip")).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
