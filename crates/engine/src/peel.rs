//! peel: strip envelopes (launcher and collector prefixes), outermost first,
//! up to MAX_DEPTH deep. Identity from an envelope fills the line's
//! identity, the outermost envelope winning; `weak` identity only where
//! nothing closer to the message says otherwise (that is decided later).

use crate::compile::{Catalog, Envelope};
use crate::rx::Locs;
use crate::timefmt::{TsKind, Zoner};

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

/// A line after peeling: spans point into `raw`.
pub struct Peeled {
    pub no: i64,
    pub offset: i64,
    pub raw: String,
    /// whether `raw` is ASCII (the regexes' ASCII twins apply)
    pub ascii: bool,
    pub body: Span,
    pub strong: [Option<Span>; MAX_ID],
    pub weak: [Option<Span>; MAX_ID],
    pub env_ts: Option<i64>,
    pub env_ts_kind: Option<TsKind>,
    pub env_ts_text: Option<Span>,
    pub envelopes: Chain,
    pub kept: Vec<(usize, Span)>,
}

impl Peeled {
    #[inline]
    pub fn body(&self) -> &str {
        &self.raw[self.body.0 as usize..self.body.1 as usize]
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

fn candidate(env: &Envelope, body: &str) -> bool {
    env.first.admits(body)
        && (env.literals.is_empty() || env.literals.iter().any(|f| f.find(body.as_bytes()).is_some()))
        && !env.deny.iter().any(|d| body.starts_with(d.as_str()))
}

pub fn peel(cat: &Catalog, envs: &[usize], locs: &mut [Locs], no: i64, offset: i64, raw: String,
            tz: &Zoner) -> Peeled {
    let mut p = Peeled {
        no,
        offset,
        body: (0, raw.len() as u32),
        ascii: raw.is_ascii(),
        raw: String::new(),
        strong: [None; MAX_ID],
        weak: [None; MAX_ID],
        env_ts: None,
        env_ts_kind: None,
        env_ts_text: None,
        envelopes: Chain::default(),
        kept: Vec::new(),
    };
    if !envs.is_empty() {
        peel_into(cat, envs, locs, &raw, &mut p, tz);
    }
    p.raw = raw;
    p
}

fn peel_into(cat: &Catalog, envs: &[usize], locs: &mut [Locs], raw: &str, p: &mut Peeled, tz: &Zoner) {
    for _ in 0..MAX_DEPTH {
        let base = p.body.0;
        let body = &raw[p.body.0 as usize..p.body.1 as usize];
        let mut peeled = false;
        for &ei in envs {
            let env = &cat.envelopes[ei];
            if !candidate(env, body) {
                continue;
            }
            let l = &mut locs[ei];
            if !env.matcher.regex.read(l, body, p.ascii) {
                continue;
            }
            let l = &locs[ei];
            let get = |gi: usize| env.matcher.get(l, gi, body);
            let rest = match get(env.rest) {
                Some(m) => m,
                None => continue,
            };
            let sp = |m: (usize, usize)| (base + m.0 as u32, base + m.1 as u32);
            for &(gi, col, weak) in &env.ids {
                if let Some(m) = get(gi) {
                    let slot = if weak { &mut p.weak[col] } else { &mut p.strong[col] };
                    if slot.is_none() {
                        *slot = Some(sp(m));
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
            if let Some((gi, layout)) = &env.ts {
                if p.env_ts.is_none() {
                    if let Some(m) = get(*gi) {
                        if let Some(t) = layout.parse(&body[m.0..m.1], tz) {
                            p.env_ts = Some(t);
                            p.env_ts_kind = Some(layout.kind);
                            p.env_ts_text = Some(sp(m));
                        }
                    }
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
