//! blocks: consecutive lines of one stream that form one event (a traceback,
//! a torchrun failure summary, a describe section).
//!
//! A stream is the lines of a file that share the envelope identity (host,
//! rank, local rank, weak rank), so two ranks' interleaved tracebacks stay
//! apart. Per block kind, in catalog order, over lines no earlier kind took:
//! a block is a `start` line and the following lines of its stream that
//! match `continue` (and are no new start), through an `end` line, at most
//! `max_lines` lines.

use crate::compile::Catalog;
use crate::peel::Peeled;
use rustc_hash::FxHashMap as HashMap;

pub const NO_BLOCK: u32 = u32::MAX;

/// Stream key of a line: the envelope's host, rank, local_rank and weak rank.
/// The identity columns of a stream key: host, rank, local_rank.
fn stream_cols(cat: &Catalog) -> (usize, usize, usize) {
    let ix = |n: &str| cat.identity.iter().position(|c| c == n).unwrap();
    (ix("host"), ix("rank"), ix("local_rank"))
}

/// Stream key of a line (`cols`: `stream_cols`).
fn stream_key(cols: (usize, usize, usize), p: &Peeled) -> [Option<(u32, u32)>; 4] {
    let (h, r, l) = cols;
    [p.strong[h], p.strong[r], p.strong[l], p.weak[r]]
}

/// Streams of the lines, as small integers (by the text of their keys).
pub fn streams(cat: &Catalog, lines: &[Peeled]) -> Vec<u32> {
    let mut ids: HashMap<[Option<&str>; 4], u32> = HashMap::default();
    // Lines of one stream come in runs: the line before's key is compared, not hashed.
    let mut last: Option<([Option<&str>; 4], u32)> = None;
    let cols = stream_cols(cat);
    lines
        .iter()
        .map(|p| {
            let k = stream_key(cols, p).map(|s| s.map(|s| p.span(s)));
            if let Some((_, id)) = last.filter(|(lk, _)| *lk == k) {
                return id;
            }
            let n = ids.len() as u32;
            let id = *ids.entry(k).or_insert(n);
            last = Some((k, id));
            id
        })
        .collect()
}

/// For each line, the block kind that took it (NO_BLOCK) and the line index
/// where its block starts.
/// `start_bits`: the block kinds each line starts (`cat.start_words` per line,
/// shape.rs), were it free.
pub fn find(cat: &Catalog, lines: &[Peeled], stream: &[u32], start_bits: &[u64]) -> (Vec<u32>, Vec<usize>) {
    let n = lines.len();
    let mut block = vec![NO_BLOCK; n];
    let mut start_of = vec![usize::MAX; n];
    if cat.blocks.is_empty() || n == 0 {
        return (block, start_of);
    }
    let n_streams = stream.iter().copied().max().map_or(0, |m| m as usize + 1);
    let w = cat.start_words;
    // The kinds some line may start: most batches start one or two of them.
    let mut any = vec![0u64; w];
    for row in start_bits.chunks_exact(w) {
        any.iter_mut().zip(row).for_each(|(a, r)| *a |= r);
    }
    for (bi, b) in cat.blocks.iter().enumerate() {
        if !crate::literals::has(&any, bi) {
            continue;
        }
        let starts: Vec<bool> =
            (0..n).map(|i| block[i] == NO_BLOCK && crate::literals::has(&start_bits[i * w..(i + 1) * w], bi)).collect();
        if !starts.iter().any(|&s| s) {
            continue; // no free start line for this kind
        }
        // Per stream, the open block segment: (head index, length so far).
        // A line outside a block segment is in a block only if it starts one
        // (a start always begins a segment); so `continue` and `end` are
        // only tested on lines that follow a block line of their stream.
        let mut seg: Vec<Option<(usize, usize)>> = vec![None; n_streams];
        let mut prev_end = vec![false; n_streams];
        for i in 0..n {
            let st = stream[i] as usize;
            let free = block[i] == NO_BLOCK;
            let s = starts[i];
            let body = lines[i].body();
            let ascii = lines[i].ascii;
            let cont = || free && !s && !prev_end[st] && b.cont.is_match(body, ascii);
            match seg[st] {
                Some((head, len)) if cont() => {
                    seg[st] = Some((head, len + 1));
                    if len + 1 < b.max_lines {
                        block[i] = bi as u32;
                        start_of[i] = head;
                    }
                }
                _ => {
                    seg[st] = if s { Some((i, 0)) } else { None };
                    if s {
                        block[i] = bi as u32;
                        start_of[i] = i;
                    }
                }
            }
            prev_end[st] = seg[st].is_some() && free && b.end.as_ref().map_or(false, |r| r.is_match(body, ascii));
        }
    }
    (block, start_of)
}

/// Index of the first line of a block still open at the end of the batch:
/// one that holds the last line of its stream and has not seen its end line.
pub fn open_start(cat: &Catalog, lines: &[Peeled], stream: &[u32], block: &[u32], start_of: &[usize]) -> Option<usize> {
    let mut last: HashMap<u32, usize> = HashMap::default();
    for (i, &s) in stream.iter().enumerate() {
        last.insert(s, i);
    }
    last.values()
        .filter(|&&i| block[i] != NO_BLOCK)
        .filter(|&&i| {
            let b = &cat.blocks[block[i] as usize];
            b.end.as_ref().map_or(true, |r| !r.is_match(lines[i].body(), lines[i].ascii))
        })
        .map(|&i| start_of[i])
        .min()
}

/// Most lines a batch hands on to the next one for a block still open at its
/// end. Interleaved streams make a block span more lines than its own
/// (512 ranks' 40-line tracebacks: ~20 k); past this the block is cut at the
/// batch boundary, so that one open block followed by a flood of other
/// streams' lines costs neither memory nor quadratic time.
pub const CARRY_LIMIT: usize = 32_768;

/// Index from which the lines of a batch wait for the next batch: the start
/// of the first block still open at its end, moved back to the start of any
/// block with a line past that point (an interleaved block of another stream
/// would be cut in two otherwise). None: nothing waits (or too much would).
pub fn carry_from(cat: &Catalog, lines: &[Peeled], stream: &[u32], block: &[u32], start_of: &[usize]) -> Option<usize> {
    let mut keep = open_start(cat, lines, stream, block, start_of)?;
    loop {
        let back = (keep..lines.len()).filter(|&i| block[i] != NO_BLOCK).map(|i| start_of[i]).min().unwrap_or(keep);
        if back >= keep {
            break;
        }
        keep = back;
    }
    (lines.len() - keep <= CARRY_LIMIT).then_some(keep)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams are numbered by the text of their keys, first seen first,
    /// whether a line follows one of its stream or not.
    #[test]
    fn streams_by_key_text() {
        let spec = r#"{"identity": ["host", "rank", "local_rank", "program"], "int_identity": ["rank", "local_rank"],
            "severities": ["info"], "envelopes": [], "patterns": [], "blocks": [], "rules": [], "facts": [],
            "fact_tables": {}, "kinds": {}, "levels": {}}"#;
        let cat = Catalog::compile(&crate::CatalogSpec::from_json(spec).unwrap()).unwrap();
        let line = |raw: &'static str, host: Option<(u32, u32)>, weak_rank: Option<(u32, u32)>| {
            let (mut s, _) = crate::peel::peel(&cat, &[], &mut [], raw, true, &mut Default::default());
            s.strong[0] = host;
            s.weak[1] = weak_rank;
            Peeled::new(0, 0, raw, std::sync::Arc::new(s))
        };
        let lines = [
            line("a x", Some((0, 1)), None),
            line("a y", Some((0, 1)), None),
            line("b x", Some((0, 1)), None),
            line("a z", Some((0, 1)), None),
            line("a 1", Some((0, 1)), Some((2, 3))),
            line("a 2", Some((0, 1)), Some((2, 3))),
            line("a 1", Some((0, 1)), Some((2, 3))),
            line("zzz", None, None),
        ];
        assert_eq!(streams(&cat, &lines), vec![0, 0, 1, 0, 2, 3, 2, 4]);
    }
}
