//! Parse files with a catalog spec, nothing stored: the engine alone.
//!     cargo run --release --example bench -- SPEC.json FILE...
//! With RANKTRACE_BENCH_PARQUET=CODEC (zstd, lz4, snappy, none) the lines are
//! also written as the store's Parquet (lines_parquet.rs) into a temp file:
//! the engine and the writer, nothing else.
//! RANKTRACE_BENCH_CHUNK=BYTES feeds chunks of that size (4 MB; ingest feeds 1 MB).
//! Prints MB/s over the process CPU time of the parse (compile excluded):
//! wall time is noise on a shared machine.
use ranktrace_engine::lines_parquet::LinesWriter;
use ranktrace_engine::{compile, out, Envelopes, FileParser};
use std::time::Instant;

mod common;
use common::cpu_seconds;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cat = compile(&std::fs::read_to_string(&args[1]).expect("spec")).expect("compile");
    let files: Vec<(String, Vec<u8>)> = args[2..].iter().map(|f| (f.clone(), std::fs::read(f).expect("file"))).collect();
    let codec = std::env::var("RANKTRACE_BENCH_PARQUET").ok();
    let target = std::env::temp_dir().join(format!("rt-bench-{}.parquet", std::process::id()));
    let mut sink = codec.as_deref().map(|c| LinesWriter::create(&target, out::event_schema(&cat), Some(c)).expect("parquet"));
    // The chunk fed at a time (RANKTRACE_BENCH_CHUNK, bytes; 4 MB): a batch is a chunk's lines.
    let chunk: usize = std::env::var("RANKTRACE_BENCH_CHUNK").map_or(4 << 20, |v| v.parse().expect("RANKTRACE_BENCH_CHUNK"));
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let (mut bytes, mut rows, mut lines) = (0usize, 0usize, 0u64);
    for (f, data) in &files {
        bytes += data.len();
        let mut p = FileParser::new(cat.clone(), 1, f.clone(), &[], "UTC", Envelopes::Sniff, 1 << 20).unwrap();
        let chunks: Vec<&[u8]> = data.chunks(chunk).collect();
        for (i, c) in chunks.iter().enumerate() {
            p.feed(c, i + 1 == chunks.len());
            while let Some(o) = p.next_batch() {
                rows += o.events.num_rows();
                if let Some(w) = sink.as_mut() {
                    w.write(&o.events).expect("write");
                }
            }
        }
        lines += p.stats().lines;
        if std::env::var_os("RANKTRACE_MEMO_STATS").is_some() {
            eprintln!("{f}: {:?}", p.memo_stats());
        }
    }
    if let Some(w) = sink.as_mut() {
        w.close().expect("close");
        let size = std::fs::metadata(&target).map_or(0, |m| m.len());
        eprintln!("parquet {:?}: {:.1} MB", codec.as_deref().unwrap_or(""), size as f64 / 1e6);
        std::fs::remove_file(&target).ok();
    }
    let (dt, dc) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    let mb = bytes as f64 / 1e6;
    eprintln!("{mb:.1} MB, {lines} lines, {rows} events, {dt:.2} s wall, {dc:.2} s CPU, {:.1} MB/s CPU", mb / dc);
}
