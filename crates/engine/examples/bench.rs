//! Parse files with a catalog spec, nothing stored: the engine alone.
//!     cargo run --release --example bench -- SPEC.json FILE...
use ranktrace_engine::{compile, Envelopes, FileParser};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cat = compile(&std::fs::read_to_string(&args[1]).expect("spec")).expect("compile");
    let t = Instant::now();
    let (mut bytes, mut rows) = (0usize, 0usize);
    for f in &args[2..] {
        let data = std::fs::read(f).expect("file");
        bytes += data.len();
        let mut p = FileParser::new(cat.clone(), 1, f.clone(), &[], "UTC", Envelopes::Sniff, 1 << 20).unwrap();
        let chunks: Vec<&[u8]> = data.chunks(16 << 20).collect();
        for (i, c) in chunks.iter().enumerate() {
            p.feed(c, i + 1 == chunks.len());
            while let Some(o) = p.next_batch() {
                rows += o.events.num_rows();
            }
        }
    }
    let dt = t.elapsed().as_secs_f64();
    eprintln!("{:.1} MB, {rows} events, {dt:.2} s, {:.1} MB/s", bytes as f64 / 1e6, bytes as f64 / 1e6 / dt);
}
