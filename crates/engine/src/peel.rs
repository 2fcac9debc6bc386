//! peel: strip envelopes (launcher and collector prefixes), outermost first,
//! up to MAX_DEPTH deep. Identity from an envelope fills the line's
//! identity, the outermost envelope winning; `weak` identity only where
//! nothing closer to the message says otherwise (that is decided later).

use crate::compile::{Catalog, Envelope};
use crate::rx::Locs;
use crate::shape::{Asked, Trace};
use crate::timefmt::{TsKind, Zoner};
use std::sync::Arc;

pub const MAX_DEPTH: usize = 4;
pub const SNIFF_LINES: usize = 200;
pub const SNIFF_SHARE: f64 = 0.6;

pub type Span = (u32, u32);

/// The envelopes peeled off a line, outermost first (at most MAX_DEPTH).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash)]
pub struct Chain {
    ids: [u16; MAX_DEPTH],
    len: u8,
}

impl Chain {
    fn push(&mut self, e: u16) {
        self.ids[self.len as usize] = e;
        self.len += 1;
    }
    #[inline]
    pub fn as_slice(&self) -> &[u16] {
        &self.ids[..self.len as usize]
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Identity columns a catalog may have (the spec's `identity`, checked at compile).
pub const MAX_ID: usize = 16;

/// The time groups the envelopes of a line captured, outermost first: the
/// line's envelope time is the first of them that parses.
#[derive(Clone, Copy, Default, Debug)]
pub struct EnvTimes {
    at: [(Span, u16); MAX_DEPTH],
    len: u8,
}

impl EnvTimes {
    fn push(&mut self, span: Span, env: usize) {
        self.at[self.len as usize] = (span, env as u16);
        self.len += 1;
    }
    pub fn as_slice(&self) -> &[(Span, u16)] {
        &self.at[..self.len as usize]
    }
}

/// The pattern that claimed a line and its groups' spans in the body
/// (`Matcher::spans`); shared by the lines of one shape.
#[derive(Clone, Debug)]
pub struct Claim {
    pub pattern: u32,
    pub spans: std::sync::Arc<[Option<Span>]>,
}

/// What a line's shape decides of it (shape.rs): spans of its text. Shared
/// by the lines of a shape, so that a line read through the memo costs a
/// reference count, not a copy of ~0.4 KB of spans.
#[derive(Clone, Debug)]
pub struct Structure {
    /// whether the line is ASCII (the regexes' ASCII twins apply)
    pub ascii: bool,
    pub body: Span,
    pub strong: [Option<Span>; MAX_ID],
    pub weak: [Option<Span>; MAX_ID],
    /// which of `strong` and `weak` are set (bits by column), made once by `peel` (nothing
    /// writes them after it): the stream key and the identity of every line ask it (events.rs),
    /// where folding both arrays per line was 183 of the stream key's 270 instructions a line
    /// on the corpus node log (callgrind, session 22)
    pub id_masks: (u64, u64),
    /// the same masks of the outermost envelope that set an identity column (a launcher's tag: an srun
    /// label, an mpirun or tee tag, a kubectl pod prefix), whose spans `strong` and `weak` keep (the outer
    /// envelope's value wins a column): the stream a nested prefix's lines (`5: [rank5]: ...`) belong to
    /// when their own names no value (stream.rs). (0, 0): no envelope set one
    pub outer_masks: (u64, u64),
    pub envelopes: Chain,
    pub kept: Vec<(usize, Span)>,
    /// the first pattern (in precedence order) that matches the body
    pub claim: Option<Claim>,
    /// the identity tokens that match the body (identity.rs), None: none
    pub hits: Option<std::sync::Arc<[crate::identity::Hit]>>,
}

/// A line after peeling: its own text, place and envelope time, and its
/// structure (spans point into `raw`).
pub struct Peeled<'a> {
    pub no: i64,
    pub offset: i64,
    /// a span of the batch's text (lines.rs)
    pub raw: &'a str,
    pub env_ts: Option<i64>,
    pub env_ts_kind: Option<TsKind>,
    pub env_ts_text: Option<Span>,
    pub s: Arc<Structure>,
    /// the marks of `raw` when its shape gave them (None: marks.rs reads them from the text)
    pub marks: Option<i32>,
}

impl std::ops::Deref for Peeled<'_> {
    type Target = Structure;
    #[inline]
    fn deref(&self) -> &Structure {
        &self.s
    }
}

impl<'a> Peeled<'a> {
    /// Line `no` at `offset` with text `raw` and structure `s`, no envelope time yet.
    pub fn new(no: i64, offset: i64, raw: &'a str, s: Arc<Structure>) -> Peeled<'a> {
        Peeled { no, offset, raw, env_ts: None, env_ts_kind: None, env_ts_text: None, s, marks: None }
    }

    #[inline]
    pub fn body(&self) -> &str {
        &self.raw[self.s.body.0 as usize..self.s.body.1 as usize]
    }
    #[inline]
    pub fn span(&self, s: Span) -> &str {
        &self.raw[s.0 as usize..s.1 as usize]
    }
}

/// The head of a file that `sniff` reads: its first SNIFF_LINES non-blank
/// lines, or fewer when they would pass SNIFF_BYTES (a file of 1 MB lines).
pub const SNIFF_BYTES: usize = 256 << 10;

/// How many of `lines` make the head, and whether the head is complete
/// (false: more lines could still belong to it).
pub fn head_len<'a, I: Iterator<Item = &'a str>>(lines: I) -> (usize, bool) {
    let (mut n, mut taken, mut bytes) = (0usize, 0usize, 0usize);
    for l in lines {
        if taken == SNIFF_LINES || bytes >= SNIFF_BYTES {
            return (n, true);
        }
        n += 1;
        bytes += l.len() + 1;
        if !l.trim().is_empty() {
            taken += 1;
        }
    }
    (n, taken == SNIFF_LINES || bytes >= SNIFF_BYTES)
}

/// File-scoped envelopes that match most (SNIFF_SHARE) of the non-blank
/// lines of the file's head (`head_len`).
pub fn sniff<'a, I: Iterator<Item = &'a str> + Clone>(cat: &Catalog, lines: I) -> Vec<usize> {
    let (n, _) = head_len(lines.clone());
    let head: Vec<&str> = lines.take(n).filter(|l| !l.trim().is_empty()).collect();
    if head.is_empty() {
        return vec![];
    }
    cat.envelopes
        .iter()
        .enumerate()
        .filter(|(_, e)| e.file_scope)
        .filter(|(_, e)| {
            let hits = head.iter().filter(|l| e.regex.is_match(l, l.is_ascii())).count();
            hits as f64 / head.len() as f64 >= SNIFF_SHARE
        })
        .map(|(i, _)| i)
        .collect()
}

/// Whether envelope `ei` may peel `body` (at `at` in the line): its first
/// characters, literals and deny prefixes. What it asks of a part that
/// tells digits apart goes into `tr` (shape.rs).
fn candidate(cat: &Catalog, ei: usize, body: &str, at: u32, tr: &mut Trace) -> bool {
    let (env, sens) = (&cat.envelopes[ei], &cat.shapes.sensitive);
    if sens.env_first[ei] {
        if let Some(&b) = body.as_bytes().first().filter(|b| b.is_ascii_digit()) {
            tr.note(Asked::Byte(at, b));
        }
    }
    if !env.first.admits(body) {
        return false;
    }
    if !env.literals.is_empty() {
        let has = has_literal(env, body);
        if sens.env_literals[ei] {
            tr.note(Asked::EnvLiterals(ei as u16, (at, at + body.len() as u32), has));
        }
        if !has {
            return false;
        }
    }
    let denied = denied(env, body);
    if sens.env_deny[ei] {
        tr.note(Asked::EnvDeny(ei as u16, (at, at + body.len() as u32), denied));
    }
    !denied
}

/// Whether one of the envelope's required literals occurs in `body`.
pub fn has_literal(env: &Envelope, body: &str) -> bool {
    env.literals.iter().any(|f| f.find(body.as_bytes()).is_some())
}

/// Whether `body` starts with one of the envelope's deny prefixes.
pub fn denied(env: &Envelope, body: &str) -> bool {
    env.deny.iter().any(|d| body.starts_with(d.as_str()))
}

/// The structure of a line: its envelopes peeled (their identity, kept
/// captures and time groups), nothing parsed yet.
pub fn peel(cat: &Catalog, envs: &[usize], locs: &mut [Locs], raw: &str, ascii: bool, tr: &mut Trace) -> (Structure, EnvTimes) {
    let mut p = Structure {
        ascii,
        body: (0, raw.len() as u32),
        strong: [None; MAX_ID],
        weak: [None; MAX_ID],
        id_masks: (0, 0),
        outer_masks: (0, 0),
        envelopes: Chain::default(),
        kept: Vec::new(),
        claim: None,
        hits: None,
    };
    let mut times = EnvTimes::default();
    if !envs.is_empty() {
        peel_into(cat, envs, locs, raw, &mut p, &mut times, tr);
        let mask = |spans: &[Option<Span>]| spans.iter().enumerate().fold(0u64, |m, (c, v)| m | ((v.is_some() as u64) << c));
        p.id_masks = (mask(&p.strong), mask(&p.weak));
    }
    (p, times)
}

/// The envelope time of `p`: the first of its envelopes' time groups that parses.
pub fn env_time(cat: &Catalog, p: &mut Peeled, times: &EnvTimes, tz: &Zoner) {
    for &(span, ei) in times.as_slice() {
        let (_, layout) = cat.envelopes[ei as usize].ts.as_ref().expect("a time group of an envelope with a time");
        if let Some(t) = layout.parse(p.span(span), tz) {
            p.env_ts = Some(t);
            p.env_ts_kind = Some(layout.kind);
            p.env_ts_text = Some(span);
            return;
        }
    }
}

fn peel_into(cat: &Catalog, envs: &[usize], locs: &mut [Locs], raw: &str, p: &mut Structure, times: &mut EnvTimes,
             tr: &mut Trace) {
    for _ in 0..MAX_DEPTH {
        let base = p.body.0;
        let body = &raw[p.body.0 as usize..p.body.1 as usize];
        let mut peeled = false;
        for &ei in envs {
            let env = &cat.envelopes[ei];
            if !candidate(cat, ei, body, base, tr) {
                continue;
            }
            let l = &mut locs[ei];
            let hit = env.matcher.regex.read(l, body, p.ascii);
            if cat.shapes.sensitive.env_regex[ei] {
                tr.note(Asked::EnvRegex(ei as u16, p.body, crate::shape::answer(&env.matcher.regex, l, hit)));
            }
            if !hit {
                continue;
            }
            let l = &locs[ei];
            let get = |gi: usize| env.matcher.get(l, gi, body);
            let rest = match get(env.rest) {
                Some(m) => m,
                None => continue,
            };
            let sp = |m: (usize, usize)| (base + m.0 as u32, base + m.1 as u32);
            let outer = p.outer_masks == (0, 0);
            for &(gi, col, weak) in &env.ids {
                if let Some(m) = get(gi) {
                    let slot = if weak { &mut p.weak[col] } else { &mut p.strong[col] };
                    if slot.is_none() {
                        *slot = Some(sp(m));
                    }
                    if outer {
                        let mask = if weak { &mut p.outer_masks.1 } else { &mut p.outer_masks.0 };
                        *mask |= 1u64 << col;
                    }
                }
            }
            for &(gi, col) in &env.kept {
                if let Some(m) = get(gi) {
                    if !p.kept.iter().any(|(c, _)| *c == col) {
                        p.kept.push((col, sp(m)));
                    }
                }
            }
            if let Some((gi, _)) = &env.ts {
                if let Some(m) = get(*gi) {
                    times.push(sp(m), ei);
                }
            }
            p.envelopes.push(ei as u16);
            p.body = sp(rest);
            peeled = true;
            break;
        }
        if !peeled {
            break;
        }
    }
}
