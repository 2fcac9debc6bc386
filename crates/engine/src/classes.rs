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
    for c in (0..cat.identity.len()).filter(|&c| !cat.int_identity[c]) {
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
pub fn same_key(cat: &Catalog, a: &Event, ca: &Class, b: &Event, cb: &Class) -> bool {
    a.src == b.src
        && (0..cat.identity.len()).all(|c| cat.int_identity[c] || same_text(&a.ids[c], &a.raw, &b.ids[c], &b.raw))
        && a.ts_kind == b.ts_kind
        && ca.severity == cb.severity
        && ca.kind == cb.kind
        && ca.role == cb.role
        && a.envelopes == b.envelopes
        && a.level.map(|s| span_bytes(&a.raw, s)) == b.level.map(|s| span_bytes(&b.raw, s))
}

/// Whether two identity values have the same text: most are none in both,
/// or one pattern's program (one shared text); else their bytes.
#[inline]
fn same_text(x: &Id, x_raw: &str, y: &Id, y_raw: &str) -> bool {
    match (x, y) {
        (Id::None, Id::None) => true,
        (Id::Text(p), Id::Text(q)) if Arc::ptr_eq(p, q) => true,
        _ => x.bytes(x_raw) == y.bytes(y_raw),
    }
}

/// A hash of everything `same_key` compares: events with the same class key
/// have the same hash (the converse is checked with `same_key`).
pub fn key_hash(cat: &Catalog, e: &Event, class: &Class) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    (e.src, e.ts_kind, e.envelopes, class.severity, class.kind, class.role).hash(&mut h);
    e.level.map(|s| span_bytes(&e.raw, s)).hash(&mut h);
    for c in 0..cat.identity.len() {
        if !cat.int_identity[c] {
            e.ids[c].bytes(&e.raw).hash(&mut h);
        }
    }
    h.finish()
}

/// The bytes of a span of `raw` (bytes: no char-boundary checks; equal
/// bytes are equal texts).
#[inline]
fn span_bytes(raw: &str, s: (u32, u32)) -> &[u8] {
    &raw.as_bytes()[s.0 as usize..s.1 as usize]
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
