//! classes: what many lines of a file share (the store's `event_classes`).
//!
//! A line's format, pattern, envelopes, time kind, level, classification and
//! text identity (host, pod, program, ...) take a few hundred distinct
//! values in a file of millions of lines. Stored once per line they were
//! most of the cost of storing a line (DuckDB: 5.1 s against 2.4 s for 2.7 M
//! lines), so a line keeps the number of its class and each class is stored
//! once: `(file_id << 32) | k`, k counting a file's classes in the order they
//! first appear. The same file gives the same numbers however it is chunked
//! or threaded, and two files never share one.

use crate::classify::{format_of, Class};
use crate::compile::Catalog;
use crate::events::{Event, Id, Src};
use arrow_array::builder::{Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// The class columns that always have a value.
const REQUIRED: [&str; 4] = ["ts_kind", "format", "severity", "role"];

/// A file keeps at most this many classes in mind: a file whose lines are
/// all different (every line a new pod) numbers the rest anew, with new
/// numbers, so memory stays bounded and a class id is still never reused.
pub const MAX_REMEMBERED: usize = 1 << 16;

/// The text columns of a class, after class_id, file_id and file: the values of `key`, in order.
pub fn columns(cat: &Catalog) -> Vec<&str> {
    let mut c = vec!["ts_kind", "format", "pattern", "envelopes"];
    c.extend(cat.identity.iter().zip(&cat.int_identity).filter(|(_, &int)| !int).map(|(n, _)| n.as_str()));
    c.extend(["level", "severity", "kind", "role"]);
    c
}

pub fn schema(cat: &Catalog) -> Arc<Schema> {
    let mut f = vec![
        Field::new("class_id", DataType::Int64, false),
        Field::new("file_id", DataType::Int64, false),
        Field::new("file", DataType::Utf8, false),
    ];
    f.extend(columns(cat).into_iter().map(|c| Field::new(c, DataType::Utf8, !REQUIRED.contains(&c))));
    Arc::new(Schema::new(f))
}

/// The key of event `e`'s class (its classification `class`, its envelope
/// chain joined `envelopes`) into `key`: the values of `columns`, in order.
pub fn key(cat: &Catalog, e: &Event, class: &Class, envelopes: Option<&str>, key: &mut Vec<u8>) {
    key.clear();
    push(key, e.ts_kind.map(|k| k.as_str()));
    push(key, Some(format_of(cat, e.src).map_or("raw", |f| cat.formats[f].name.as_str())));
    push(key, match e.src {
        Src::Raw => None,
        Src::Pattern(p) => Some(cat.patterns[p as usize].key.as_str()),
        Src::Block(b) => Some(cat.blocks[b as usize].key.as_str()),
    });
    push(key, envelopes);
    for &c in &cat.text_identity {
        push(key, e.ids[c].text(&e.raw));
    }
    push(key, e.level.map(|s| e.span(s)));
    push(key, Some(cat.severities[class.severity as usize].as_str()));
    push(key, class.kind.map(|k| cat.kinds[k].name.as_str()));
    push(key, Some(class.role));
}

/// Whether events `a` and `b` (with their classifications) have the same
/// class key: the same values of everything `key` reads. Runs of lines of
/// one class are the rule (a rank's NCCL lines; ranks are integer
/// identity, not part of the key), and comparing is cheaper than building.
///
/// The identity texts are compared first: where two lines' classes differ it is
/// most often in them (an srun output interleaves its ranks' lines, each host's
/// a class of its own: the line before was another host's for ~94% of the
/// long run's lines), and two short host names answer at once, where the
/// envelope chains, the role and the level compared first learnt nothing
/// (659 -> 469 instructions a line in this function, callgrind, session 11).
/// Only the text columns are visited (`Catalog::text_identity`), each raw text
/// is dereferenced once, and short texts and the role are compared without a
/// call to memcmp: at ~306 instructions a call this was 4% of the engine's
/// instructions on the corpus node log (callgrind, session 22).
pub fn same_key(cat: &Catalog, a: &Event, ca: &Class, b: &Event, cb: &Class) -> bool {
    let (ra, rb) = (a.raw.as_bytes(), b.raw.as_bytes());
    a.src == b.src
        && cat.text_identity.iter().all(|&c| same_text(&a.ids[c], ra, &b.ids[c], rb))
        && a.ts_kind == b.ts_kind
        && ca.severity == cb.severity
        && ca.kind == cb.kind
        && same_str(ca.role, cb.role)
        && a.envelopes == b.envelopes
        && match (a.level, b.level) {
            (None, None) => true,
            (Some(x), Some(y)) => eq_bytes(span_bytes(ra, x), span_bytes(rb, y)),
            _ => false,
        }
}

/// Whether two identity values have the same text (`Id::bytes`: none for
/// Id::None and Id::Int alike): most are none in both, or one pattern's
/// program (one shared text); else their bytes.
#[inline(always)]
fn same_text(x: &Id, x_raw: &[u8], y: &Id, y_raw: &[u8]) -> bool {
    match (x, y) {
        (Id::None, Id::None) => true,
        (Id::Span(a, b), Id::Span(c, d)) => eq_bytes(span_bytes(x_raw, (*a, *b)), span_bytes(y_raw, (*c, *d))),
        (Id::Text(p), Id::Text(q)) => Arc::ptr_eq(p, q) || eq_bytes(p.as_bytes(), q.as_bytes()),
        _ => x.bytes(x_raw) == y.bytes(y_raw),
    }
}

/// Two roles: most often the one text of the catalog's (its address); else their bytes.
#[inline(always)]
fn same_str(a: &str, b: &str) -> bool {
    a.len() == b.len() && (a.as_ptr() == b.as_ptr() || eq_bytes(a.as_bytes(), b.as_bytes()))
}

/// `a == b` for the short texts of a class (host names, levels, roles: a few
/// to ~20 bytes), a word at a time below 17 bytes instead of a call to memcmp.
#[inline(always)]
fn eq_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    match n {
        0 => true,
        1..=7 => a.iter().zip(b).all(|(x, y)| x == y),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

/// A hash of everything `same_key` compares: events with the same class key
/// have the same hash (the converse is checked with `same_key`).
pub fn key_hash(cat: &Catalog, e: &Event, class: &Class) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    let raw = e.raw.as_bytes();
    (e.src, e.ts_kind, e.envelopes, class.severity, class.kind, class.role).hash(&mut h);
    e.level.map(|s| span_bytes(raw, s)).hash(&mut h);
    for &c in &cat.text_identity {
        e.ids[c].bytes(raw).hash(&mut h);
    }
    h.finish()
}

/// The bytes of a span of `raw` (bytes: no char-boundary checks; equal
/// bytes are equal texts).
#[inline(always)]
fn span_bytes(raw: &[u8], s: (u32, u32)) -> &[u8] {
    &raw[s.0 as usize..s.1 as usize]
}

/// Appends one value of a class key: 0 (null) or 1, its length (u32 LE) and its bytes.
#[inline]
fn push(key: &mut Vec<u8>, v: Option<&str>) {
    match v {
        None => key.push(0),
        Some(s) => {
            key.push(1);
            key.extend_from_slice(&(s.len() as u32).to_le_bytes());
            key.extend_from_slice(s.as_bytes());
        }
    }
}

/// The values of a key made by `push`.
fn values(mut key: &[u8]) -> impl Iterator<Item = Option<&str>> {
    std::iter::from_fn(move || {
        let (&tag, rest) = key.split_first()?;
        if tag == 0 {
            key = rest;
            return Some(None);
        }
        let n = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
        let s = std::str::from_utf8(&rest[4..4 + n]).expect("a class key holds whole strings");
        key = &rest[4 + n..];
        Some(Some(s))
    })
}

/// The classes of a part of a batch: each event's class as an index into
/// `keys`, the distinct keys first seen first.
#[derive(Default)]
pub struct Local {
    pub of: Vec<u32>,
    pub keys: Vec<Vec<u8>>,
    index: FxHashMap<Vec<u8>, u32>,
}

impl Local {
    pub fn with_capacity(n: usize) -> Local {
        Local { of: Vec::with_capacity(n), ..Default::default() }
    }

    /// The class of the next event, whose key is the key of the event before
    /// (runs of one class are the rule: the caller compares the events, `same_key`).
    pub fn again(&mut self) {
        let k = *self.of.last().expect("an event before");
        self.of.push(k);
    }

    /// The class of the next event: class `k`, already numbered (the caller
    /// found an event of that class with the same key, `same_key`).
    pub fn push(&mut self, k: u32) {
        debug_assert!((k as usize) < self.keys.len());
        self.of.push(k);
    }

    /// The class of the next event, whose key is `key`; returns it.
    pub fn add(&mut self, key: &[u8]) -> u32 {
        let k = match self.index.get(key) {
            Some(&k) => k,
            None => {
                let k = self.keys.len() as u32;
                self.keys.push(key.to_vec());
                self.index.insert(key.to_vec(), k);
                k
            }
        };
        self.of.push(k);
        k
    }
}

/// The classes a file has numbered so far.
#[derive(Default)]
pub struct FileClasses {
    known: FxHashMap<Vec<u8>, u32>,
    next: u32,
}

impl FileClasses {
    /// Number a part's classes (parts are given in file order): each
    /// event's class id, and the classes new to the file as a batch.
    pub fn assign(&mut self, cat: &Catalog, file_id: i64, file: &str, local: Local) -> (ArrayRef, RecordBatch) {
        let mut new: Vec<(u32, Vec<u8>)> = Vec::new();
        let ids: Vec<i64> = local
            .keys
            .into_iter()
            .map(|key| {
                let k = match self.known.get(&key) {
                    Some(&k) => k,
                    None => {
                        if self.known.len() >= MAX_REMEMBERED {
                            self.known.clear();
                        }
                        let k = self.next;
                        self.next += 1;
                        self.known.insert(key.clone(), k);
                        new.push((k, key));
                        k
                    }
                };
                (file_id << 32) | k as i64
            })
            .collect();
        let mut col = Int64Builder::with_capacity(local.of.len());
        local.of.iter().for_each(|&i| col.append_value(ids[i as usize]));
        (Arc::new(col.finish()), batch(cat, file_id, file, &new))
    }
}

fn batch(cat: &Catalog, file_id: i64, file: &str, new: &[(u32, Vec<u8>)]) -> RecordBatch {
    let schema = schema(cat);
    let mut id = Int64Builder::with_capacity(new.len());
    let mut fid = Int64Builder::with_capacity(new.len());
    let mut fname = StringBuilder::new();
    let mut texts: Vec<StringBuilder> = (3..schema.fields().len()).map(|_| StringBuilder::new()).collect();
    for (k, key) in new {
        id.append_value((file_id << 32) | *k as i64);
        fid.append_value(file_id);
        fname.append_value(file);
        for (b, v) in texts.iter_mut().zip(values(key)) {
            b.append_option(v);
        }
    }
    let mut cols: Vec<ArrayRef> = vec![Arc::new(id.finish()), Arc::new(fid.finish()), Arc::new(fname.finish())];
    cols.extend(texts.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
    RecordBatch::try_new(schema, cols).expect("class batch matches its schema")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        let mut key = Vec::new();
        for v in [Some("exact"), None, Some(""), Some("naïve>x")] {
            push(&mut key, v);
        }
        assert_eq!(values(&key).collect::<Vec<_>>(), vec![Some("exact"), None, Some(""), Some("naïve>x")]);
    }

    /// `eq_bytes` is `==` at every length it splits on (0, 1-7, 8-16, longer), wherever
    /// two texts differ; `same_text` and `same_str` answer as comparing `Id::bytes` and the
    /// texts do, for every pair of values (a span, a shared text, none, an integer).
    #[test]
    fn short_compares_are_equality() {
        let mut texts: Vec<Vec<u8>> = vec![];
        for n in [0usize, 1, 3, 7, 8, 9, 15, 16, 17, 40] {
            let base: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            texts.push(base.clone());
            for i in 0..n {
                let mut t = base.clone();
                t[i] = b'#';
                texts.push(t);
            }
        }
        for a in &texts {
            for b in &texts {
                assert_eq!(eq_bytes(a, b), a == b, "{a:?} {b:?}");
            }
        }
        let raw = "node07 node07 node0700000000000 x";
        let raw2 = "xx node07 node0700000000000";
        let text = |t: &str| Id::Text(crate::events::shared(t));
        let shared = crate::events::shared("node07");
        let ids = [Id::None, Id::Int(7), Id::Span(0, 6), Id::Span(7, 13), Id::Span(14, 31), Id::Span(0, 0), Id::Span(32, 33),
                   text("node07"), text("node0700000000000"), text(""), Id::Text(shared.clone()), Id::Text(shared)];
        for x in &ids {
            for y in &ids {
                for (rx, ry) in [(raw, raw), (raw, raw2)] {
                    if [x, y].iter().zip([rx, ry]).any(|(v, r)| matches!(v, Id::Span(_, b) if *b as usize > r.len())) {
                        continue;
                    }
                    let want = x.bytes(rx.as_bytes()) == y.bytes(ry.as_bytes());
                    assert_eq!(same_text(x, rx.as_bytes(), y, ry.as_bytes()), want, "{x:?} in {rx:?}, {y:?} in {ry:?}");
                }
            }
        }
        let info = String::from("info");
        for (a, b) in [("info", "info"), ("info", info.as_str()), ("info", "cause"), ("", ""), ("victim", "victin")] {
            assert_eq!(same_str(a, b), a == b);
        }
    }

    #[test]
    fn local_numbers_first_seen_first() {
        let mut l = Local::default();
        for k in [b"b".as_slice(), b"a", b"b", b"c", b"a"] {
            l.add(k);
        }
        assert_eq!(l.of, vec![0, 1, 0, 2, 1]);
        assert_eq!(l.keys, vec![b"b".to_vec(), b"a".to_vec(), b"c".to_vec()]);
    }
}
