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
    // Variants of the store's settings, one knob each (session 23), chosen by RANKTRACE_PQ_VARIANTS
    // (comma-separated: v2, batch=N, rows=N, page=N, lz4_text_only); the store's is always first.
    use parquet::basic::{Compression, Encoding};
    use parquet::file::properties::{WriterProperties, WriterVersion};
    use parquet::schema::types::ColumnPath;
    let variants = std::env::var("RANKTRACE_PQ_VARIANTS").unwrap_or_default();
    let store = || lines_parquet::properties(None).unwrap().into_builder();
    let mut extra: Vec<(&str, WriterProperties)> = vec![];
    for v in variants.split(',').filter(|v| !v.is_empty()) {
        let props = match v {
            "v2" => {
                let mut b = store().set_writer_version(WriterVersion::PARQUET_2_0);
                for c in ["ts", "ts_text", "raw", "message_at"] {
                    b = b.set_column_encoding(ColumnPath::from(c), Encoding::PLAIN);
                }
                b.build()
            }
            v if v.starts_with("batch=") => store().set_write_batch_size(v[6..].parse().expect("batch=N")).build(),
            v if v.starts_with("rows=") => store().set_data_page_row_count_limit(v[5..].parse().expect("rows=N")).build(),
            v if v.starts_with("page=") => store().set_data_page_size_limit(v[5..].parse().expect("page=N")).build(),
            "lz4_text_only" => {
                let mut b = store().set_compression(Compression::UNCOMPRESSED);
                for c in ["ts_text", "raw"] {
                    b = b.set_column_compression(ColumnPath::from(c), Compression::LZ4_RAW);
                }
                b.build()
            }
            other => panic!("unknown variant {other}"),
        };
        extra.push((Box::leak(v.to_string().into_boxed_str()), props));
    }
    let only_extra = std::env::var_os("RANKTRACE_PQ_ONLY_VARIANTS").is_some();
    let mut settings: Vec<(&str, parquet::file::properties::WriterProperties)> = vec![
        ("store (lz4)", lines_parquet::properties(None).unwrap()),
        ("zstd", lines_parquet::properties(Some("zstd")).unwrap()),
        ("snappy", lines_parquet::properties(Some("snappy")).unwrap()),
        ("none", lines_parquet::properties(Some("none")).unwrap()),
        ("zstd, arrow-rs defaults", default_props),
    ];
    if only_extra {
        settings.truncate(1);
    }
    settings.extend(extra);
    // The settings alternate within each of the N rounds (a shared machine's load moves).
    let mut cpus = vec![0f64; settings.len()];
    let mut sizes = vec![0u64; settings.len()];
    for _ in 0..n {
        for (i, (_, props)) in settings.iter().enumerate() {
            let (cpu, size) = write_timed(&target, &batches, props);
            cpus[i] += cpu;
            sizes[i] = size;
        }
    }
    for (i, (name, _)) in settings.iter().enumerate() {
        let (dc, size) = (cpus[i] / n as f64, sizes[i]);
        eprintln!("{name}: {:.3} CPU-s per pass of {:.1} MB ({rows} lines): {:.0} MB/CPU-s, {:.2} us a line; {:.1} MB written",
                  dc, bytes as f64 / 1e6, bytes as f64 / 1e6 / dc, dc * 1e6 / rows as f64, size as f64 / 1e6);
    }
    // Each column written alone with the store's settings (RANKTRACE_PQ_PER_COLUMN): where the writer's
    // CPU goes, column by column (the columns' sum exceeds the whole by the per-file and per-row-group costs).
    if std::env::var_os("RANKTRACE_PQ_PER_COLUMN").is_some() {
        let schema = batches[0].schema();
        let props = lines_parquet::properties(None).unwrap();
        let mut cpus = vec![0f64; schema.fields().len()];
        let mut sizes = vec![0u64; schema.fields().len()];
        for _ in 0..n {
            for (c, cpu_c) in cpus.iter_mut().enumerate() {
                let one: Vec<RecordBatch> = batches.iter().map(|b| b.project(&[c]).unwrap()).collect();
                let (cpu, size) = write_timed(&target, &one, &props);
                *cpu_c += cpu;
                sizes[c] = size;
            }
        }
        for (c, f) in schema.fields().iter().enumerate() {
            eprintln!("  {:<18} {:.4} CPU-s a pass, {:.1} ns a line; {:.2} MB", f.name(), cpus[c] / n as f64,
                      cpus[c] / n as f64 * 1e9 / rows as f64, sizes[c] as f64 / 1e6);
        }
    }
    std::fs::remove_file(&target).ok();
}

/// `batches` written to `target` with `props`: (the CPU-s it took, the file's size).
fn write_timed(target: &std::path::Path, batches: &[RecordBatch], props: &parquet::file::properties::WriterProperties) -> (f64, u64) {
    let cpu = cpu_seconds();
    let file = std::fs::File::create(target).unwrap();
    let mut w = ArrowWriter::try_new(file, batches[0].schema(), Some(props.clone())).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    (cpu_seconds() - cpu, std::fs::metadata(target).unwrap().len())
}
