//! extract + normalize: peeled lines and blocks -> events with identity,
//! carried identity and times.

use crate::blocks::NO_BLOCK;
use crate::compile::Catalog;
use crate::peel::{Chain, Peeled, MAX_ID};
use std::borrow::Cow;
use std::sync::Arc;
use crate::timefmt::{TsKind, Zoner};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Src {
    Raw,
    Pattern(u32),
    Block(u32),
}


/// An identity value: a span of the event's raw text, a shared text (path
/// hints, a pattern's program, a carried value), or an integer column's value.
/// 16 bytes: an event holds MAX_ID of them, and it is built, walked by every
/// stage and dropped per line (an `Arc<str>` is a wide pointer: 24 bytes an Id).
#[derive(Clone, Debug, Default)]
pub enum Id {
    #[default]
    None,
    Span(u32, u32),
    Text(Shared),
    Int(i64),
}

/// A shared identity text behind a thin pointer (see `Id`).
pub type Shared = Arc<Box<str>>;

pub fn shared(text: &str) -> Shared {
    Arc::new(Box::from(text))
}

impl Id {
    pub fn is_none(&self) -> bool {
        matches!(self, Id::None)
    }
    pub fn text<'a>(&'a self, raw: &'a str) -> Option<&'a str> {
        match self {
            Id::Span(a, b) => Some(&raw[*a as usize..*b as usize]),
            Id::Text(t) => Some(t),
            _ => None,
        }
    }
    /// `text` as bytes, of the event's raw text as bytes (no char-boundary
    /// checks: for comparing and hashing; classes.rs' class key).
    #[inline(always)]
    pub fn bytes<'a>(&'a self, raw: &'a [u8]) -> Option<&'a [u8]> {
        match self {
            Id::Span(a, b) => Some(&raw[*a as usize..*b as usize]),
            Id::Text(t) => Some(t.as_bytes()),
            _ => None,
        }
    }
    /// The same value, its text (if shared) in an Arc of its own.
    pub fn own_copy(&self) -> Id {
        match self {
            Id::Text(t) => Id::Text(shared(t)),
            other => other.clone(),
        }
    }
    /// The same value, independent of its event's raw text.
    pub fn detached(&self, raw: &str) -> Id {
        match self {
            Id::Span(..) => Id::Text(shared(self.text(raw).unwrap())),
            other => other.clone(),
        }
    }
    /// An integer column's value from text (polars' cast after strip: None when not an integer).
    pub fn int_of(text: Option<&str>, strip: bool) -> Id {
        // Digits alone (most ranks and pids): nothing to strip, no sign, no overflow.
        if let Some(b) = text.map(str::as_bytes).filter(|b| (1..=18).contains(&b.len()) && b.iter().all(u8::is_ascii_digit)) {
            return Id::Int(b.iter().fold(0i64, |v, &d| v * 10 + (d - b'0') as i64));
        }
        match text.and_then(|t| (if strip { t.trim() } else { t }).parse::<i64>().ok()) {
            Some(v) => Id::Int(v),
            None => Id::None,
        }
    }
}

pub struct Event<'a> {
    pub line: i64,
    pub end_line: i64,
    pub offset: i64,
    /// a line's text where the framer left it (lines.rs); a block's joined lines
    pub raw: Cow<'a, str>,
    /// whether `raw` is ASCII
    pub ascii: bool,
    /// the message: a span of `raw`
    pub message: (u32, u32),
    pub src: Src,
    /// spans of `raw`: the level, the time texts
    pub level: Option<(u32, u32)>,
    pub ts: Option<i64>,
    pub ts_kind: Option<TsKind>,
    pub ts_text: Option<(u32, u32)>,
    pub env_ts: Option<i64>,
    pub env_ts_kind: Option<TsKind>,
    pub env_ts_text: Option<(u32, u32)>,
    pub envelopes: Chain,
    /// identity after coalescing (envelope, line, weak envelope, path)
    pub ids: [Id; MAX_ID],
    /// (kept column, span of `raw`)
    pub kept: Vec<(usize, (u32, u32))>,
    /// the marks of `raw`, when its line's shape gave them (None: read from `raw`)
    pub marks: Option<i32>,
    /// identity columns (bits) whose value came from the file's path or a weak envelope
    /// (an srun label's task): a fact, a token or the stream's carried value may replace it
    pub hinted: u16,
    /// identity columns (bits) whose value names the line's emitter for its whole stream (stream.rs)
    pub stream_src: u16,
    /// what made them so: 0 the line's pattern, else the identity token's index + 1
    pub stream_via: u16,
    /// the line's stream within its file: a hash of its envelopes' identity (0: none)
    pub stream_key: u64,
    /// the stream of its outermost identity envelope alone (`Structure::outer_masks`): `stream_key` when
    /// that envelope is the only one
    pub outer_key: u64,
    /// the identity tokens found on its line(s): (where the body starts in `raw`, the hits), in
    /// order: a line has one body, a block two (its first line's and its message line's);
    /// applied after its facts (classify.rs), then emptied. Held inline, not in a Vec: a Vec of
    /// one per line was the scan's one malloc and free a line (~350 instructions a line on the
    /// corpus node log, callgrind, session 13)
    pub hits: [Option<(u32, Arc<[crate::identity::Hit]>)>; 2],
    /// identity columns (bits) a token blocked (identity.rs)
    pub blocked: u16,
}

/// The stream of peeled line `p` within its file: a hash of the identity its
/// envelopes gave (`[rank3]:`, an srun label, a pdsh host); 0 when they gave none.
/// Which identity columns are set (`Structure::id_masks`: its shape's, made once)
/// and the bytes of those set are hashed, not every slot of both arrays (442 ->
/// 325 instructions a line on an srun output, callgrind, session 11). Only the
/// key's equality matters (stream.rs; 0 = none), and equal spans give equal masks
/// and bytes.
fn stream_key(p: &Peeled, raw: &str) -> u64 {
    key_of(&p.s, p.s.id_masks, raw)
}

/// The stream of peeled line `p`'s outermost identity envelope: the key a line with that envelope alone
/// (and the same values) has; its own `stream` key when that envelope is its only one (most lines: not hashed
/// again).
fn outer_key(p: &Peeled, raw: &str, stream: u64) -> u64 {
    if p.s.outer_masks == p.s.id_masks {
        return stream;
    }
    key_of(&p.s, p.s.outer_masks, raw)
}

fn key_of(s: &crate::peel::Structure, (ms, mw): (u64, u64), raw: &str) -> u64 {
    use std::hash::Hasher;
    if ms | mw == 0 {
        return 0;
    }
    let mut h = rustc_hash::FxHasher::default();
    h.write_u64(ms << 32 | mw);
    for (spans, mut m) in [(&s.strong, ms), (&s.weak, mw)] {
        while m != 0 {
            let (a, b) = spans[m.trailing_zeros() as usize].expect("a set column");
            let bytes = &raw.as_bytes()[a as usize..b as usize];
            h.write_usize(bytes.len());
            h.write(bytes);
            m &= m - 1;
        }
    }
    h.finish() | 1
}

impl Event<'_> {
    #[inline]
    pub fn message(&self) -> &str {
        &self.raw[self.message.0 as usize..self.message.1 as usize]
    }
    #[inline]
    pub fn span(&self, s: (u32, u32)) -> &str {
        &self.raw[s.0 as usize..s.1 as usize]
    }
}

/// The coalesced value of identity column `c`: envelope, line, weak envelope, path hint.
fn coalesce(cat: &Catalog, c: usize, raw: &str, cands: [Id; 4]) -> Id {
    let v = cands.into_iter().find(|v| !v.is_none()).unwrap_or_default();
    typed_id(cat, c, raw, v)
}

/// `v` as column `c` holds it (an integer column parses it).
#[inline]
fn typed_id(cat: &Catalog, c: usize, raw: &str, v: Id) -> Id {
    if cat.int_identity[c] {
        Id::int_of(v.text(raw), true)
    } else {
        v
    }
}

/// The events of a batch of peeled lines (all of them: the caller has
/// already deferred the lines of a block left open).
pub fn build<'a>(cat: &Catalog, lines: &[Peeled<'a>], block: &[u32], start_of: &[usize],
                 hints: &[Id], tz: &Zoner) -> Vec<Event<'a>> {
    // The shared texts that lines take (path hints, patterns' programs) are
    // copied once a batch, so that the Arcs its lines clone are this
    // thread's own: two threads cloning one Arc per line made its counter's
    // cache line bounce between the cores (a third of build()).
    let hints: Vec<Id> = hints.iter().map(Id::own_copy).collect();
    let hint_cols = hints.iter().enumerate().filter(|(_, h)| !h.is_none()).fold(0u64, |m, (c, _)| m | 1 << c);
    let mut programs: Vec<Option<Shared>> = vec![None; cat.patterns.len()];
    let mut out: Vec<Event> = Vec::with_capacity(lines.len());
    // Blocks: one event per (block, start, envelope identity), in order of first line.
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new(); // (first line index, members)
    {
        let mut index: rustc_hash::FxHashMap<(u32, usize, Vec<Option<String>>), usize> = Default::default();
        for i in 0..lines.len() {
            if block[i] == NO_BLOCK {
                continue;
            }
            let p = &lines[i];
            let idk: Vec<Option<String>> =
                p.strong.iter().chain(p.weak.iter()).map(|s| s.map(|s| p.span(s).to_string())).collect();
            let key = (block[i], start_of[i], idk);
            let g = *index.entry(key).or_insert_with(|| {
                groups.push((i, Vec::new()));
                groups.len() - 1
            });
            groups[g].1.push(i);
        }
    }
    let mut block_event_at: Vec<Option<usize>> = vec![None; lines.len()];
    for (g, (first, _)) in groups.iter().enumerate() {
        block_event_at[*first] = Some(g);
    }
    for i in 0..lines.len() {
        if block[i] != NO_BLOCK {
            if let Some(g) = block_event_at[i] {
                out.push(block_event(cat, lines, &groups[g].1, block[i], &hints, tz));
            }
            continue;
        }
        if lines[i].body().trim().is_empty() {
            continue;
        }
        line_event(cat, &lines[i], &hints, &mut programs, tz, hint_cols, &mut out);
    }
    out
}

/// The event of line `p`, pushed onto `out` and filled in there (an Event is
/// ~0.5 KB: built on the stack and returned, it was copied twice).
/// `programs`: the batch's own copy of each pattern's program, made on first use.
/// `hint_cols`: the identity columns (bits) `hints` holds a value for.
fn line_event<'a>(cat: &Catalog, p: &Peeled<'a>, hints: &[Id], programs: &mut [Option<Shared>], tz: &Zoner, hint_cols: u64,
                  out: &mut Vec<Event<'a>>) {
    let raw = p.raw;
    let b0 = p.body.0 as usize;
    let stream_key = stream_key(p, raw);
    out.push(Event {
        line: p.no,
        end_line: p.no,
        offset: p.offset,
        raw: Cow::Borrowed(raw),
        ascii: p.ascii,
        message: p.body,
        src: Src::Raw,
        level: None,
        ts: None,
        ts_kind: None,
        ts_text: None,
        env_ts: p.env_ts,
        env_ts_kind: p.env_ts_kind,
        env_ts_text: p.env_ts_text,
        envelopes: p.envelopes,
        ids: Default::default(),
        kept: p.kept.clone(),
        marks: p.marks,
        hinted: 0,
        stream_src: 0,
        stream_via: 0,
        stream_key,
        outer_key: outer_key(p, &raw, stream_key),
        hits: [p.hits.as_ref().map(|h| (b0 as u32, h.clone())), None],
        blocked: 0,
    });
    let ev = out.last_mut().expect("just pushed");
    // The line's own identity: spans of its pattern's groups, and the
    // pattern's program (which wins over a span of the program column). No
    // [Id; MAX_ID] to build and drop per line.
    let mut line_spans: [Option<(u32, u32)>; MAX_ID] = [None; MAX_ID];
    // The columns some candidate below has a value for: the envelopes' (the line's shape
    // decides them, `Structure::id_masks`), the pattern's, the program's and the hints'. The
    // others take none whichever way: the loop below visits only these (a line has values in
    // ~5 of the catalog's 13 columns; visiting every column, its five candidates tested, cost
    // 223 instructions a line more on the corpus node log, callgrind, session 22).
    let mut cols = p.id_masks.0 | p.id_masks.1 | hint_cols;
    let mut line_program = None;
    if let Some(claim) = &p.claim {
        let pat = &cat.patterns[claim.pattern as usize];
        let cap = |gi: usize| pat.matcher.cached(&claim.spans, gi).map(|(a, b)| ((b0 + a) as u32, (b0 + b) as u32));
        ev.src = Src::Pattern(claim.pattern);
        ev.level = pat.level.and_then(cap);
        if let Some(m) = pat.message.and_then(cap) {
            ev.message = m;
        }
        if let Some((gi, layout)) = &pat.ts {
            let text = cap(*gi);
            ev.ts_kind = Some(layout.kind);
            ev.ts_text = text;
            ev.ts = text.and_then(|(a, b)| layout.parse(&raw[a as usize..b as usize], tz));
        }
        for &(gi, col) in &pat.ids {
            if let Some((a, b)) = cap(gi) {
                line_spans[col] = Some((a, b));
                cols |= 1 << col;
                if pat.stream & crate::identity::bit(col) != 0 {
                    ev.stream_src |= crate::identity::bit(col);
                }
            }
        }
        if let Some(prog) = &pat.program {
            let own = &mut programs[claim.pattern as usize];
            line_program = Some(&*own.get_or_insert_with(|| shared(prog)));
            cols |= 1 << cat.program_col;
        }
    }
    while cols != 0 {
        let c = cols.trailing_zeros() as usize;
        cols &= cols - 1;
        // coalesce() without building the candidates (a hint is an Arc: cloned only when it is the value)
        let v = if let Some((a, b)) = p.strong[c] {
            Id::Span(a, b)
        } else if let (true, Some(prog)) = (c == cat.program_col, line_program) {
            Id::Text(prog.clone())
        } else if let Some((a, b)) = line_spans[c] {
            Id::Span(a, b)
        } else if let Some((a, b)) = p.weak[c] {
            // a weak envelope value (srun's task as the rank) gives way to the line's text too
            ev.hinted |= crate::identity::bit(c);
            Id::Span(a, b)
        } else if hints[c].is_none() {
            continue;
        } else {
            ev.hinted |= crate::identity::bit(c);
            hints[c].clone()
        };
        ev.ids[c] = typed_id(cat, c, raw, v);
    }
}

fn block_event<'a>(cat: &Catalog, lines: &[Peeled<'a>], members: &[usize], bi: u32, hints: &[Id],
                   tz: &Zoner) -> Event<'a> {
    let b = &cat.blocks[bi as usize];
    let first = &lines[members[0]];
    let last = &lines[*members.last().unwrap()];
    let mut raw = String::new();
    let mut at = Vec::with_capacity(members.len()); // where each member's raw starts in `raw`
    for (k, &i) in members.iter().enumerate() {
        if k > 0 {
            raw.push('\n');
        }
        at.push(raw.len() as u32);
        raw.push_str(lines[i].raw);
    }
    let ascii = members.iter().all(|&i| lines[i].ascii);
    let said = (0..members.len()).rev().find(|&k| !cat.marker.is_match(lines[members[k]].body(), lines[members[k]].ascii));
    let k = if b.message_first { 0 } else { said.unwrap_or(0) };
    let body = lines[members[k]].body;
    let message = (at[k] + body.0, at[k] + body.1);
    let env = (0..members.len()).find(|&k| lines[members[k]].env_ts.is_some());
    // The first member's raw text starts the block's: its spans hold.
    let sp = |s: Option<(u32, u32)>| s.map_or(Id::None, |(a, b)| Id::Span(a, b));
    let mut ids: [Id; MAX_ID] = Default::default();
    let mut hinted = 0u16;
    for c in 0..cat.identity.len() {
        let prog = if c == cat.program_col { b.program.clone().map_or(Id::None, Id::Text) } else { Id::None };
        let own = [sp(first.strong[c]), prog, sp(first.weak[c])];
        if own[..2].iter().all(Id::is_none) && !(own[2].is_none() && hints[c].is_none()) {
            hinted |= crate::identity::bit(c); // a weak envelope's value or the path's
        }
        ids[c] = coalesce(cat, c, &raw, [own[0].clone(), own[1].clone(), own[2].clone(), hints[c].clone()]);
    }
    let stream_key = stream_key(first, first.raw);
    let (mut ts, mut ts_kind, mut ts_text) = (None, None, None);
    if let Some((re, gi, layout)) = &b.ts {
        let mut l = re.locations();
        if let Some((a, z)) = if re.read(&mut l, &raw, ascii) { l.get(*gi) } else { None } {
            let t = &raw[a..z];
            ts_text = Some((a as u32, z as u32));
            ts = layout.parse(t, tz);
            ts_kind = Some(layout.kind);
        }
    }
    Event {
        line: first.no,
        end_line: last.no,
        offset: first.offset,
        raw: Cow::Owned(raw),
        ascii,
        message,
        src: Src::Block(bi),
        level: None,
        ts,
        ts_kind,
        ts_text,
        env_ts: env.and_then(|k| lines[members[k]].env_ts),
        env_ts_kind: env.and_then(|k| lines[members[k]].env_ts_kind),
        // the member's span, moved to where its raw text starts in the block's
        env_ts_text: env.and_then(|k| lines[members[k]].env_ts_text.map(|s| (at[k] + s.0, at[k] + s.1))),
        envelopes: first.envelopes,
        ids,
        kept: Vec::new(),
        marks: None,
        hinted,
        stream_src: 0,
        stream_via: 0,
        stream_key,
        outer_key: outer_key(first, first.raw, stream_key),
        // the tokens of its first line and of its message's line (where the block's raw has them)
        hits: {
            let of = |m: usize| lines[members[m]].hits.as_ref().map(|h| (at[m] + lines[members[m]].body.0, h.clone()));
            [of(0), if k != 0 { of(k) } else { None }]
        },
        blocked: 0,
    }
}

/// What `carry` knows at the end of a batch, for the next batch of the
/// same file (a section runs on across batch boundaries).
#[derive(Default)]
pub struct Carried {
    value: Vec<Id>,
    live: Vec<Option<bool>>,
    prev_end: i64,
}

/// `carry = [...]`: a value a pattern captured fills the following events of
/// its section (up to a blank line) that have none, or only a path hint's or
/// a weak envelope's; `end_carry`: a line of that pattern stops it.
pub fn carry(cat: &Catalog, events: &mut [Event], st: &mut Carried) {
    if cat.carry.is_empty() {
        return;
    }
    let nid = cat.identity.len();
    if st.value.len() != nid {
        st.value = vec![Id::None; nid];
        st.live = vec![None; nid];
    }
    // what the event's pattern carries and ends: `cat.carry` by its key, looked up by index
    let of = |e: &Event| match e.src {
        Src::Pattern(p) => cat.carry_of[p as usize].as_ref(),
        _ => None,
    };
    let open = st.value.iter().any(|v| !v.is_none()) || st.live.iter().any(|l| l.is_some());
    if !open && !events.iter().any(|e| of(e).map_or(false, |(c, _)| !c.is_empty())) {
        return;
    }
    let carried_cols: Vec<usize> = (0..nid)
        .filter(|c| cat.carry.values().any(|(cs, _)| cs.contains(c)))
        .collect();
    let has_enders = |c: usize| cat.carry.values().any(|(_, es)| es.contains(&c));
    let Carried { value, live, prev_end } = st;
    for e in events.iter_mut() {
        if e.line > *prev_end + 1 {
            value.iter_mut().for_each(|v| *v = Id::None);
            live.iter_mut().for_each(|v| *v = None);
        }
        *prev_end = e.end_line;
        let k = of(e);
        for &c in &carried_cols {
            let carries = k.map_or(false, |(cs, _)| cs.contains(&c));
            let ends = k.map_or(false, |(_, es)| es.contains(&c));
            if carries {
                if !e.ids[c].is_none() {
                    value[c] = e.ids[c].detached(&e.raw);
                }
                live[c] = Some(true);
            } else if ends {
                live[c] = Some(false);
            }
            // a path hint or a weak envelope's value gives way, as to a stream's carried value
            // (stream.rs): `Node: gke-a-1` outvotes the bundle directory's name gpu43/
            let open_col = e.ids[c].is_none() || e.hinted & crate::identity::bit(c) != 0;
            if open_col && !value[c].is_none() && (!has_enders(c) || live[c] == Some(true)) {
                e.ids[c] = value[c].clone();
                e.hinted &= !crate::identity::bit(c);
            }
        }
    }
}

/// The line's time: its own, or its envelope's when better; a line with
/// none takes the previous timed line's (a lower bound).
pub fn times(events: &mut [Event], mut prev: Option<i64>, implausible: &mut u64) -> Option<i64> {
    use crate::timefmt::PLAUSIBLE;
    for e in events.iter_mut() {
        // A year 0001 or 9999 is not a time: the line is timed as if it had none.
        // Its ts_text stays (the time as written): a line that inherits a time
        // and has one is a line whose own was ignored, and detectors leave it out.
        if e.ts.map_or(false, |t| !PLAUSIBLE.contains(&t)) {
            e.ts = None;
            e.ts_kind = None;
            *implausible += 1;
        }
        if e.env_ts.map_or(false, |t| !PLAUSIBLE.contains(&t)) {
            e.env_ts = None;
            *implausible += 1;
            if e.ts.is_none() && e.ts_text.is_none() {
                e.ts_text = e.env_ts_text.clone();
            }
        }
        let own_rank = e.ts_kind.map_or(9, |k| k.rank());
        if let Some(t) = e.env_ts {
            let env_kind = e.env_ts_kind.unwrap_or(TsKind::Envelope);
            if e.ts.is_none() || env_kind.rank() < own_rank {
                e.ts = Some(t);
                e.ts_kind = Some(match env_kind {
                    TsKind::YearInferred | TsKind::Collector => env_kind,
                    _ => TsKind::Envelope,
                });
                e.ts_text = e.env_ts_text;
            }
        }
        match e.ts {
            Some(t) => prev = Some(t),
            None => {
                e.ts = prev;
                e.ts_kind = Some(if prev.is_some() { TsKind::Interpolated } else { TsKind::None });
            }
        }
    }
    prev
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_two_words() {
        assert_eq!(std::mem::size_of::<Id>(), 16);
    }

    /// The digits-only fast path reads what `parse` after `trim` reads.
    #[test]
    fn int_of_is_parse() {
        let long = "9".repeat(19);
        for t in ["0", "0012", "123456789012345678", long.as_str(), " 7 ", "+5", "-5", "", "1a", "\u{0b}4", "٣"] {
            let want = t.trim().parse::<i64>().ok();
            let got = match Id::int_of(Some(t), true) {
                Id::Int(v) => Some(v),
                _ => None,
            };
            assert_eq!(got, want, "{t:?}");
        }
        assert!(Id::int_of(None, true).is_none());
    }
}
