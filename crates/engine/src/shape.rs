//! shape: the byte classes of everything that reads a line's structure.
//!
//! Peeling, the literal scan, block starts and the first-pattern claim only
//! ever ask of a line's bytes which class each is in: the classes of the
//! catalog's automata (every envelope, pattern and block regex, as the
//! ASCII twins run them), split further by every required literal, deny
//! prefix and first-character table, and by ASCII whitespace (blank lines).
//! Bytes in one class are never told apart by any of them (regex-automata
//! computes the classes so that a DFA can step on classes instead of
//! bytes; look-around such as `\b` splits them too). So two ASCII lines
//! with the same class sequence, their *shape*, are peeled, scanned and
//! claimed alike, with every capture at the same offsets; only the text in
//! those spans differs. A log repeats few shapes (an NCCL line differs from
//! the next in its digits), so the structure is worked out once per shape.
//!
//! The parts that tell digits apart (a day `[0-3]\d`, `0x`) are left out of
//! the classes; what a reading asked of them is kept with its shape as a
//! trace (question, answer). A later line of the shape asks those questions
//! alone, of its own bytes: same answers, same structure (every other
//! question has the shape's answer), so a syslog line pays for its time
//! regex, not for the whole claim.
//!
//! The classes are split by the literals of parsers/marks.toml too (ASCII
//! case-folded, as marks.rs finds them; a class is a range of bytes, so a
//! letter's two cases are two classes): where a literal occurs is then a
//! matter of the class sequence, and a shape's lines share its marks.

use crate::compile::Catalog;
use crate::guard::Guard;
use crate::peel::{self, Claim, EnvTimes, Peeled, Span, Structure};
use crate::rx::{Locs, Rx};
use crate::timefmt::Zoner;
use regex_automata::nfa::thompson::{self, WhichCaptures, NFA};
use regex_automata::util::syntax;
use std::sync::Arc;

/// Byte -> class id, for ASCII lines.
#[derive(Clone)]
pub struct Classes {
    pub of: [u8; 256],
    /// per class id, its ASCII bytes as bits (guard.rs asks it per offset)
    pub ascii: Box<[u128; 256]>,
}

impl Default for Classes {
    fn default() -> Classes {
        Classes::new([0; 256])
    }
}

impl Classes {
    pub fn new(of: [u8; 256]) -> Classes {
        let mut ascii = Box::new([0u128; 256]);
        for b in 0..128u8 {
            ascii[of[b as usize] as usize] |= 1 << b;
        }
        Classes { of, ascii }
    }

    /// The shape of an ASCII text: its length and its bytes' classes, into `out`.
    #[inline]
    pub fn shape(&self, text: &[u8], out: &mut Vec<u8>) {
        out.clear();
        self.push_shape(text, out);
    }

    /// Whether ASCII texts `a` and `b` have the same shape (`shape`): the same
    /// length and every byte where they differ in the same class (`same_where_differ`).
    pub fn same_shape(&self, a: &[u8], b: &[u8]) -> bool {
        let of = &self.of;
        same_where_differ(a, b, |d| of[a[d] as usize] == of[b[d] as usize])
    }

    /// Digits one class, every other byte one of its own (tests).
    #[cfg(test)]
    pub fn of_digits() -> Classes {
        let mut of = [0u8; 256];
        for b in 0..=255u8 {
            of[b as usize] = if b.is_ascii_digit() { b'0' } else { b };
        }
        Classes::new(of)
    }

    /// `shape`, appended to `out`.
    #[inline]
    pub fn push_shape(&self, text: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
        out.extend(text.iter().map(|&b| self.of[b as usize]));
    }
}

/// Which parts of the catalog tell one digit from another (`[0-3]\d` in a
/// day, a literal `mlx5`). They are left out of the classes, so that a
/// shape stands for every line that differs from it in its digits only;
/// a line whose reading asks any of them is read from its bytes.
#[derive(Clone, Default)]
pub struct Sensitive {
    pub env_first: Vec<bool>,
    pub env_literals: Vec<bool>,
    pub env_deny: Vec<bool>,
    pub env_regex: Vec<bool>,
    pub pat_regex: Vec<bool>,
    pub block_start: Vec<bool>,
    /// per identity token (identity.rs): whether it tells digits apart
    pub token_regex: Vec<bool>,
    /// whether the candidate patterns of a body depend on which digit starts it
    pub by_first: bool,
}

/// The classes and what they leave out.
#[derive(Clone, Default)]
pub struct Shapes {
    pub classes: Classes,
    pub sensitive: Sensitive,
    /// the required literals with a digit (`mlx5`): where they occur is
    /// part of a line's shape, so that asking for them reads the shape
    digit_literals: DigitLiterals,
    /// whether a shape decides its lines' marks (false when a mark's literal
    /// has a digit, which the classes do not tell apart)
    pub marks_by_shape: bool,
}

/// The literals with a digit, found in a line. There are few (three in
/// the catalog): one memchr pass for their first bytes and a comparison at
/// each hit cost less than a memmem search per literal.
#[derive(Clone, Default)]
pub struct DigitLiterals {
    lits: Vec<Vec<u8>>,
    /// their distinct first bytes, when at most three (else: one memmem search each)
    firsts: Option<Vec<u8>>,
    finders: Vec<memchr::memmem::Finder<'static>>,
    /// per byte value: (literal, offset) wherever a literal has that byte
    at: Box<[Vec<(u16, u16)>]>,
}

impl DigitLiterals {
    pub fn new(lits: &[&str]) -> DigitLiterals {
        let mut firsts: Vec<u8> = lits.iter().filter_map(|l| l.as_bytes().first().copied()).collect();
        firsts.sort_unstable();
        firsts.dedup();
        let all_nonempty = lits.iter().all(|l| !l.is_empty());
        DigitLiterals {
            lits: lits.iter().map(|l| l.as_bytes().to_vec()).collect(),
            firsts: (all_nonempty && firsts.len() <= 3).then_some(firsts),
            finders: lits.iter().map(|l| memchr::memmem::Finder::new(l.as_bytes()).into_owned()).collect(),
            at: {
                let mut at = vec![Vec::new(); 256];
                for (k, l) in lits.iter().enumerate() {
                    for (j, &b) in l.as_bytes().iter().enumerate() {
                        at[b as usize].push((k as u16, j as u16));
                    }
                }
                at.into()
            },
        }
    }

    /// Whether `a` and `b` (of one length, told apart at byte `d` only
    /// among the bytes of some window) have the same literals at every
    /// offset whose window holds byte `d`: such a window that holds a
    /// literal in either has that literal's byte at `d`.
    fn same_around(&self, a: &[u8], b: &[u8], d: usize) -> bool {
        self.at[a[d] as usize].iter().chain(&self.at[b[d] as usize]).all(|&(k, j)| {
            let (l, j) = (&self.lits[k as usize], j as usize);
            d < j || a[d - j..].starts_with(l) == b[d - j..].starts_with(l)
        })
    }

    /// Appends to `out` every (literal, offset) where a literal occurs in
    /// `line`, overlapping ones too, in an order that depends only on that set.
    fn push_found(&self, line: &[u8], out: &mut Vec<u8>) {
        let mut note = |k: usize, at: usize| {
            out.extend_from_slice(&(k as u16).to_le_bytes());
            out.extend_from_slice(&(at as u32).to_le_bytes());
        };
        match &self.firsts {
            Some(firsts) => {
                let mut at = |i: usize| {
                    for (k, l) in self.lits.iter().enumerate() {
                        if line[i..].starts_with(l) {
                            note(k, i);
                        }
                    }
                };
                match firsts.as_slice() {
                    [] => {}
                    [a] => memchr::memchr_iter(*a, line).for_each(&mut at),
                    [a, b] => memchr::memchr2_iter(*a, *b, line).for_each(&mut at),
                    [a, b, c, ..] => memchr::memchr3_iter(*a, *b, *c, line).for_each(&mut at),
                }
            }
            None => {
                for (k, f) in self.finders.iter().enumerate() {
                    let mut from = 0usize;
                    while let Some(i) = f.find(&line[from..]) {
                        note(k, from + i);
                        from += i + 1;
                    }
                }
            }
        }
    }
}

impl Shapes {
    /// The shape of an ASCII line, into `out`: its bytes' classes, then
    /// where each literal with a digit occurs in it.
    pub fn key(&self, line: &[u8], out: &mut Vec<u8>) {
        self.classes.shape(line, out);
        self.digit_literals.push_found(line, out);
    }

    /// Whether ASCII `line` has the key that `key` made of `prev` (of the
    /// same length, every byte where the two differ in the same class, and
    /// the literals with a digit where they were: only the windows holding
    /// a byte that differs can tell). Consecutive lines of a log often
    /// differ in a few digits only (an NCCL rank's channel lines): a word
    /// compare at a time costs less than a class per byte into a new key.
    pub fn same_key_as(&self, line: &[u8], prev: &[u8]) -> bool {
        let of = &self.classes.of;
        same_where_differ(line, prev, |d| {
            of[line[d] as usize] == of[prev[d] as usize] && self.digit_literals.same_around(line, prev, d)
        })
    }
}

/// Whether `a` and `b` have the same length and `same_at(d)` holds at every
/// byte `d` where they differ: compared a word at a time, `same_at` asked only
/// of the bytes of a word that differ (the set bits of the XOR). Consecutive
/// lines and messages of a log differ in a few digits at most, so this costs
/// a compare per 8 bytes and a test per differing byte. The one loop of
/// `Classes::same_shape` (a byte's class) and `Shapes::same_key_as` (its class
/// and the literals with a digit around it).
#[inline(always)]
fn same_where_differ(a: &[u8], b: &[u8], same_at: impl Fn(usize) -> bool) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
    let words = a.len() / 8;
    (0..words).all(|w| {
        let mut x = word(&a[w * 8..w * 8 + 8]) ^ word(&b[w * 8..w * 8 + 8]);
        while x != 0 {
            let i = x.trailing_zeros() as usize / 8;
            if !same_at(w * 8 + i) {
                return false;
            }
            x &= !(0xff << (i * 8));
        }
        true
    }) && (words * 8..a.len()).all(|d| a[d] == b[d] || same_at(d))
}

/// A literal as a regex.
fn escape(lit: &str) -> String {
    let mut s = String::with_capacity(lit.len() * 2);
    for c in lit.chars() {
        if c.is_ascii_punctuation() || c == ' ' {
            s.push_str(&format!("\\x{:02X}", c as u32));
        } else {
            s.push(c);
        }
    }
    s
}

/// A first-character table as a class of its ASCII bytes but digits (entry
/// 128, any non-ASCII character, never applies to an ASCII line). Which
/// digit a body starts with is asked of the table itself (`first_splits`).
fn byte_set(set: &[bool; 129]) -> String {
    let bytes: String =
        (0..128u8).filter(|&b| set[b as usize] && !b.is_ascii_digit()).map(|b| format!("\\x{b:02X}")).collect();
    if bytes.is_empty() {
        "[^\\x00-\\x{10FFFF}]".into() // admits nothing: splits nothing
    } else {
        format!("[{bytes}]")
    }
}

/// The classes of one regex as the engine runs it on ASCII lines: the ASCII
/// twin when it has one, else the Unicode regex.
fn byte_classes(pattern: &str) -> Result<[u8; 256], String> {
    let build = |unicode: bool| {
        NFA::compiler()
            .syntax(syntax::Config::new().unicode(unicode).utf8(unicode))
            .configure(thompson::Config::new().which_captures(WhichCaptures::None).shrink(false))
            .build(pattern)
    };
    let nfa = build(false).or_else(|_| build(true)).map_err(|e| format!("shape classes of {pattern:?}: {e}"))?;
    let mut of = [0u8; 256];
    for b in 0..=255u8 {
        of[b as usize] = nfa.byte_classes().get(b);
    }
    Ok(of)
}

/// Whether a first-character table admits some digits and not others.
fn first_splits(set: Option<&[bool; 129]>) -> bool {
    set.map_or(false, |t| (b'1'..=b'9').any(|b| t[b as usize] != t[b'0' as usize]))
}

fn splits_digits(of: &[u8; 256]) -> bool {
    (b'1'..=b'9').any(|b| of[b as usize] != of[b'0' as usize])
}

/// Gathers the sources of the classes: per byte, its class in each source
/// that does not tell digits apart.
#[derive(Clone)]
pub(crate) struct Gather {
    sig: Vec<Vec<u8>>,
}

impl Default for Gather {
    fn default() -> Gather {
        Gather { sig: vec![Vec::new(); 256] }
    }
}

impl Gather {
    /// Adds the classes of `regex`; true (and nothing added) when it tells digits apart.
    pub(crate) fn add(&mut self, regex: &str) -> Result<bool, String> {
        let of = byte_classes(regex)?;
        if splits_digits(&of) {
            return Ok(true);
        }
        for (b, sig) in self.sig.iter_mut().enumerate() {
            sig.push(of[b]);
        }
        Ok(false)
    }

    /// Bytes that share a class in every source share one here.
    pub(crate) fn classes(self) -> Classes {
        let mut ids: std::collections::HashMap<&[u8], u8> = Default::default();
        let mut of = [0u8; 256];
        for (b, sig) in self.sig.iter().enumerate() {
            let next = ids.len() as u8; // at most 256 classes: ids 0..=255
            of[b] = *ids.entry(sig.as_slice()).or_insert(next);
        }
        Classes::new(of)
    }
}

/// The catalog's shapes: the classes of everything that reads a line's
/// structure, but for the parts that tell digits apart.
pub fn shapes(cat: &Catalog) -> Result<Shapes, String> {
    let mut g = Gather::default();
    let mut s = Sensitive::default();
    g.add(r"\s")?; // blank lines
    for e in &cat.envelopes {
        s.env_regex.push(g.add(e.matcher.regex.as_str())?);
        let mut lits = false;
        for f in &e.literals {
            lits |= g.add(&escape(&String::from_utf8_lossy(f.needle())))?;
        }
        s.env_literals.push(lits);
        let mut deny = false;
        for d in &e.deny {
            deny |= g.add(&escape(d))?;
        }
        s.env_deny.push(deny);
        if let Some(set) = e.first.set() {
            g.add(&byte_set(set))?;
        }
        s.env_first.push(first_splits(e.first.set()));
    }
    for p in &cat.patterns {
        s.pat_regex.push(g.add(p.matcher.regex.as_str())?);
        if let Some(set) = p.first.set() {
            g.add(&byte_set(set))?;
        }
    }
    // the first-character tables' digits: asked of by_first itself
    let digit_lists: Vec<&Vec<usize>> = (b'0'..=b'9').map(|b| &cat.by_first[b as usize]).collect();
    s.by_first = digit_lists.iter().any(|l| *l != digit_lists[0]);
    for b in &cat.blocks {
        s.block_start.push(g.add(b.start.as_str())?);
    }
    // the identity tokens read a line's body too: where they match is part of its shape
    for t in &cat.tokens.list {
        s.token_regex.push(g.add(t.regex.as_str())?);
    }
    let mut digit_literals = Vec::new();
    for l in cat.literals.strings() {
        if g.add(&escape(l))? {
            digit_literals.push(l.as_str());
        }
    }
    let mut marks_by_shape = true;
    for l in cat.marks.literals() {
        marks_by_shape &= !g.add(&format!("(?i){}", escape(l)))?;
    }
    Ok(Shapes { classes: g.classes(), sensitive: s, digit_literals: DigitLiterals::new(&digit_literals), marks_by_shape })
}

/// Lines longer than this are read without the memo (long lines rarely repeat).
pub const MAX_SHAPE: usize = 512;
/// Shapes a memo holds before it starts again (bounded: ~1 MB a memo, one
/// memo per parsing thread of a file).
pub const MEMO_SHAPES: usize = 1024;

/// What a line's shape decides: its peeled structure, envelope time groups,
/// claim and block starts.
struct Shape {
    s: Arc<Structure>,
    times: EnvTimes,
    starts: Box<[u64]>,
    /// what its reading asked of the parts that tell digits apart (empty: nothing)
    asks: Box<[Asked]>,
    /// per ask, when a line's bytes give its answer without asking (guard.rs)
    guards: Box<[Option<Guard>]>,
    /// its lines' marks (when `marks_by_shape`)
    marks: i32,
}

/// A question a line's reading asked of a part of the catalog that tells
/// digits apart, with its answer (spans are the line's offsets).
#[derive(Clone, Debug, PartialEq)]
pub enum Asked {
    /// the digit at this offset (a first-character table reads it)
    Byte(u32, u8),
    /// whether one of envelope's literals occurs in the span
    EnvLiterals(u16, Span, bool),
    /// whether the span starts with one of envelope's deny prefixes
    EnvDeny(u16, Span, bool),
    /// envelope's regex on the span: every group's span (None: no match)
    EnvRegex(u16, Span, Option<Box<[Option<Span>]>>),
    /// whether block's start regex matches the span
    BlockStart(u16, Span, bool),
    /// pattern's regex on the span: every group's span (None: no match)
    PatRegex(u16, Span, Option<Box<[Option<Span>]>>),
    /// identity token's regex on the span: every group's span (None: no match)
    Token(u16, Span, Option<Box<[Option<Span>]>>),
}

/// The questions of one reading, in the order asked.
#[derive(Default)]
pub struct Trace {
    asks: Vec<Asked>,
}

impl Trace {
    #[inline]
    pub fn note(&mut self, a: Asked) {
        self.asks.push(a);
    }
}

/// The answer of a regex read (`hit`: whether it matched): every group's span.
pub fn answer(rx: &Rx, locs: &Locs, hit: bool) -> Option<Box<[Option<Span>]>> {
    hit.then(|| (0..rx.captures_len()).map(|i| locs.get(i).map(|(a, b)| (a as u32, b as u32))).collect())
}

/// Whether `rx` read on `text` gives `want` (as `answer` makes it).
fn same_answer(rx: &Rx, locs: &mut Locs, text: &str, ascii: bool, want: &Option<Box<[Option<Span>]>>) -> bool {
    let hit = rx.read(locs, text, ascii);
    match want {
        None => !hit,
        Some(w) => hit && w.iter().enumerate().all(|(i, s)| locs.get(i).map(|(a, b)| (a as u32, b as u32)) == *s),
    }
}

/// The shapes of one file's lines seen so far (one per parsing thread).
#[derive(Default)]
pub struct Memo {
    shapes: rustc_hash::FxHashMap<Box<[u8]>, Arc<Shape>>,
    pub stats: MemoStats,
}

/// Lines read through a memo: of a shape met before, of a new shape, or
/// read from their bytes (a digit-telling part answered otherwise, non-ASCII, long).
#[derive(Default, Clone, Copy, Debug)]
pub struct MemoStats {
    pub hits: u64,
    pub new: u64,
    pub own: u64,
}

/// Reads lines' structure: peel, block starts, claim (stage one of a batch).
pub struct Reader<'a> {
    cat: &'a Catalog,
    /// whether lines take the structure of their shape (false: each is read from its bytes)
    memo: bool,
    envs: &'a [usize],
    tz: &'a Zoner,
    env_locs: Vec<Locs>,
    pat_locs: Vec<Locs>,
    token_locs: Vec<Locs>,
    /// scratch: the token literals found in a body (identity.rs)
    token_found: Vec<u64>,
    found: Vec<u64>,
    key: Vec<u8>,
    /// the last line read through the memo: `key` is its key
    keyed: Vec<u8>,
    /// and this its shape (None: no line yet)
    last: Option<Arc<Shape>>,
}

impl<'a> Reader<'a> {
    pub fn new(cat: &'a Catalog, envs: &'a [usize], tz: &'a Zoner, memo: bool) -> Reader<'a> {
        Reader {
            cat,
            memo,
            envs,
            tz,
            env_locs: cat.envelopes.iter().map(|e| e.matcher.regex.locations()).collect(),
            pat_locs: cat.patterns.iter().map(|p| p.matcher.regex.locations()).collect(),
            token_locs: cat.tokens.list.iter().map(|t| t.regex.locations()).collect(),
            token_found: Vec::new(),
            found: vec![0; cat.literals.words],
            key: Vec::with_capacity(MAX_SHAPE),
            keyed: Vec::with_capacity(MAX_SHAPE),
            last: None,
        }
    }

    /// Line `no` at `offset`, read; its block-start bits into `starts`
    /// (`cat.start_words` long, zeroed). An ASCII line of a shape met
    /// before takes that shape's structure, with its own times.
    pub fn read<'t>(&mut self, memo: &mut Memo, no: i64, offset: i64, raw: &'t str, starts: &mut [u64]) -> Peeled<'t> {
        let ascii = raw.is_ascii();
        let mut marks = None;
        let (s, times) = if self.memo && ascii && raw.len() <= MAX_SHAPE {
            let shapes = &self.cat.shapes;
            let line = raw.as_bytes();
            // A line with the key of the line before has that line's shape
            // (the memo's entry for the key: the line before found or put it there).
            let known = if self.last.is_some() && shapes.same_key_as(line, &self.keyed) {
                self.last.clone()
            } else {
                shapes.key(line, &mut self.key);
                memo.shapes.get(self.key.as_slice()).cloned()
            };
            self.keyed.clear();
            self.keyed.extend_from_slice(line);
            let by_shape = shapes.marks_by_shape;
            if let Some(s) = known.as_ref().filter(|_| by_shape) {
                marks = Some(s.marks);
            }
            match known {
                Some(s) if self.holds(&s.asks, &s.guards, &raw) => {
                    memo.stats.hits += 1;
                    starts.copy_from_slice(&s.starts);
                    let got = (s.s.clone(), s.times);
                    self.last = Some(s);
                    got
                }
                Some(s) => {
                    memo.stats.own += 1;
                    self.last = Some(s);
                    let (s, times) = self.structure(&raw, ascii, starts, &mut Trace::default());
                    (Arc::new(s), times)
                }
                None => {
                    let mut tr = Trace::default();
                    let (s, times) = self.structure(&raw, ascii, starts, &mut tr);
                    let s = Arc::new(s);
                    memo.stats.new += 1;
                    if memo.shapes.len() >= MEMO_SHAPES {
                        memo.shapes.clear();
                    }
                    let m = self.cat.marks.of(&raw, true);
                    marks = by_shape.then_some(m);
                    let guards = tr.asks.iter().map(|a| self.guard(a, &raw)).collect();
                    let shape = Arc::new(Shape { s: s.clone(), times, starts: starts.into(), asks: tr.asks.into(), guards, marks: m });
                    memo.shapes.insert(self.key.as_slice().into(), shape.clone());
                    self.last = Some(shape);
                    (s, times)
                }
            }
        } else {
            memo.stats.own += 1;
            let (s, times) = self.structure(&raw, ascii, starts, &mut Trace::default());
            (Arc::new(s), times)
        };
        let mut p = Peeled::new(no, offset, raw, s);
        p.marks = marks;
        peel::env_time(self.cat, &mut p, &times, self.tz);
        p
    }

    /// The guard of a regex question that ASCII line `raw` asked (None: the
    /// question is asked again; it is cheap, or not a regex's).
    fn guard(&self, a: &Asked, raw: &str) -> Option<Guard> {
        let cat = self.cat;
        let (rx, s) = match a {
            Asked::EnvRegex(e, s, _) => (&cat.envelopes[*e as usize].matcher.regex, s),
            Asked::PatRegex(q, s, _) => (&cat.patterns[*q as usize].matcher.regex, s),
            Asked::BlockStart(b, s, _) => (&cat.blocks[*b as usize].start, s),
            Asked::Token(t, s, _) => (&cat.tokens.list[*t as usize].regex, s),
            _ => return None,
        };
        crate::guard::make(rx.guard_nfa()?, &raw.as_bytes()[s.0 as usize..s.1 as usize], &cat.shapes.classes)
    }

    /// Whether an ASCII line of a shape gets `asks`' answers (then it reads
    /// as the shape does: the questions it would ask are the same, in order).
    fn holds(&mut self, asks: &[Asked], guards: &[Option<Guard>], raw: &str) -> bool {
        let cat = self.cat;
        let at = |s: &Span| &raw[s.0 as usize..s.1 as usize];
        let guarded = |k: usize, s: &Span| guards[k].as_ref().map_or(false, |g| g.admits(at(s).as_bytes()));
        asks.iter().enumerate().all(|(k, a)| match a {
            Asked::EnvRegex(_, s, _) | Asked::PatRegex(_, s, _) | Asked::BlockStart(_, s, _) | Asked::Token(_, s, _)
                if guarded(k, s) =>
            {
                true
            }
            Asked::Byte(i, b) => raw.as_bytes()[*i as usize] == *b,
            Asked::EnvLiterals(e, s, v) => peel::has_literal(&cat.envelopes[*e as usize], at(s)) == *v,
            Asked::EnvDeny(e, s, v) => peel::denied(&cat.envelopes[*e as usize], at(s)) == *v,
            Asked::EnvRegex(e, s, v) => {
                same_answer(&cat.envelopes[*e as usize].matcher.regex, &mut self.env_locs[*e as usize], at(s), true, v)
            }
            Asked::BlockStart(b, s, v) => cat.blocks[*b as usize].start.is_match(at(s), true) == *v,
            Asked::PatRegex(q, s, v) => {
                same_answer(&cat.patterns[*q as usize].matcher.regex, &mut self.pat_locs[*q as usize], at(s), true, v)
            }
            Asked::Token(t, s, v) => {
                same_answer(&cat.tokens.list[*t as usize].regex, &mut self.token_locs[*t as usize], at(s), true, v)
            }
        })
    }

    /// Worked out from the line's bytes; what it asks of a part of the
    /// catalog that tells digits apart goes into `tr` with its answer.
    fn structure(&mut self, raw: &str, ascii: bool, starts: &mut [u64], tr: &mut Trace) -> (Structure, EnvTimes) {
        let cat = self.cat;
        let sens = &cat.shapes.sensitive;
        let (mut p, times) = peel::peel(cat, self.envs, &mut self.env_locs, raw, ascii, tr);
        let body = &raw[p.body.0 as usize..p.body.1 as usize];
        self.found.iter_mut().for_each(|w| *w = 0);
        cat.literals.scan(body, &mut self.found);
        let has = |l: usize| crate::literals::has(&self.found, l);
        for (bi, b) in cat.blocks.iter().enumerate() {
            let may = !b.has_literal
                || cat.start_literals.iter().any(|(l, bs)| bs.contains(&bi) && has(*l));
            if may {
                let hit = b.start.is_match(body, ascii);
                if sens.block_start[bi] {
                    tr.note(Asked::BlockStart(bi as u16, p.body, hit));
                }
                if hit {
                    starts[bi / 64] |= 1 << (bi % 64);
                }
            }
        }
        // The first pattern in precedence order that matches claims the line;
        // candidates: those that can start with the body's first character
        // and whose literal occurs in it.
        if let Some(&b) = body.as_bytes().first() {
            if sens.by_first && b.is_ascii_digit() {
                tr.note(Asked::Byte(p.body.0, b));
            }
            for &pi in &cat.by_first[if b < 128 { b as usize } else { 128 }] {
                let pat = &cat.patterns[pi];
                if let Some(ids) = &pat.literal_ids {
                    if !ids.iter().any(|&l| has(l)) {
                        continue;
                    }
                }
                let hit = pat.matcher.regex.read(&mut self.pat_locs[pi], body, ascii);
                if sens.pat_regex[pi] {
                    tr.note(Asked::PatRegex(pi as u16, p.body, answer(&pat.matcher.regex, &self.pat_locs[pi], hit)));
                }
                if hit {
                    let spans = pat.matcher.spans(&self.pat_locs[pi], body);
                    p.claim = Some(Claim { pattern: pi as u32, spans: Arc::from(spans) });
                    break;
                }
            }
        }
        // the identity tokens on the body; those that tell digits apart are asked of each line again
        let mut hits = crate::identity::hits(cat, body, ascii, &mut self.token_locs, &mut self.token_found, &sens.token_regex);
        for (ti, t) in cat.tokens.list.iter().enumerate().filter(|&(ti, _)| sens.token_regex[ti]) {
            let l = &mut self.token_locs[ti];
            let hit = t.regex.read(l, body, ascii);
            let got = answer(&t.regex, l, hit);
            if let Some(spans) = &got {
                hits.push(crate::identity::Hit { token: ti as u16, spans: spans.clone() });
            }
            tr.note(Asked::Token(ti as u16, p.body, got));
        }
        if !hits.is_empty() {
            hits.sort_by_key(|h| h.token); // the catalogue's order decides who fills a column
            p.hits = Some(Arc::from(hits));
        }
        (p, times)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sources that tell digits apart are left out of the classes; the
    /// others split every byte they read differently.
    #[test]
    fn classes_keep_what_the_sources_read() {
        let mut g = Gather::default();
        assert!(g.add(r"^\[(?P<day>[0-3]\d)\]").unwrap(), "a day tells digits apart");
        assert!(g.add(&escape("mlx5")).unwrap());
        assert!(!g.add(r"^(?P<host>[\w.-]+):(?P<pid>\d+) \[\d+\] NCCL (?P<level>INFO|WARN)\b").unwrap());
        assert!(!g.add(&escape("Watchdog caught")).unwrap());
        assert!(!g.add(&byte_set(&{
            let mut t = [false; 129];
            t[b'[' as usize] = true;
            t[b'1' as usize] = true; // a digit in a first-character table is asked of the table
            t
        }))
        .unwrap());
        let c = g.classes();
        let key = |s: &str| {
            let mut k = Vec::new();
            c.shape(s.as_bytes(), &mut k);
            k
        };
        // other digits, same shape
        assert_eq!(key("trn-node01:40012 [4] NCCL INFO x"), key("trn-node07:49998 [0] NCCL INFO x"));
        // what a source reads differently is a different shape
        assert_ne!(key("trn-node01:40012 [4] NCCL INFO x"), key("trn-node01:40012 [4] NCCL WARN x"));
        assert_ne!(key("a b"), key("a\tc")); // \w and \s, \b
        assert_ne!(key("ab"), key("abc")); // lengths
        assert_ne!(key("[x"), key("(x")); // a first-character table
    }

    /// Where a literal with a digit occurs is part of the key (found by
    /// their first bytes, or by a search each when they have more than three).
    #[test]
    fn a_literal_with_a_digit_is_found_where_it_is() {
        let many = ["mlx5", "a1", "b2", "c3"];
        for lits in [&["mlx5"][..], &["mlx5", "x5", "5x"][..], &many[..]] {
            let s = Shapes { classes: Classes::default(), sensitive: Sensitive::default(), digit_literals: DigitLiterals::new(lits), marks_by_shape: false };
            assert_eq!(s.digit_literals.firsts.is_some(), lits.len() < 4);
            let key = |t: &str| {
                let mut k = Vec::new();
                s.key(t.as_bytes(), &mut k);
                k
            };
            assert_ne!(key("mlx5: x"), key("mlx6: x"));
            assert_ne!(key("mlx5: mlx6"), key("mlx6: mlx5"));
            assert_eq!(key("mlx5: mlx6"), key("mlx5: mlx7"));
            assert_ne!(key("mlx5mlx5"), key("mlx5mlx6")); // overlapping and repeated
        }
        let two = DigitLiterals::new(&["x5", "5x"]);
        let mut found = Vec::new();
        two.push_found(b"x5x5x", &mut found);
        assert_eq!(found.len() / 6, 4, "x5 at 0 and 2, 5x at 1 and 3");
    }

    /// `same_key_as` says of two lines what comparing their keys says.
    #[test]
    fn same_key_as_is_key_equality() {
        let mut g = Gather::default();
        g.add(r"^(?P<host>[\w.-]+):(?P<pid>\d+) \[\d+\] NCCL (?P<level>INFO|WARN)\b").unwrap();
        for lits in [&["mlx5"][..], &["mlx5", "x5", "5x"][..], &["mlx5", "a1", "b2", "c3"][..]] {
            let s = Shapes { classes: g.clone().classes(), sensitive: Sensitive::default(), digit_literals: DigitLiterals::new(lits), marks_by_shape: false };
            let lines = [
                "trn-node01:40012 [4] NCCL INFO mlx5 x", "trn-node07:49998 [0] NCCL INFO mlx5 x", "trn-node01:40012 [4] NCCL INFO mlx6 x",
                "trn-node01:40012 [4] NCCL WARN mlx5 x", "trn-node01:40012 [4] NCCL INFO x5x5 x", "trn-node01:40012 [4] NCCL INFO x6x5 x",
                "trn-node01:40012 [4] NCCL INFO 5x5x x", "a1b2c3mlx5", "a1b2c4mlx5", "a2b2c3mlx5", "a1b2c3mlx6", "", "x", "y", "5",
            ];
            let key = |t: &str| {
                let mut k = Vec::new();
                s.key(t.as_bytes(), &mut k);
                k
            };
            for a in lines {
                for b in lines {
                    assert_eq!(s.same_key_as(a.as_bytes(), b.as_bytes()), key(a) == key(b), "{a:?} {b:?} with {lits:?}");
                }
            }
        }
    }

    /// `Classes::same_shape` says of two texts what comparing their shapes says,
    /// wherever in a word (and past the last whole word) they differ.
    #[test]
    fn same_shape_is_shape_equality() {
        let mut g = Gather::default();
        g.add(r"^(?P<host>[\w.-]+):(?P<pid>\d+) \[\d+\] NCCL (?P<level>INFO|WARN)\b").unwrap();
        let c = g.classes();
        let mut texts: Vec<String> = [
            "trn-node01:40012 [4] NCCL INFO mlx5 x", "trn-node07:49998 [0] NCCL INFO mlx5 x", "trn-node01:40012 [4] NCCL WARN mlx5 x",
            "trn-node01:40012 [4] NCCL INFO mlx5 y", "trn-node01:40012 [4]_NCCL INFO mlx5 x", "", "x", "5", "6", "a b",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        // one byte changed at every offset of a 19-byte text (two words and three bytes)
        let base = "step 12 loss 0.5 ab";
        for i in 0..base.len() {
            for b in [b'7', b'x', b' ', b'.'] {
                let mut t = base.as_bytes().to_vec();
                t[i] = b;
                texts.push(String::from_utf8(t).unwrap());
            }
        }
        texts.push(base.to_string());
        let shape = |t: &str| {
            let mut k = Vec::new();
            c.shape(t.as_bytes(), &mut k);
            k
        };
        let mut same = 0;
        for a in &texts {
            for b in &texts {
                let want = shape(a) == shape(b);
                assert_eq!(c.same_shape(a.as_bytes(), b.as_bytes()), want, "{a:?} {b:?}");
                same += (want && a != b) as usize;
            }
        }
        assert!(same > 100, "{same}: differing texts of one shape are compared too");
    }

    /// Lines of many shapes in turns (an srun output's ranks) are read as
    /// without the memo, each shape new once.
    #[test]
    fn interleaved_shapes_read_as_without_memo() {
        let cat = digit_catalog();
        let tz = Zoner::new("UTC").unwrap();
        let widths = 11;
        let lines: Vec<String> = (0..5 * widths).map(|i| format!("{} {}", "9".repeat(1 + i % widths), "x".repeat(i % 2 + 1))).collect();
        let read = |memo_on: bool| {
            let mut r = Reader::new(&cat, &[], &tz, memo_on);
            let mut memo = Memo::default();
            let got: Vec<_> = lines
                .iter()
                .map(|l| {
                    let p = r.read(&mut memo, 1, 0, l, &mut [0]);
                    (p.body, p.claim.as_ref().map(|c| (c.pattern, c.spans.to_vec())))
                })
                .collect();
            (got, memo.stats)
        };
        let (with, st) = read(true);
        let (without, _) = read(false);
        assert_eq!(with, without);
        // widths x (1 or 2 x's): 2 * widths shapes when widths is odd, each met first once
        assert_eq!(st.new as usize, 2 * widths);
        assert_eq!((st.hits + st.own + st.new) as usize, lines.len());
    }

    /// A small catalog: `day` tells digits apart (a day of 40 is no day), `num` does not.
    fn digit_catalog() -> Catalog {
        marked_catalog(&[])
    }

    /// `digit_catalog` with marks of these literals (one mark each).
    fn marked_catalog(marks: &[&str]) -> Catalog {
        let pat = |key: &str, regex: &str| {
            format!(r#"{{"key": "f.{key}", "format": "f", "regex": {}, "first": null, "literals": null, "ts": null,
                 "kind": null, "carry": [], "end_carry": [], "program": null, "split": null}}"#, serde_json::to_string(regex).unwrap())
        };
        let spec = format!(
            r#"{{"identity": ["host", "rank", "local_rank", "program"], "int_identity": ["rank", "local_rank"],
                "severities": ["debug", "info"], "envelopes": [], "patterns": [{}, {}], "blocks": [], "rules": [],
                "facts": [], "fact_tables": {{}}, "kinds": {{}}, "levels": {{}}, "marks": {}}}"#,
            pat("day", r"^(?P<day>[0-3]\d) (?P<message>.*)$"),
            pat("num", r"^(?P<n>\d+) +(?P<message>.*)$"),
            serde_json::to_string(&marks.iter().map(|m| vec![m.to_string()]).collect::<Vec<_>>()).unwrap()
        );
        Catalog::compile(&crate::CatalogSpec::from_json(&spec).unwrap()).unwrap()
    }

    /// A line of a shape met before asks the digit-telling questions of its
    /// own bytes: the same answers take the shape's structure, others are
    /// read from the line, and either way as if there were no memo.
    #[test]
    fn digit_telling_questions_are_asked_again() {
        let cat = digit_catalog();
        assert!(cat.shapes.sensitive.pat_regex[0] && !cat.shapes.sensitive.pat_regex[1]);
        let tz = Zoner::new("UTC").unwrap();
        let claims = |memo_on: bool, lines: &[&str]| {
            let mut r = Reader::new(&cat, &[], &tz, memo_on);
            let mut memo = Memo::default();
            let got: Vec<_> = lines
                .iter()
                .map(|l| {
                    let p = r.read(&mut memo, 1, 0, l, &mut [0]);
                    p.claim.as_ref().map(|c| (c.pattern, c.spans.to_vec()))
                })
                .collect();
            (got, memo.stats)
        };
        let lines = ["12 abc", "13 abc", "45 abc", "31 abc", "45 abc"];
        let (with, st) = claims(true, &lines);
        let (without, _) = claims(false, &lines);
        assert_eq!(with, without);
        assert_eq!(with.iter().map(|c| c.as_ref().unwrap().0).collect::<Vec<_>>(), [0, 0, 1, 0, 1]);
        assert_eq!((st.new, st.hits, st.own), (1, 2, 2));
        // a shape whose reading asked nothing that tells digits apart: every line a hit
        let (_, st) = claims(true, &["x1 a", "x2 b", "x9 c"]);
        assert_eq!((st.new, st.hits, st.own), (1, 2, 0));
    }

    /// A line of a known shape takes the shape's marks, and they are the
    /// marks of its own text: the classes tell apart every byte a mark's
    /// literal reads (case-folded), digits aside.
    #[test]
    fn a_shape_decides_its_lines_marks() {
        let cat = marked_catalog(&["from rank", "SeqNum="]);
        assert!(cat.shapes.marks_by_shape);
        let tz = Zoner::new("UTC").unwrap();
        let mut r = Reader::new(&cat, &[], &tz, true);
        let mut memo = Memo::default();
        let lines = [
            "12 from rank 3 SeqNum=7", "13 from rank 4 SeqNum=9", "12 FROM Rank 3 seqnum=7", "12 from tank 3 SeqNum=7",
            "14 from rank 3 SeqNum-7", "15 from rank 3 SeqNum-7", "16 xrom rank 3 SeqNum-7", "17 fromXrank 3 SeqNum=7",
        ];
        let got: Vec<Option<i32>> = lines.iter().map(|l| r.read(&mut memo, 1, 0, l, &mut [0]).marks).collect();
        let want: Vec<Option<i32>> = lines.iter().map(|l| Some(cat.marks.of(l, true))).collect();
        assert_eq!(got, want);
        assert_eq!(want, [Some(3), Some(3), Some(3), Some(2), Some(1), Some(1), Some(0), Some(2)]);
        // a byte class is a range of bytes: a letter's two cases are two classes, and two shapes
        assert_eq!((memo.stats.hits, memo.stats.new), (2, 6), "the second line and the sixth are of a shape met before");
        // a literal with a digit is not told apart by the classes: every line's marks are read from its text
        let cat = marked_catalog(&["mlx5"]);
        assert!(!cat.shapes.marks_by_shape);
        let mut r = Reader::new(&cat, &[], &tz, true);
        let got: Vec<Option<i32>> = ["1 mlx5", "1 mlx6"].iter().map(|l| r.read(&mut memo, 1, 0, l, &mut [0]).marks).collect();
        assert_eq!(got, [None, None]);
    }
}
