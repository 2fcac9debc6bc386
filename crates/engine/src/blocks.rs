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
use std::collections::HashMap;

pub const NO_BLOCK: u32 = u32::MAX;

/// Stream key of a line: the envelope's host, rank, local_rank and weak rank.
fn stream_key(cat: &Catalog, p: &Peeled) -> [Option<(u32, u32)>; 4] {
    let ix = |n: &str| cat.identity.iter().position(|c| c == n).unwrap();
    let (h, r, l) = (ix("host"), ix("rank"), ix("local_rank"));
    let txt = |s: Option<(u32, u32)>| s; // spans: equal text may sit at different spans
    [txt(p.strong[h]), txt(p.strong[r]), txt(p.strong[l]), txt(p.weak[r])]
}

/// Streams of the lines, as small integers (by the text of their keys).
pub fn streams(cat: &Catalog, lines: &[Peeled]) -> Vec<u32> {
    let mut ids: HashMap<[Option<&str>; 4], u32> = HashMap::new();
    lines
        .iter()
        .map(|p| {
            let k = stream_key(cat, p).map(|s| s.map(|s| p.span(s)));
            let n = ids.len() as u32;
            *ids.entry(k).or_insert(n)
        })
        .collect()
}

/// For each line, the block kind that took it (NO_BLOCK) and the line index
/// where its block starts.
pub fn find(cat: &Catalog, lines: &[Peeled], stream: &[u32]) -> (Vec<u32>, Vec<usize>) {
    let n = lines.len();
    let mut block = vec![NO_BLOCK; n];
    let mut start_of = vec![usize::MAX; n];
    if cat.blocks.is_empty() || n == 0 {
        return (block, start_of);
    }
    let n_streams = stream.iter().copied().max().map_or(0, |m| m as usize + 1);
    for (bi, b) in cat.blocks.iter().enumerate() {
        // Cheap exit: no free start line for this kind.
        if !(0..n).any(|i| block[i] == NO_BLOCK && b.start.is_match(lines[i].body())) {
            continue;
        }
        // Per stream: the current segment (its head index, whether a block, its length).
        let mut seg: Vec<Option<(usize, bool, usize)>> = vec![None; n_streams];
        let mut prev_end = vec![false; n_streams];
        for i in 0..n {
            let st = stream[i] as usize;
            let free = block[i] == NO_BLOCK;
            let body = lines[i].body();
            let s = free && b.start.is_match(body);
            let c = free && b.cont.is_match(body);
            let e = free && b.end.as_ref().map_or(false, |r| r.is_match(body));
            let brk = !c || s || prev_end[st] || !free;
            prev_end[st] = e;
            if brk || seg[st].is_none() {
                seg[st] = Some((i, s, 0));
            } else if let Some((_, _, len)) = seg[st].as_mut() {
                *len += 1;
            }
            let (head, isblk, pos) = seg[st].unwrap();
            if isblk && free && pos < b.max_lines {
                block[i] = bi as u32;
                start_of[i] = head;
            }
        }
    }
    (block, start_of)
}

/// Index of the first line of a block still open at the end of the batch:
/// one that holds the last line of its stream and has not seen its end line.
pub fn open_start(cat: &Catalog, lines: &[Peeled], stream: &[u32], block: &[u32], start_of: &[usize]) -> Option<usize> {
    let mut last: HashMap<u32, usize> = HashMap::new();
    for (i, &s) in stream.iter().enumerate() {
        last.insert(s, i);
    }
    last.values()
        .filter(|&&i| block[i] != NO_BLOCK)
        .filter(|&&i| {
            let b = &cat.blocks[block[i] as usize];
            b.end.as_ref().map_or(true, |r| !r.is_match(lines[i].body()))
        })
        .map(|&i| start_of[i])
        .min()
}
