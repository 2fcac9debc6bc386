//! The Parquet writer alone (lines_parquet.rs): files are parsed once and
//! their batches kept, then written N times with each setting; CPU seconds
//! of the writing only (the floor of "Parquet alone", issue 29).
//!     cargo run --release --example parquet_alone -- SPEC.json N FILE...
//! Settings: the store's (lz4), then other codecs, then the store's with
//! every column's dictionary and statistics left at arrow-rs's defaults.
use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use ranktrace_engine::{compile, lines_parquet, Envelopes, FileParser};

mod common;
use common::cpu_seconds;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cat = compile(&std::fs::read_to_string(&args[1]).expect("spec")).expect("compile");
    let n: usize = args[2].parse().expect("N");
    let mut batches: Vec<RecordBatch> = vec![];
    let mut bytes = 0usize;
    for f in &args[3..] {
        let data = std::fs::read(f).expect("file");
        bytes += data.len();
        let mut p = FileParser::new(cat.clone(), 1, f.clone(), &[], "UTC", Envelopes::Sniff, 1 << 20).unwrap();
        p.feed(&data, true);
        while let Some(o) = p.next_batch() {
            batches.push(o.events);
        }
    }
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    let target = std::env::temp_dir().join(format!("rt-pq-{}.parquet", std::process::id()));
    let default_props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
        .build();
    let settings: Vec<(&str, parquet::file::properties::WriterProperties)> = vec![
        ("store (lz4)", lines_parquet::properties(None).unwrap()),
        ("zstd", lines_parquet::properties(Some("zstd")).unwrap()),
        ("snappy", lines_parquet::properties(Some("snappy")).unwrap()),
        ("none", lines_parquet::properties(Some("none")).unwrap()),
        ("zstd, arrow-rs defaults", default_props),
    ];
    for (name, props) in settings {
        let cpu = cpu_seconds();
        let mut size = 0;
        for _ in 0..n {
            let file = std::fs::File::create(&target).unwrap();
            let mut w = ArrowWriter::try_new(file, batches[0].schema(), Some(props.clone())).unwrap();
            for b in &batches {
                w.write(b).unwrap();
            }
            w.close().unwrap();
            size = std::fs::metadata(&target).unwrap().len();
        }
        let dc = (cpu_seconds() - cpu) / n as f64;
        eprintln!("{name}: {:.3} CPU-s per pass of {:.1} MB ({rows} lines): {:.0} MB/CPU-s, {:.2} us a line; {:.1} MB written",
                  dc, bytes as f64 / 1e6, bytes as f64 / 1e6 / dc, dc * 1e6 / rows as f64, size as f64 / 1e6);
    }
    std::fs::remove_file(&target).ok();
}
