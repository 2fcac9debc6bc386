//! The template floor (issue 29 point 2, "tokenize and discard"): what a
//! per-file template engine would pay per line before it does anything a
//! template decides. Files are read in 1 MB chunks and framed by the
//! engine's own Framer (lines.rs: the same UTF-8 check, CR handling and line
//! cap as an ingest); each line is masked in one pass over its bytes with
//! no regex, CLP-style (y-scope/clp): a token holding a digit (times, ids,
//! counts, IPs, hex with a digit), a slash (paths, `rank/size`), or made of
//! 8+ hex letters is a variable, and a quoted string is one variable. The
//! line with its variables replaced by one marker byte each is its template
//! key; the key is looked up in a per-file hash table (its template id) and
//! the line counted under it. The variables' spans are kept for the line
//! (a template engine reads them), then dropped: nothing is stored.
//!     cargo run --release --example template_alone -- FILE...
//! RANKTRACE_TEMPLATE_MODE=frame stops after framing (the framing's share);
//! =mask masks without the lookup; default: mask, look up and count.
//! RANKTRACE_TEMPLATE_STATS=1 prints, per file, its templates and how soon
//! the set stops growing (the line of its last new template).
//! RANKTRACE_TEMPLATE_FRESH=1 frames each chunk into a new Lines, as
//! FileParser does (default: one Lines, cleared).
//! RANKTRACE_BENCH_CHUNK=BYTES: the chunk fed at a time (1 MB, as ingest).
//! Prints MB/s over the process CPU time of the loop (wall time is noise on
//! a shared machine).
use ranktrace_engine::lines::{Framer, Lines};
use rustc_hash::FxHashMap;
use std::io::Read;
use std::time::Instant;

mod common;
use common::cpu_seconds;

// Byte classes, one table lookup a byte. A delimiter ends a token and stays
// in the key as itself; the flags of a token's bytes are OR-ed as it is read.
const DELIM: u8 = 1;
const DIGIT: u8 = 2;
const HEX: u8 = 4; // a-f, A-F
const SLASH: u8 = 8;
const QUOTE: u8 = 16;
const OTHER: u8 = 32; // any other token byte (letters past f, '.', '-', '_', non-ASCII ...)

const fn table() -> [u8; 256] {
    let mut t = [OTHER; 256];
    let delims = b" \t\r,;:=()[]{}<>|";
    let mut i = 0;
    while i < delims.len() {
        t[delims[i] as usize] = DELIM;
        i += 1;
    }
    let mut b = b'0';
    while b <= b'9' {
        t[b as usize] = DIGIT;
        b += 1;
    }
    let mut b = b'a';
    while b <= b'f' {
        t[b as usize] = HEX;
        t[(b - 32) as usize] = HEX;
        b += 1;
    }
    t[b'/' as usize] = SLASH;
    t[b'\\' as usize] = SLASH;
    t[b'"' as usize] = QUOTE;
    t[b'\'' as usize] = QUOTE;
    t
}
static CLS: [u8; 256] = table();

/// The framer's cap on a line (ingest's: 1 MB).
const MAX_LINE: usize = 1 << 20;

// Marker bytes in a key (control bytes a framed line never holds as itself
// in the logs measured; a template engine would escape them).
const VAR: u8 = 0x11;
const QUOTED: u8 = 0x12;
const PATH: u8 = 0x13;

/// The template key of `line` into `key`, its variables' spans into `vars`.
/// (Writing the key through an index into a buffer sized once, instead of a
/// push per delimiter and a copy per constant token, was measured: the same
/// instructions with unchecked stores, +8% with checked ones; callgrind.)
#[inline]
fn mask(line: &[u8], key: &mut Vec<u8>, vars: &mut Vec<(u32, u32)>) {
    key.clear();
    vars.clear();
    let n = line.len();
    let mut i = 0usize;
    while i < n {
        let c = CLS[line[i] as usize];
        if c == DELIM {
            key.push(line[i]);
            i += 1;
            continue;
        }
        if c == QUOTE {
            // A quoted string at a token's start is one variable, up to its closing quote.
            if let Some(end) = memchr::memchr(line[i], &line[i + 1..]) {
                let close = i + 1 + end;
                vars.push((i as u32, close as u32 + 1));
                key.push(QUOTED);
                i = close + 1;
                continue;
            }
        }
        let start = i;
        let mut flags = 0u8;
        while i < n {
            let c = CLS[line[i] as usize];
            if c == DELIM {
                break;
            }
            flags |= c;
            i += 1;
        }
        if flags & DIGIT != 0 {
            vars.push((start as u32, i as u32));
            key.push(VAR);
        } else if flags & SLASH != 0 {
            vars.push((start as u32, i as u32));
            key.push(PATH);
        } else if flags == HEX && i - start >= 8 {
            vars.push((start as u32, i as u32));
            key.push(VAR);
        } else {
            key.extend_from_slice(&line[start..i]);
        }
    }
}

#[derive(Default)]
struct FileStats {
    lines: u64,
    templates: u32,
    last_new: u64,
    /// templates seen by line 1k, 10k, 100k, 1M
    by: [u32; 4],
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    let mode = std::env::var("RANKTRACE_TEMPLATE_MODE").unwrap_or_default();
    let (frame_only, no_lookup) = (mode == "frame", mode == "mask");
    let stats = std::env::var_os("RANKTRACE_TEMPLATE_STATS").is_some();
    // RANKTRACE_TEMPLATE_FRESH=1: a new Lines per chunk, as FileParser takes one per batch
    // (its buffer allocated anew each MB: page faults); default: one Lines reused.
    let fresh = std::env::var_os("RANKTRACE_TEMPLATE_FRESH").is_some();
    let chunk: usize = std::env::var("RANKTRACE_BENCH_CHUNK").map_or(1 << 20, |v| v.parse().expect("RANKTRACE_BENCH_CHUNK"));
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let (mut bytes, mut lines, mut templates, mut var_count, mut key_bytes) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut buf = vec![0u8; chunk];
    let (mut key, mut vars) = (Vec::with_capacity(256), Vec::with_capacity(64));
    for f in &files {
        let mut file = std::fs::File::open(f).expect("file");
        let mut framer = Framer::new(MAX_LINE);
        let mut out = Lines::default();
        // One table per file: a template engine locks a file's templates as it locks its format.
        let mut table: FxHashMap<Box<[u8]>, u32> = FxHashMap::default();
        let mut counts: Vec<u64> = vec![];
        let mut fs = FileStats::default();
        loop {
            let n = file.read(&mut buf).expect("read");
            framer.feed(&buf[..n], n == 0, &mut out);
            if !frame_only {
                for (_, text) in out.iter() {
                    mask(text.as_bytes(), &mut key, &mut vars);
                    var_count += vars.len() as u64;
                    key_bytes += key.len() as u64;
                    if no_lookup {
                        continue;
                    }
                    fs.lines += 1;
                    let id = match table.get(key.as_slice()) {
                        Some(&id) => id,
                        None => {
                            let id = counts.len() as u32;
                            table.insert(key.as_slice().into(), id);
                            counts.push(0);
                            fs.last_new = fs.lines;
                            id
                        }
                    };
                    counts[id as usize] += 1;
                    if stats {
                        for (k, at) in [1_000u64, 10_000, 100_000, 1_000_000].iter().enumerate() {
                            if fs.lines == *at {
                                fs.by[k] = counts.len() as u32;
                            }
                        }
                    }
                }
            }
            if fresh {
                out = Lines::default(); // as FileParser does: a new buffer per batch
            } else {
                out.clear();
            }
            if n == 0 {
                break;
            }
        }
        bytes += framer.stats.bytes;
        lines += framer.stats.lines;
        fs.templates = counts.len() as u32;
        templates += counts.len() as u64;
        if stats {
            let mut c = counts.clone();
            c.sort_unstable_by(|a, b| b.cmp(a));
            let top10: u64 = c.iter().take(10).sum();
            let name = std::path::Path::new(f).file_name().map_or(f.clone(), |n| n.to_string_lossy().into_owned());
            println!(
                "{name}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:.3}",
                fs.lines, fs.templates, fs.last_new, fs.by[0], fs.by[1], fs.by[2], fs.by[3],
                if fs.lines > 0 { top10 as f64 / fs.lines as f64 } else { 0.0 }
            );
        }
    }
    let (dt, dc) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    let mb = bytes as f64 / 1e6;
    eprintln!(
        "{mb:.1} MB, {lines} lines, {templates} templates, {var_count} variables, {key_bytes} key bytes, {dt:.2} s wall, {dc:.2} s CPU, {:.1} MB/s CPU, {:.3} CPU-s/GB",
        mb / dc,
        dc / (mb / 1000.0)
    );
}
