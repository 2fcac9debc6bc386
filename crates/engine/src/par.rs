//! par: the stages of a batch that need no order, spread over the cores a
//! file's parse may use (parallel across chunks of one large file).
//!
//! Peeling, extracting, classifying and building Arrow are per line or per
//! event; framing, blocks, carried identity and interpolated times run in
//! order. A batch is cut only where no block spans the cut, so the events
//! and their order are those of one thread (tested against it).

use crate::blocks::NO_BLOCK;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Parsers inside a batch right now, in this process: a file has the cores
/// the others leave (files are parsed in parallel already).
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// Fewer lines than this per thread cost more to hand out than they save
/// (a thread costs ~20 us; 2 k lines take ~10 ms). Ingest's 1 MB chunks are
/// ~11 k lines of NCCL logs: two threads.
pub const MIN_LINES_PER_THREAD: usize = 2048;
/// At most this many threads for one batch.
pub const MAX_THREADS: usize = 8;

/// Counts this parser in ACTIVE while it lives.
pub struct Active;

impl Active {
    pub fn enter() -> Active {
        ACTIVE.fetch_add(1, Ordering::SeqCst);
        Active
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        ACTIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Threads for a batch of `lines` lines: the cores free of other parsers,
/// or `fixed` when set (tests), bounded by the batch's size.
pub fn threads_for(lines: usize, fixed: Option<usize>) -> usize {
    let by_size = (lines / MIN_LINES_PER_THREAD).max(1);
    if let Some(n) = fixed {
        return n.clamp(1, MAX_THREADS).min(lines.max(1));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let active = ACTIVE.load(Ordering::SeqCst).max(1);
    (cores / active).clamp(1, MAX_THREADS).min(by_size)
}

/// Up to `parts` cut points 0 = c0 < c1 < ... < ck = n into lines with
/// their blocks, none inside a block: every line from a cut on belongs to
/// no block or to one that starts at or after the cut.
pub fn cuts(block: &[u32], start_of: &[usize], parts: usize) -> Vec<usize> {
    let n = block.len();
    // first[i]: the earliest line that a line at or after i belongs with
    let mut first = vec![n; n + 1];
    for i in (0..n).rev() {
        let s = if block[i] == NO_BLOCK { i } else { start_of[i] };
        first[i] = s.min(first[i + 1]);
    }
    let mut out = vec![0];
    for k in 1..parts {
        let mut m = (k * n / parts).max(out[out.len() - 1] + 1);
        while m < n && first[m] < m {
            m += 1;
        }
        if m >= n {
            break;
        }
        out.push(m);
    }
    out.push(n);
    out
}

/// `v` cut at `cuts` (as made by `cuts` or `even`) into slices, in order:
/// nothing moves (splitting a Vec into Vecs copied every part but the first).
pub fn split_mut<'a, T>(v: &'a mut [T], cuts: &[usize]) -> Vec<&'a mut [T]> {
    let mut parts = Vec::with_capacity(cuts.len());
    let mut rest = v;
    for w in cuts.windows(2) {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
        parts.push(head);
        rest = tail;
    }
    parts
}

/// The parts in order as one Vec; a single part is taken as it is (lines
/// and events are ~0.5 KB each: copying them cost ~5% of a line's parse).
pub fn concat<T>(parts: Vec<Vec<T>>) -> Vec<T> {
    let mut parts = parts.into_iter();
    let mut all = parts.next().unwrap_or_default();
    for p in parts {
        all.extend(p);
    }
    all
}

/// Even cut points for `n` independent items.
pub fn even(n: usize, parts: usize) -> Vec<usize> {
    let parts = parts.clamp(1, n.max(1));
    (0..=parts).map(|k| k * n / parts).collect()
}

/// `f` over each part, in scoped threads when there are several; the
/// results in the parts' order.
pub fn map<T: Send, U: Send>(parts: Vec<T>, f: impl Fn(T) -> U + Sync) -> Vec<U> {
    if parts.len() <= 1 {
        return parts.into_iter().map(f).collect();
    }
    let f = &f;
    std::thread::scope(|s| {
        let running: Vec<_> = parts.into_iter().map(|p| s.spawn(move || f(p))).collect();
        running.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_never_split_a_block() {
        // lines 2..=5 are one block (start 2), line 7 a block alone
        let b = NO_BLOCK;
        let block = [b, b, 0, 0, b, 0, b, 1, b, b];
        let start_of = [usize::MAX, usize::MAX, 2, 2, usize::MAX, 2, usize::MAX, 7, usize::MAX, usize::MAX];
        for parts in 1..=6 {
            let c = cuts(&block, &start_of, parts);
            assert_eq!((c[0], *c.last().unwrap()), (0, 10));
            assert!(c.windows(2).all(|w| w[0] < w[1]));
            for &m in &c[1..c.len() - 1] {
                assert!(!(3..=5).contains(&m), "cut {m} inside the block 2..=5 with {parts} parts");
            }
        }
        let mut v = vec![1, 2, 3, 4, 5];
        assert_eq!(split_mut(&mut v, &[0, 2, 5]), vec![&mut [1, 2][..], &mut [3, 4, 5][..]]);
        assert_eq!(split_mut(&mut v[..0], &[0, 0]).len(), 1);
        assert_eq!(even(5, 2), vec![0, 2, 5]);
        assert_eq!(even(0, 4), vec![0, 0]);
        assert_eq!(concat(vec![vec![1, 2], vec![], vec![3]]), vec![1, 2, 3]);
        assert_eq!(concat::<u8>(vec![]), Vec::<u8>::new());
    }

    #[test]
    fn map_keeps_order() {
        assert_eq!(map(vec![3, 1, 2], |x| x * 10), vec![30, 10, 20]);
    }
}
