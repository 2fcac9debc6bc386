//! The catalog compiled once: regexes, first-character tables, literal
//! prefilters, time layouts, per-format rule and fact lists.

use crate::spec::*;
use crate::timefmt::Layout;
use memchr::memmem::Finder;
use crate::literals::Literals;
use crate::rx::{Locs, Rx};
// Fx: `levels` and `carry` are looked up for every line (SipHash was ~2% of a line's parse).
use rustc_hash::FxHashMap as HashMap;

/// Which first bytes of a text a regex can start a match with. Bytes >= 0x80
/// stand for "any non-ASCII character" (the loader's NON_ASCII class).
#[derive(Clone)]
pub struct FirstChars(Option<[bool; 129]>);

impl FirstChars {
    fn new(spec: &Option<String>) -> FirstChars {
        match spec {
            None => FirstChars(None),
            Some(s) => {
                let mut t = [false; 129];
                for c in s.chars() {
                    let i = c as u32;
                    t[if i < 128 { i as usize } else { 128 }] = true;
                }
                FirstChars(Some(t))
            }
        }
    }
    #[inline]
    pub fn admits(&self, text: &str) -> bool {
        match &self.0 {
            None => true,
            Some(t) => match text.as_bytes().first() {
                None => false,
                Some(&b) => t[if b < 128 { b as usize } else { 128 }],
            },
        }
    }
    pub fn set(&self) -> Option<&[bool; 129]> {
        self.0.as_ref()
    }
}

pub fn rx(pattern: &str, what: &str) -> Result<Rx, String> {
    Rx::new(pattern, false, what)
}

/// Index standing for the tail group of a split regex (the text after the prefix).
pub const TAIL: usize = usize::MAX - 1;

/// A regex as matched: whole, or split into its prefix and a tail group.
pub struct Matcher {
    pub regex: Rx,
    tail: Option<String>,
    pre: usize,
}

impl Matcher {
    fn new(regex: &str, split: &Option<Split>, what: &str) -> Result<Matcher, String> {
        match split {
            None => Ok(Matcher { regex: rx(regex, what)?, tail: None, pre: 0 }),
            Some(sp) => {
                let re = rx(&sp.prefix, what)?;
                let pre = Group::of(&re).index("__pre").ok_or_else(|| format!("{what}: split without __pre"))?;
                Ok(Matcher { regex: re, tail: sp.group.clone(), pre })
            }
        }
    }
    pub fn index(&self, name: &str) -> Option<usize> {
        if self.tail.as_deref() == Some(name) {
            return Some(TAIL);
        }
        Group::of(&self.regex).index(name).filter(|_| name != "__pre")
    }
    pub fn names(&self) -> Vec<(usize, String)> {
        let mut v: Vec<(usize, String)> = Group::of(&self.regex).names.into_iter().filter(|(_, n)| n != "__pre").collect();
        if let Some(t) = &self.tail {
            v.push((TAIL, t.clone()));
        }
        v
    }
    /// Every group's span after a successful read of `text`, the tail group
    /// last (what `cached` reads).
    pub fn spans(&self, locs: &Locs, text: &str) -> Vec<Option<(u32, u32)>> {
        let n = self.regex.captures_len();
        let span = |m: Option<(usize, usize)>| m.map(|(a, b)| (a as u32, b as u32));
        (0..n).map(|gi| span(locs.get(gi))).chain([span(self.get(locs, TAIL, text))]).collect()
    }

    /// Span of group `gi` in `spans` (as made by `spans`).
    #[inline]
    pub fn cached(&self, spans: &[Option<(u32, u32)>], gi: usize) -> Option<(usize, usize)> {
        let s = if gi == TAIL { spans[spans.len() - 1] } else { spans[gi] };
        s.map(|(a, b)| (a as usize, b as usize))
    }

    /// Span of group `gi` after a successful captures_read on `text`.
    #[inline]
    pub fn get(&self, locs: &Locs, gi: usize, text: &str) -> Option<(usize, usize)> {
        if gi == TAIL {
            locs.get(self.pre).map(|(_, e)| (e, text.len()))
        } else {
            locs.get(gi)
        }
    }
}

pub struct Group {
    pub names: Vec<(usize, String)>, // capture index -> name
}

impl Group {
    fn of(r: &Rx) -> Group {
        Group { names: r.capture_names().into_iter().enumerate().filter_map(|(i, n)| n.map(|n| (i, n))).collect() }
    }
    pub fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().find(|(_, n)| n == name).map(|(i, _)| *i)
    }
}

pub struct Envelope {
    pub name: String,
    pub file_scope: bool,
    /// the whole regex (sniffing tests it on raw lines)
    pub regex: Rx,
    pub matcher: Matcher,
    pub first: FirstChars,
    pub literals: Vec<Finder<'static>>,
    pub deny: Vec<String>,
    pub rest: usize,
    /// (capture index, identity column, weak)
    pub ids: Vec<(usize, usize, bool)>,
    pub ts: Option<(usize, Layout)>,
    /// (capture index, kept column)
    pub kept: Vec<(usize, usize)>,
}

pub struct Pattern {
    pub key: String,
    pub format: usize,
    pub matcher: Matcher,
    pub first: FirstChars,
    /// ids (in Catalog::literals) of the literals one of which every match contains
    pub literal_ids: Option<Vec<usize>>,
    pub level: Option<usize>,
    pub message: Option<usize>,
    pub ts: Option<(usize, Layout)>,
    /// pattern has a ts spec but its field is no capture of the regex
    pub ids: Vec<(usize, usize)>, // (capture index, identity column)
    pub program: Option<crate::events::Shared>, // static program when no program capture
    pub kind: Option<usize>,
    /// identity columns (bits) whose captured value holds for the line's stream (stream.rs)
    pub stream: u16,
}

pub struct Block {
    pub key: String,
    pub format: usize,
    pub start: Rx,
    /// whether `start` has literals (then it is tried only where one occurs)
    pub has_literal: bool,
    pub cont: Rx,
    pub end: Option<Rx>,
    pub message_first: bool,
    pub max_lines: usize,
    pub kind: Option<usize>,
    pub program: Option<crate::events::Shared>,
    pub ts: Option<(Rx, usize, Layout)>,
}

pub struct Rule {
    pub regex: Rx,
    pub kind: usize,
    pub on: Option<String>,
    pub raw: bool,
    pub severity: Option<u8>,
    pub role: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
pub enum FType {
    Str,
    Int,
    Float,
}

pub struct Fact {
    pub table: usize,
    pub regex: Rx,
    pub on: Option<String>,
    pub multi: bool,
    /// None: reads the message; Some(kept column): an envelope's capture
    pub kept: Option<usize>,
    /// (capture index, column index in its table)
    pub cols: Vec<(usize, usize)>,
    /// (column index in table, identity column)
    pub identity: Vec<(usize, usize)>,
}

pub struct Table {
    pub name: String,
    pub cols: Vec<(String, FType)>,
}

pub struct Kind {
    pub name: String,
    pub role: String,
    pub severity: u8,
}

pub struct Format {
    pub name: String,
    pub levels: HashMap<String, u8>,
    pub rules: Vec<usize>,
    pub facts: Vec<usize>, // message facts of the format
    pub raw_rules: bool,
}

pub struct Catalog {
    pub identity: Vec<String>,
    pub int_identity: Vec<bool>,
    /// the identity columns that are not integers, in order: those of a line's class
    /// (classes.rs), which compares and hashes them for most lines
    pub text_identity: Vec<usize>,
    pub severities: Vec<String>,
    pub envelopes: Vec<Envelope>,
    pub kept_cols: Vec<String>,
    pub patterns: Vec<Pattern>,
    /// the literals of patterns and block starts, found in one pass over a body
    pub literals: Literals,
    /// the prefilter bits of each line's raw text (event_rows.marks)
    pub marks: crate::marks::Marks,
    /// the mark bits of a line's class and of the line tests (marks.rs: ClassMarks)
    pub class_marks: crate::marks::ClassMarks,
    /// first byte class (0..=128) of a body -> candidate patterns in precedence order
    pub by_first: Vec<Vec<usize>>,
    pub blocks: Vec<Block>,
    /// the literals of block starts (ids in `literals`), and for each the blocks it admits
    pub start_literals: Vec<(usize, Vec<usize>)>,
    pub rules: Vec<Rule>,
    pub facts: Vec<Fact>,
    pub env_facts: Vec<usize>,
    pub tables: Vec<Table>,
    pub kinds: Vec<Kind>,
    pub formats: Vec<Format>,
    /// pattern key -> (carried columns, ended columns)
    pub carry: HashMap<String, (Vec<usize>, Vec<usize>)>,
    /// `carry` by pattern index (`carry.get(&patterns[p].key)`): events::carry asks it of every
    /// event of every batch, and a string hash and lookup a line was ~2% of the engine's samples
    /// on the corpus node log, none of whose lines' patterns carries (perf, session 21)
    pub carry_of: Vec<Option<(Vec<usize>, Vec<usize>)>>,
    pub marker: Rx,
    /// index of the `program` identity column
    pub program_col: usize,
    /// u64 words of a line's block-start bits
    pub start_words: usize,
    /// the byte classes of line shapes (shape.rs)
    pub shapes: crate::shape::Shapes,
    /// the byte classes of message shapes (classify.rs)
    pub messages: crate::classify::MessageShapes,
    /// the identity tokens of parsers/identity.toml (identity.rs)
    pub tokens: crate::identity::Tokens,
    /// identity columns (bits) some token or pattern carries over its stream (stream.rs)
    pub stream_cols: u16,
}

impl Catalog {
    pub fn compile(spec: &CatalogSpec) -> Result<Catalog, String> {
        if spec.identity.len() > crate::peel::MAX_ID {
            return Err(format!("catalog spec: more than {} identity columns", crate::peel::MAX_ID));
        }
        let id_index = |name: &str| spec.identity.iter().position(|c| c == name);
        let severities = spec.severities.clone();
        let sev = |s: &str| severities.iter().position(|x| x == s).map(|i| i as u8);
        let mut kinds = Vec::new();
        let mut kind_ix = HashMap::default();
        for (k, v) in &spec.kinds {
            kind_ix.insert(k.clone(), kinds.len());
            kinds.push(Kind { name: k.clone(), role: v.role.clone(), severity: sev(&v.severity).unwrap_or(1) });
        }
        let kind_of = |k: &Option<String>| -> Result<Option<usize>, String> {
            match k {
                None => Ok(None),
                Some(k) => kind_ix.get(k).copied().map(Some).ok_or_else(|| format!("unknown kind {k:?}")),
            }
        };
        let mut formats: Vec<Format> = Vec::new();
        let mut format_ix: HashMap<String, usize> = HashMap::default();
        let mut format_of = |name: &str, formats: &mut Vec<Format>| -> usize {
            if let Some(&i) = format_ix.get(name) {
                return i;
            }
            let levels = spec
                .levels
                .get(name)
                .map(|m| m.iter().filter_map(|(l, s)| sev(s).map(|v| (l.clone(), v))).collect())
                .unwrap_or_default();
            formats.push(Format { name: name.to_string(), levels, rules: vec![], facts: vec![], raw_rules: false });
            format_ix.insert(name.to_string(), formats.len() - 1);
            formats.len() - 1
        };
        let mut kept_cols: Vec<String> = Vec::new();
        let mut envelopes = Vec::new();
        for e in &spec.envelopes {
            let regex = rx(&e.regex, &format!("envelope {}", e.name))?;
            let g = Matcher::new(&e.regex, &e.split, &format!("envelope {}", e.name))?;
            let rest = g.index("rest").ok_or_else(|| format!("envelope {}: no rest group", e.name))?;
            let ids = g
                .names()
                .iter()
                .filter_map(|(i, n)| id_index(n).map(|c| (*i, c, e.weak.contains(n))))
                .collect();
            let ts = match &e.ts {
                Some(t) => g.index(&t.field).map(|i| (i, Layout::new(t))),
                None => None,
            };
            let mut kept = Vec::new();
            for (cap, col) in &e.kept {
                if let Some(i) = g.index(cap) {
                    let ci = kept_cols.iter().position(|c| c == col).unwrap_or_else(|| {
                        kept_cols.push(col.clone());
                        kept_cols.len() - 1
                    });
                    kept.push((i, ci));
                }
            }
            envelopes.push(Envelope {
                name: e.name.clone(),
                file_scope: e.scope == "file",
                regex,
                matcher: g,
                first: FirstChars::new(&e.first),
                literals: e.literals.iter().flatten().map(|l| Finder::new(l.as_bytes()).into_owned()).collect(),
                deny: e.deny.clone(),
                rest,
                ids,
                ts,
                kept,
            });
        }
        let mut lits: Vec<String> = Vec::new();
        let mut patterns = Vec::new();
        let mut carry: HashMap<String, (Vec<usize>, Vec<usize>)> = HashMap::default();
        for p in &spec.patterns {
            let g = Matcher::new(&p.regex, &p.split, &format!("pattern {}", p.key))?;
            let literal_ids = p.literals.as_ref().map(|ls| ls.iter().map(|l| crate::literals::intern(&mut lits, l)).collect());
            let ids: Vec<(usize, usize)> =
                g.names().iter().filter_map(|(i, n)| id_index(n).map(|c| (*i, c))).collect();
            let has_program = g.index("program").is_some();
            let ts = match &p.ts {
                Some(t) => g.index(&t.field).map(|i| (i, Layout::new(t))),
                None => None,
            };
            if !p.carry.is_empty() || !p.end_carry.is_empty() {
                let cols = |v: &Vec<String>| v.iter().filter_map(|c| id_index(c)).collect::<Vec<_>>();
                carry.insert(p.key.clone(), (cols(&p.carry), cols(&p.end_carry)));
            }
            patterns.push(Pattern {
                key: p.key.clone(),
                format: format_of(&p.format, &mut formats),
                first: FirstChars::new(&p.first),
                literal_ids,
                level: g.index("level"),
                message: g.index("message"),
                ts,
                ids,
                program: if has_program { None } else { p.program.as_deref().map(crate::events::shared) },
                kind: kind_of(&p.kind)?,
                stream: p.stream.iter().try_fold(0u16, |m, c| {
                    id_index(c).map(|i| m | crate::identity::bit(i)).ok_or_else(|| format!("pattern {}: stream {c:?}", p.key))
                })?,
                matcher: g,
            });
        }
        let by_first = (0..129)
            .map(|c| (0..patterns.len()).filter(|&i| patterns[i].first.set().map_or(true, |t| t[c])).collect())
            .collect();
        let mut blocks = Vec::new();
        for b in &spec.blocks {
            let w = format!("block {}", b.key);
            let ts = match (&b.ts, &b.ts_regex) {
                (Some(t), Some(r)) => {
                    let re = rx(r, &w)?;
                    let i = Group::of(&re).index(&t.field).ok_or_else(|| format!("{w}: ts group missing"))?;
                    Some((re, i, Layout::new(t)))
                }
                _ => None,
            };
            blocks.push(Block {
                key: b.key.clone(),
                format: format_of(&b.format, &mut formats),
                start: rx(&b.start, &w)?,
                has_literal: b.start_literals.as_ref().map_or(false, |l| !l.is_empty()),
                cont: rx(&b.cont, &w)?,
                end: b.end.as_ref().map(|e| rx(e, &w)).transpose()?,
                message_first: b.message == "first",
                max_lines: b.max_lines,
                kind: kind_of(&b.kind)?,
                program: b.program.as_deref().map(crate::events::shared),
                ts,
            });
        }
        let mut start_literals: Vec<(usize, Vec<usize>)> = Vec::new();
        for (bi, b) in spec.blocks.iter().enumerate() {
            for l in b.start_literals.iter().flatten() {
                let id = crate::literals::intern(&mut lits, l);
                match start_literals.iter_mut().find(|(i, _)| *i == id) {
                    Some((_, bs)) => bs.push(bi),
                    None => start_literals.push((id, vec![bi])),
                }
            }
        }
        let literals = Literals::new(&lits)?;
        let mut rules = Vec::new();
        for r in &spec.rules {
            let f = format_of(&r.format, &mut formats);
            let raw = r.field == "raw";
            formats[f].rules.push(rules.len());
            formats[f].raw_rules |= raw;
            rules.push(Rule {
                regex: rx(&r.regex, &format!("rule of {}", r.format))?,
                kind: kind_of(&Some(r.kind.clone()))?.unwrap(),
                on: r.on.as_ref().map(|o| format!("{}.{}", r.format, o)),
                raw,
                severity: r.severity.as_deref().and_then(sev),
                role: r.role.clone(),
            });
        }
        let mut tables: Vec<Table> = Vec::new();
        for (name, cols) in &spec.fact_tables {
            tables.push(Table {
                name: name.clone(),
                cols: cols
                    .iter()
                    .map(|(c, t)| {
                        (c.clone(), match t.as_str() {
                            "int" => FType::Int,
                            "float" => FType::Float,
                            _ => FType::Str,
                        })
                    })
                    .collect(),
            });
        }
        let mut facts = Vec::new();
        let mut env_facts = Vec::new();
        for f in &spec.facts {
            let w = format!("fact {} of {}", f.table, f.format);
            let regex = Rx::new(&f.regex, f.multi, &w)?;
            let t = tables.iter().position(|t| t.name == f.table).ok_or_else(|| format!("{w}: no table"))?;
            let g = Group::of(&regex);
            let cols: Vec<(usize, usize)> = g
                .names
                .iter()
                .filter_map(|(i, n)| tables[t].cols.iter().position(|(c, _)| c == n).map(|ci| (*i, ci)))
                .collect();
            let identity = f
                .identity
                .iter()
                .filter_map(|c| {
                    let ci = tables[t].cols.iter().position(|(n, _)| n == c)?;
                    Some((ci, id_index(c)?))
                })
                .collect();
            let kept = if f.field == "message" {
                None
            } else {
                Some(kept_cols.iter().position(|c| *c == f.field).ok_or_else(|| format!("{w}: field {}", f.field))?)
            };
            let idx = facts.len();
            if kept.is_some() {
                env_facts.push(idx);
            } else {
                let fi = format_of(&f.format, &mut formats);
                formats[fi].facts.push(idx);
            }
            facts.push(Fact {
                table: t,
                regex,
                on: f.on.as_ref().map(|o| format!("{}.{}", f.format, o)),
                multi: f.multi,
                kept,
                cols,
                identity,
            });
        }
        let int_identity: Vec<bool> = spec.identity.iter().map(|c| spec.int_identity.contains(c)).collect();
        let text_identity = (0..int_identity.len()).filter(|&c| !int_identity[c]).collect();
        let tokens = crate::identity::Tokens::compile(spec, &tables)?;
        let stream_cols = tokens.list.iter().map(|t| t.stream).chain(patterns.iter().map(|p| p.stream)).fold(0, |a, b| a | b);
        let start_words = blocks.len().div_ceil(64).max(1);
        let carry_of = patterns.iter().map(|p: &Pattern| carry.get(&p.key).cloned()).collect();
        let mut cat = Catalog {
            identity: spec.identity.clone(),
            int_identity,
            text_identity,
            severities,
            envelopes,
            kept_cols,
            literals,
            marks: crate::marks::Marks::new(&spec.marks)?,
            class_marks: crate::marks::ClassMarks::new(
                &spec.mark_classes,
                &kinds.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(),
                &formats.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
            )?,
            by_first,
            patterns,
            blocks,
            start_literals,
            rules,
            facts,
            env_facts,
            tables,
            kinds,
            formats,
            carry_of,
            carry,
            marker: rx(r"^\s*[\^~ ]*$", "marker")?,
            program_col: spec.identity.iter().position(|c| c == "program").ok_or("catalog spec: no program column")?,
            start_words,
            shapes: Default::default(),
            messages: Default::default(),
            tokens,
            stream_cols,
        };
        cat.shapes = crate::shape::shapes(&cat)?;
        cat.messages = crate::classify::message_shapes(&cat)?;
        Ok(cat)
    }

    pub fn format_index(&self, name: &str) -> Option<usize> {
        self.formats.iter().position(|f| f.name == name)
    }
}
