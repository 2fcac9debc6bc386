//! classify + facts: kind, severity and role from the format's rules (first
//! match wins, in file order), typed facts from messages. Logs repeat
//! themselves: both are worked out once per distinct (source, message) and
//! reused for every event that carries it. A message met for the first time
//! whose shape was met before (its bytes' classes under its format's rule
//! and fact regexes, as shape.rs makes them for a line's structure: an NCCL
//! or syslog message differs from the next in its digits) takes the shape's
//! rule and fact spans; only the regexes that tell digits apart run on it.

use crate::compile::{Catalog, FType};
use crate::events::{Event, Id, Src};
use crate::guard::Guard;
use crate::shape::{Classes, Gather};
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

pub struct Class<'c> {
    pub kind: Option<usize>,
    pub severity: u8,
    pub role: &'c str,
}

/// A typed fact value.
#[derive(Clone, Debug)]
pub enum Val {
    Null,
    Str(String),
    Int(i64),
    Float(f64),
}

/// One fact row: its table and the values of the table's columns.
pub struct FactRow {
    pub table: usize,
    pub event: usize,
    /// shared by the events whose message repeats (an Arc: a part's rows are written out on
    /// another thread after the stream carry, stream.rs)
    pub values: Arc<[Val]>,
}

fn src_key<'a>(cat: &'a Catalog, src: Src) -> Option<&'a str> {
    match src {
        Src::Raw => None,
        Src::Pattern(p) => Some(&cat.patterns[p as usize].key),
        Src::Block(b) => Some(&cat.blocks[b as usize].key),
    }
}

pub fn format_of(cat: &Catalog, src: Src) -> Option<usize> {
    match src {
        Src::Raw => None,
        Src::Pattern(p) => Some(cat.patterns[p as usize].format),
        Src::Block(b) => Some(cat.blocks[b as usize].format),
    }
}

fn default_kind(cat: &Catalog, src: Src) -> Option<usize> {
    match src {
        Src::Raw => None,
        Src::Pattern(p) => cat.patterns[p as usize].kind,
        Src::Block(b) => cat.blocks[b as usize].kind,
    }
}

/// (rule index) of the first rule of the format that matches; the rules
/// that tell digits apart (`sensitive`) it asks go into `asks` with their answers.
fn first_rule(cat: &Catalog, f: usize, key: Option<&str>, message: &str, raw: &str, ascii: bool,
              sensitive: &[bool], asks: &mut Vec<(usize, bool)>) -> Option<usize> {
    cat.formats[f].rules.iter().copied().find(|&ri| {
        let r = &cat.rules[ri];
        if !(r.on.is_none() || r.on.as_deref() == key) {
            return false;
        }
        let hit = rule_matches(cat, ri, message, raw, ascii);
        if sensitive[ri] {
            asks.push((ri, hit));
        }
        hit
    })
}

/// The text rule `ri` reads of event `e`.
#[inline]
fn rule_text<'e>(cat: &Catalog, ri: usize, e: &'e Event) -> &'e str {
    if cat.rules[ri].raw { &e.raw } else { e.message() }
}

#[inline]
fn rule_matches(cat: &Catalog, ri: usize, message: &str, raw: &str, ascii: bool) -> bool {
    let r = &cat.rules[ri];
    r.regex.is_match(if r.raw { raw } else { message }, ascii)
}

fn class_of<'c>(cat: &'c Catalog, e: &Event, f: Option<usize>, rule: Option<usize>, info: u8) -> Class<'c> {
    let rule = rule.map(|r| &cat.rules[r]);
    let kind = rule.map(|r| r.kind).or_else(|| default_kind(cat, e.src));
    let level_sev = match (f, e.level) {
        (Some(f), Some(l)) => cat.formats[f].levels.get(e.span(l)).copied(),
        _ => None,
    };
    let kind_sev = kind.map(|k| cat.kinds[k].severity);
    let rule_sev = rule.and_then(|r| r.severity);
    let severity = [level_sev, kind_sev, rule_sev].into_iter().flatten().max().unwrap_or(info);
    let role = rule
        .and_then(|r| r.role.as_deref())
        .or_else(|| kind.map(|k| cat.kinds[k].role.as_str()))
        .unwrap_or("info");
    Class { kind, severity, role }
}

/// The byte classes of what each format's rules and message facts read
/// (as shape.rs makes them for a line's structure), but for the regexes
/// that tell digits apart: those are run on every message.
#[derive(Default, Clone)]
pub struct MessageShapes {
    classes: Vec<Classes>,
    rule_sensitive: Vec<bool>,
    fact_sensitive: Vec<bool>,
    /// whether a message's shape decides its summary tests (summary.rs: none of
    /// their regexps tells digits apart), per format
    summary_by_shape: Vec<bool>,
}

pub fn message_shapes(cat: &Catalog) -> Result<MessageShapes, String> {
    let mut m = MessageShapes {
        classes: Vec::new(),
        rule_sensitive: vec![false; cat.rules.len()],
        fact_sensitive: vec![false; cat.facts.len()],
        summary_by_shape: Vec::new(),
    };
    let summary = crate::summary::shape_sources();
    for f in &cat.formats {
        let mut g = Gather::default();
        for &ri in &f.rules {
            m.rule_sensitive[ri] = g.add(cat.rules[ri].regex.as_str())?;
        }
        for &fi in f.facts.iter().filter(|&&fi| !cat.facts[fi].multi) {
            m.fact_sensitive[fi] = g.add(cat.facts[fi].regex.as_str())?;
        }
        let mut by_shape = true;
        for src in &summary {
            by_shape &= !g.add(src)?;
        }
        m.summary_by_shape.push(by_shape);
        m.classes.push(g.classes());
    }
    Ok(m)
}

/// Texts longer than this have no shape here (they rarely repeat).
pub const MAX_MESSAGE_SHAPE: usize = 512;
/// Shapes remembered before starting again (bounded: ~2 MB).
pub const MESSAGE_SHAPES: usize = 4096;

/// What a message's shape decides of a fact of its format.
enum ShapeFact {
    /// the fact is not for the message's source
    Skip,
    /// captures_iter on the raw text: per event
    Multi,
    /// tells digits apart: read on each message that its guard does not admit
    /// (the spans it read on the message that made the shape, None: no match)
    Read(Option<Box<[Option<(usize, usize)>]>>, Option<Guard>),
    /// every group's span in the message (None: no match)
    Spans(Option<Box<[Option<(usize, usize)>]>>),
}

/// What a message's shape decides.
struct ByShape {
    rule: Option<usize>,
    /// the rules that tell digits apart the reading asked, with their answers
    rule_asks: Box<[(usize, bool)]>,
    /// per rule asked, when a message's bytes give its answer without asking (guard.rs)
    rule_guards: Box<[Option<Guard>]>,
    /// per fact of the format
    facts: Box<[ShapeFact]>,
    /// the summary tests (None: the format's shapes do not decide them)
    tests: Option<crate::summary::ShapeTests>,
}

/// A fact row a message makes, in the order of the format's facts.
enum Emit {
    Row(usize, Arc<[Val]>),
    Multi(usize),
}

/// What a (source, message) decides: its rule (formats whose rules read
/// the message) and its fact rows.
struct ByMessage {
    rule: Option<usize>,
    emits: Box<[Emit]>,
    /// the message's summary tests
    tests: crate::summary::Tests,
}

/// What each message shape met so far decides (`Reader::read_shape`), kept by a file's parser
/// from batch to batch (one per thread of a batch, as shape.rs's Memo): a shape's answers are its
/// key's, whichever batch meets it first, and read once per file instead of once per part of each
/// 64 k-line batch.
#[derive(Default)]
pub struct Shapes {
    by_shape: HashMap<Box<[u8]>, Arc<ByShape>>,
    /// shapes read (`read_shape`): for RANKTRACE_PROFILE
    pub read: u64,
}

/// The classification and facts of one part of a batch.
struct Reader<'c, 'e, 'm> {
    cat: &'c Catalog,
    /// whether messages of a shape met before take its answers (RANKTRACE_ENGINE_MEMO)
    memo: bool,
    by_message: HashMap<(Src, &'e str), ByMessage>,
    shapes: &'m mut Shapes,
    /// what the shape whose key `key` holds decides (`shape`): looked up once, not again by
    /// `rule_given` and `shape_tests` (rule_given 183 -> 37 instructions a line, session 11)
    shaped: Option<Arc<ByShape>>,
    key: Vec<u8>,
    /// the event whose shape `key` holds (`shape`): its source, message span and shaped text
    keyed: Option<(Src, (u32, u32))>,
    keyed_text: Vec<u8>,
    locs: Vec<crate::rx::Locs>,
    asks: Vec<(usize, bool)>,
}

fn src_bytes(src: Src) -> [u8; 5] {
    let (t, v) = match src {
        Src::Raw => (0, 0),
        Src::Pattern(p) => (1, p),
        Src::Block(b) => (2, b),
    };
    let v = v.to_le_bytes();
    [t, v[0], v[1], v[2], v[3]]
}

impl<'c, 'e, 'm> Reader<'c, 'e, 'm> {
    /// The rule and fact rows of event `ei` (of format `f`), and its message's summary
    /// tests when its message or its shape was met before (else None: read them from it).
    fn event(&mut self, f: usize, e: &'e Event, ei: usize, out: &mut Vec<FactRow>, fills: &mut Vec<(usize, usize, usize)>)
             -> (Option<usize>, Option<crate::summary::Tests>) {
        let cat = self.cat;
        let format = &cat.formats[f];
        if format.facts.is_empty() && format.raw_rules {
            let shaped = self.shape(f, e);
            let tests = if shaped { self.shape_tests(e) } else { None };
            return (self.rule_given(f, e, shaped), tests);
        }
        let mut shaped = None; // whether self.key holds e's shape, when new_message made it
        let m = match self.by_message.get(&(e.src, e.message())) {
            Some(m) => m,
            None => {
                let (m, s) = self.new_message(f, e);
                shaped = Some(s);
                self.by_message.entry((e.src, e.message())).or_insert(m)
            }
        };
        for emit in m.emits.iter() {
            match emit {
                Emit::Row(fi, values) => {
                    let fact = &cat.facts[*fi];
                    if !fact.identity.is_empty() {
                        fills.push((ei, *fi, out.len()));
                    }
                    out.push(FactRow { table: fact.table, event: ei, values: values.clone() });
                }
                Emit::Multi(fi) => {
                    for c in cat.facts[*fi].regex.all_captures(&e.raw, e.ascii) {
                        out.push(row(cat, *fi, &e.raw, |g| c.get(g).copied().flatten(), ei));
                    }
                }
            }
        }
        let (rule, tests) = (m.rule, m.tests);
        let rule = match (format.raw_rules, shaped) {
            (false, _) => rule,
            (true, Some(s)) => self.rule_given(f, e, s),
            (true, None) => self.rule(f, e),
        };
        (rule, Some(tests))
    }

    /// The summary tests of event `e` from its shape, which `self.shaped` holds.
    #[inline]
    fn shape_tests(&self, e: &Event) -> Option<crate::summary::Tests> {
        self.shaped.as_ref()?.tests.as_ref().map(|t| t.tests(e.message()))
    }

    /// The first rule of format `f` that matches event `e`.
    fn rule(&mut self, f: usize, e: &Event) -> Option<usize> {
        let shaped = self.shape(f, e);
        self.rule_given(f, e, shaped)
    }

    /// `rule`, `shaped`: whether `self.key` and `self.shaped` hold the shape of `e` (`shape`).
    fn rule_given(&mut self, f: usize, e: &Event, shaped: bool) -> Option<usize> {
        let cat = self.cat;
        if shaped {
            let s = self.shaped.as_deref().expect("a shaped event's shape");
            let asked = |(&(ri, v), g): (&(usize, bool), &Option<Guard>)| {
                g.as_ref().map_or(false, |g| g.admits(rule_text(cat, ri, e).as_bytes()))
                    || rule_matches(cat, ri, e.message(), &e.raw, e.ascii) == v
            };
            if s.rule_asks.iter().zip(s.rule_guards.iter()).all(asked) {
                return s.rule;
            }
        }
        self.asks.clear();
        first_rule(cat, f, src_key(cat, e.src), e.message(), &e.raw, e.ascii, &cat.messages.rule_sensitive, &mut self.asks)
    }

    /// The rule and fact rows of a (source, message) met for the first
    /// time, and whether `self.key` and `self.shaped` hold the event's shape.
    fn new_message(&mut self, f: usize, e: &Event) -> (ByMessage, bool) {
        let cat = self.cat;
        let shaped = self.shape(f, e);
        let rule = if cat.formats[f].raw_rules { None } else { self.rule_given(f, e, shaped) };
        let key = src_key(cat, e.src);
        let m = e.message();
        let mut emits = Vec::new();
        let shape = if shaped { self.shaped.clone() } else { None };
        let locs = &mut self.locs;
        for (k, &fi) in cat.formats[f].facts.iter().enumerate() {
            let fact = &cat.facts[fi];
            if !(fact.on.is_none() || fact.on.as_deref() == key) {
                continue;
            }
            if fact.multi {
                emits.push(Emit::Multi(fi));
                continue;
            }
            let spans = match shape.as_ref().map(|s| &s.facts[k]) {
                Some(ShapeFact::Spans(None)) => continue,
                Some(ShapeFact::Spans(Some(sp))) => Some(row(cat, fi, m, |g| sp[g], 0)),
                Some(ShapeFact::Read(sp, Some(guard))) if guard.admits(m.as_bytes()) => match sp {
                    None => continue,
                    Some(sp) => Some(row(cat, fi, m, |g| sp[g], 0)),
                },
                _ => None,
            };
            let r = match spans {
                Some(r) => r,
                None => {
                    if !fact.regex.read(&mut locs[fi], m, e.ascii) {
                        continue;
                    }
                    let l = &locs[fi];
                    row(cat, fi, m, |g| l.get(g), 0)
                }
            };
            emits.push(Emit::Row(fi, r.values));
        }
        let tests = match shape.as_ref().and_then(|s| s.tests.as_ref()) {
            Some(t) => t.tests(m),
            None => crate::summary::tests(m),
        };
        (ByMessage { rule, emits: emits.into(), tests }, shaped)
    }

    /// Puts the key of event `e`'s shape in `self.key` and what the shape
    /// decides in `self.shaped`; false: it has none (memo off, non-ASCII, long).
    fn shape(&mut self, f: usize, e: &Event) -> bool {
        let cat = self.cat;
        let raw_rules = cat.formats[f].raw_rules;
        let text = if raw_rules { &*e.raw } else { e.message() };
        if !self.memo || !e.ascii || text.len() > MAX_MESSAGE_SHAPE {
            return false;
        }
        // An event of the source, message span and text shape of the event shaped last has its
        // key, and `shaped` its shape: consecutive lines often differ in a few digits, and a
        // word compare with the text before costs less than a class per byte into the key, its
        // hash and its lookup (this function 755 -> 661 instructions a line on the long run's
        // srun output, whose interleaved ranks' labels often differ in class; 194 -> 187 on the
        // corpus's node log; callgrind, session 11).
        let same_span = !raw_rules || self.keyed.map_or(false, |(_, m)| m == e.message);
        if same_span
            && self.keyed.map_or(false, |(s, _)| s == e.src)
            && cat.messages.classes[f].same_shape(text.as_bytes(), &self.keyed_text)
        {
            self.keyed_text.clear();
            self.keyed_text.extend_from_slice(text.as_bytes());
            return true;
        }
        self.key.clear();
        self.key.extend_from_slice(&src_bytes(e.src));
        if raw_rules {
            self.key.extend_from_slice(&e.message.0.to_le_bytes());
            self.key.extend_from_slice(&e.message.1.to_le_bytes());
        }
        cat.messages.classes[f].push_shape(text.as_bytes(), &mut self.key);
        let s = match self.shapes.by_shape.get(self.key.as_slice()) {
            Some(s) => s.clone(),
            None => {
                let s = Arc::new(self.read_shape(f, e));
                self.shapes.read += 1;
                if self.shapes.by_shape.len() >= MESSAGE_SHAPES {
                    self.shapes.by_shape.clear();
                }
                self.shapes.by_shape.insert(self.key.as_slice().into(), s.clone());
                s
            }
        };
        self.shaped = Some(s);
        self.keyed = Some((e.src, e.message));
        self.keyed_text.clear();
        self.keyed_text.extend_from_slice(text.as_bytes());
        true
    }

    /// What event `e` answers, for its shape.
    fn read_shape(&mut self, f: usize, e: &Event) -> ByShape {
        let cat = self.cat;
        let key = src_key(cat, e.src);
        let m = e.message();
        self.asks.clear();
        let rule = first_rule(cat, f, key, m, &e.raw, e.ascii, &cat.messages.rule_sensitive, &mut self.asks);
        let facts = cat.formats[f]
            .facts
            .iter()
            .map(|&fi| {
                let fact = &cat.facts[fi];
                if !(fact.on.is_none() || fact.on.as_deref() == key) {
                    ShapeFact::Skip
                } else if fact.multi {
                    ShapeFact::Multi
                } else if cat.messages.fact_sensitive[fi] {
                    let hit = fact.regex.read(&mut self.locs[fi], m, e.ascii);
                    let l = &self.locs[fi];
                    let spans = hit.then(|| (0..fact.regex.captures_len()).map(|g| l.get(g)).collect());
                    let guard = fact.regex.guard_nfa().and_then(|nfa| crate::guard::make(nfa, m.as_bytes(), &cat.messages.classes[f]));
                    ShapeFact::Read(spans, guard)
                } else {
                    let hit = fact.regex.read(&mut self.locs[fi], m, e.ascii);
                    let l = &self.locs[fi];
                    ShapeFact::Spans(hit.then(|| (0..fact.regex.captures_len()).map(|g| l.get(g)).collect()))
                }
            })
            .collect();
        let rule_guards = self
            .asks
            .iter()
            .map(|&(ri, _)| {
                let nfa = cat.rules[ri].regex.guard_nfa()?;
                crate::guard::make(nfa, rule_text(cat, ri, e).as_bytes(), &cat.messages.classes[f])
            })
            .collect();
        let tests = cat.messages.summary_by_shape[f].then(|| crate::summary::ShapeTests::of(m));
        ByShape { rule, rule_asks: self.asks.as_slice().into(), rule_guards, facts, tests }
    }
}

/// Each event's class, the fact rows of the events, and identity filled
/// from facts (`identity = [...]`) where the event has none (or only a path
/// hint): the first such fact of the catalog wins; then from the identity
/// tokens found on its line (identity.rs). `memo`: messages of a shape met
/// before take its answers. And each event's summary facts (summary.rs), as
/// `summary::of_events` reads them: worked out once per (source, message) and
/// per message shape, replayed for the events that repeat them.
pub fn read<'c>(cat: &'c Catalog, events: &mut [Event], memo: bool) -> (Vec<Class<'c>>, Vec<FactRow>, Vec<crate::summary::Facts>) {
    read_with(cat, events, memo, &mut Shapes::default())
}

/// `read`, with the message shapes met before (`Shapes`: a file's, kept from batch to batch).
pub fn read_with<'c>(cat: &'c Catalog, events: &mut [Event], memo: bool, shapes: &mut Shapes)
                     -> (Vec<Class<'c>>, Vec<FactRow>, Vec<crate::summary::Facts>) {
    let info = cat.severities.iter().position(|s| s == "info").unwrap_or(1) as u8;
    let kinds = crate::summary::Kinds::of(cat);
    let mut classes = Vec::with_capacity(events.len());
    let mut summaries = Vec::with_capacity(events.len());
    let mut out = Vec::new();
    let mut fills: Vec<(usize, usize, usize)> = Vec::new(); // (event, fact, row)
    {
        let mut r = Reader {
            cat,
            memo,
            by_message: HashMap::default(),
            shapes,
            shaped: None,
            key: Vec::new(),
            keyed: None,
            keyed_text: Vec::new(),
            locs: cat.facts.iter().map(|f| f.regex.locations()).collect(),
            asks: Vec::new(),
        };
        for (ei, e) in events.iter().enumerate() {
            if !e.kept.is_empty() {
                for &fi in &cat.env_facts {
                    let col = cat.facts[fi].kept.unwrap();
                    if let Some(&(_, s)) = e.kept.iter().find(|(c, _)| *c == col) {
                        let text = e.span(s);
                        if cat.facts[fi].regex.read(&mut r.locs[fi], text, e.ascii) {
                            let l = &r.locs[fi];
                            out.push(row(cat, fi, text, |g| l.get(g), ei));
                        }
                    }
                }
            }
            let f = format_of(cat, e.src);
            let (rule, tests) = f.map_or((None, None), |f| r.event(f, e, ei, &mut out, &mut fills));
            let class = class_of(cat, e, f, rule, info);
            summaries.push(match &tests {
                Some(t) => crate::summary::combine(&kinds, t, &class),
                None => crate::summary::facts(&kinds, e.message(), &class),
            });
            classes.push(class);
        }
    }
    for (ei, fi, ri) in fills {
        for &(ci, col) in &cat.facts[fi].identity {
            if events[ei].ids[col].is_none() || events[ei].hinted & crate::identity::bit(col) != 0 {
                let v = val_text(&out[ri].values[ci]);
                let v = if cat.int_identity[col] {
                    Id::int_of(v.as_deref(), false)
                } else {
                    v.map_or(Id::None, |t| Id::Text(crate::events::shared(&t)))
                };
                if !v.is_none() {
                    events[ei].ids[col] = v;
                    events[ei].hinted &= !crate::identity::bit(col);
                }
            }
        }
    }
    // the tokens after the line's own facts (a line's text says more than its file's path)
    let mut rejected = crate::identity::Rejected::default();
    for (ei, e) in events.iter_mut().enumerate() {
        for (at, hits) in std::mem::take(&mut e.hits).into_iter().flatten() {
            crate::identity::apply(cat, e, ei, at, &hits, &mut out, &mut rejected);
        }
    }
    (classes, out, summaries)
}

fn typed(text: Option<&str>, t: FType) -> Val {
    match text {
        None => Val::Null,
        Some(s) => match t {
            FType::Str => Val::Str(s.to_string()),
            FType::Int if s.contains(',') => s.replace(',', "").parse::<i64>().map(Val::Int).unwrap_or(Val::Null),
            FType::Int => s.parse::<i64>().map(Val::Int).unwrap_or(Val::Null),
            FType::Float => s.parse::<f64>().map(Val::Float).unwrap_or(Val::Null),
        },
    }
}

/// A fact row from the groups of a match (`get`: group index -> span of `text`).
fn row(cat: &Catalog, fi: usize, text: &str, get: impl Fn(usize) -> Option<(usize, usize)>, event: usize) -> FactRow {
    let fact = &cat.facts[fi];
    let table = &cat.tables[fact.table];
    let mut values = vec![Val::Null; table.cols.len()];
    for &(gi, ci) in &fact.cols {
        values[ci] = typed(get(gi).map(|(a, b)| &text[a..b]), table.cols[ci].1);
    }
    FactRow { table: fact.table, event, values: values.into() }
}

fn val_text(v: &Val) -> Option<String> {
    match v {
        Val::Null => None,
        Val::Str(s) => Some(s.clone()),
        Val::Int(i) => Some(i.to_string()),
        Val::Float(f) => Some(format!("{f:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::NO_BLOCK;

    /// One pattern claims every line; rule `day` and fact `hex` tell digits
    /// apart, rule `warn` and fact `n` do not.
    fn catalog(raw_rules: bool) -> Catalog {
        let field = if raw_rules { "raw" } else { "message" };
        let rule = |re: &str, kind: &str, field: &str| {
            format!(r#"{{"format": "f", "regex": {}, "kind": "{kind}", "on": null, "field": "{field}", "severity": null, "role": null}}"#,
                    serde_json::to_string(re).unwrap())
        };
        let fact = |re: &str| {
            format!(r#"{{"format": "f", "table": "t", "regex": {}, "on": null, "field": "message"}}"#, serde_json::to_string(re).unwrap())
        };
        let spec = format!(
            r#"{{"identity": ["host", "rank", "local_rank", "program"], "int_identity": ["rank", "local_rank"],
                "severities": ["debug", "info", "error"], "envelopes": [],
                "patterns": [{{"key": "f.all", "format": "f", "regex": "^(?P<message>.*)$", "first": null, "literals": null,
                               "ts": null, "kind": null, "carry": [], "end_carry": [], "program": null, "split": null}}],
                "blocks": [], "rules": [{}, {}], "facts": [{}, {}],
                "fact_tables": {{"t": [["n", "int"], ["hex", "str"]]}},
                "kinds": {{"a": {{"role": "info", "severity": "info"}}, "b": {{"role": "cause", "severity": "error"}}}},
                "levels": {{}}}}"#,
            rule(r"^day [0-3]\d", "a", field),
            rule(r"^(day|warn) \d+", "b", field),
            fact(r"n=(?P<n>\d+)"),
            fact(r"0x(?P<hex>[0-9a-f]+)")
        );
        Catalog::compile(&crate::CatalogSpec::from_json(&spec).unwrap()).unwrap()
    }

    fn events<'a>(cat: &Catalog, lines: &[&'a str]) -> Vec<Event<'a>> {
        let tz = crate::timefmt::Zoner::new("UTC").unwrap();
        let mut r = crate::shape::Reader::new(cat, &[], &tz, false);
        let mut memo = crate::shape::Memo::default();
        let mut peeled: Vec<_> = lines.iter().map(|l| r.read(&mut memo, 1, 0, l, &mut [0])).collect();
        let n = peeled.len();
        let hints = vec![Id::None; cat.identity.len()];
        crate::events::build(cat, &mut peeled, &vec![NO_BLOCK; n], &vec![usize::MAX; n], &hints, &tz)
    }

    /// Messages of one shape take its rule and fact spans; the regexes that
    /// tell digits apart are asked again: the same kinds and facts as with
    /// every message read on its own.
    #[test]
    fn message_shapes_answer_as_the_messages_do() {
        let lines = ["day 12 n=5 0x1f", "day 45 n=7 0x2e", "day 31 n=9 1x2e", "warn 7 n=1 0x00", "day 12 n=5 0x1f"];
        for raw_rules in [false, true] {
            let cat = catalog(raw_rules);
            assert!(cat.messages.rule_sensitive[0] && !cat.messages.rule_sensitive[1]);
            assert!(!cat.messages.fact_sensitive[0] && cat.messages.fact_sensitive[1]);
            let read = |memo: bool| {
                let mut evs = events(&cat, &lines);
                let (classes, rows, _) = read(&cat, &mut evs, memo);
                let kinds: Vec<_> = classes.iter().map(|c| c.kind.map(|k| cat.kinds[k].name.clone())).collect();
                let rows: Vec<_> = rows.iter().map(|r| (r.event, format!("{:?}", r.values))).collect();
                (kinds, rows)
            };
            let (with, without) = (read(true), read(false));
            assert_eq!(with, without);
            let k = |s: &str| Some(s.to_string());
            assert_eq!(with.0, vec![k("a"), k("b"), k("a"), k("b"), k("a")]);
            assert_eq!(with.1.iter().filter(|r| r.1.contains("Str")).count(), 4, "{:?}", with.1); // 0x in all but line 3
        }
    }

    /// The summary facts replayed per message and per shape are those read from each
    /// message (summary::of_events), memo on and off.
    #[test]
    fn summary_facts_replayed_as_read() {
        let lines = [
            "step 12 | loss 3.1", "step 345 | loss 3.1", "step 12 | loss 3.1", "STEP=99999999999999999999 x",
            "iter 7 comm 0x1 nranks 16", "iter 8 comm 0x1 nranks 4294967296", "day 12 step 5", "warn 7 step 6",
            "Sending process 7 closing signal SIGTERM", "Sending process 8 closing signal SIGTERM",
            "failed (exitcode: 1) step 3", "ministep 3", "x\u{00e9} step 4", "global_step=[42] lr", "global_step=[43] lr",
            "trainer-0-worker-3   1/1   Running   0   5m", "trainer-0-worker-7   0/1   Running   2   9m", "Trainer 1/1 x 0",
        ];
        for raw_rules in [false, true] {
            let cat = catalog(raw_rules);
            for memo in [true, false] {
                let mut evs = events(&cat, &lines);
                let (classes, _, got) = read(&cat, &mut evs, memo);
                let want = crate::summary::of_events(&cat, &evs, &classes);
                assert_eq!(got, want, "raw_rules {raw_rules} memo {memo}");
                assert!(want.iter().filter(|f| f.step.is_some()).count() >= 6, "{want:?}");
                assert!(want.iter().any(|f| f.nranks == Some(16)) && want.iter().filter(|f| f.teardown).count() == 3);
                assert_eq!(want.iter().filter(|f| f.pods_row).count(), 2, "{want:?}");
            }
        }
    }

    /// Two events have the same class key exactly when `same_key` says so.
    #[test]
    fn same_key_is_key_equality() {
        let cat = catalog(false);
        let lines = ["day 12 n=5", "day 13 n=5", "warn 7 n=1", "warn 8", "x", "day 45"];
        let mut evs = events(&cat, &lines);
        evs[1].ids[0] = Id::Text(crate::events::shared("h1")); // a text identity: part of the key
        evs[2].ids[1] = Id::Int(3); // an integer one: not
        let (classes, _, _) = read(&cat, &mut evs, true);
        let key = |i: usize| {
            let mut k = Vec::new();
            crate::classes::key(&cat, &evs[i], &classes[i], None, &mut k);
            k
        };
        let mut same = 0;
        for a in 0..evs.len() {
            for b in 0..evs.len() {
                let s = crate::classes::same_key(&cat, &evs[a], &classes[a], &evs[b], &classes[b]);
                assert_eq!(s, key(a) == key(b), "{a} {b}");
                if s {
                    let h = |i: usize| crate::classes::key_hash(&cat, &evs[i], &classes[i]);
                    assert_eq!(h(a), h(b), "{a} {b}: one key, one hash");
                }
                same += (s && a != b) as usize;
            }
        }
        assert!(same > 0);
    }
}
