//! classify + facts: kind, severity and role from the format's rules (first
//! match wins, in file order), typed facts from messages. Logs repeat
//! themselves: both are worked out once per distinct (source, message) and
//! reused for every event that carries it.

use crate::compile::{Catalog, FType};
use crate::events::{Event, Id, Src};
use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

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
    /// shared by the events whose message repeats
    pub values: Rc<[Val]>,
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

/// (rule index) of the first rule of the format that matches.
fn first_rule(cat: &Catalog, f: usize, key: Option<&str>, message: &str, raw: &str, ascii: bool) -> Option<usize> {
    cat.formats[f].rules.iter().copied().find(|&ri| {
        let r = &cat.rules[ri];
        (r.on.is_none() || r.on.as_deref() == key) && r.regex.is_match(if r.raw { raw } else { message }, ascii)
    })
}

pub fn classify<'c>(cat: &'c Catalog, events: &[Event]) -> Vec<Class<'c>> {
    let info = cat.severities.iter().position(|s| s == "info").unwrap_or(1) as u8;
    let mut cache: HashMap<(Src, &str), Option<usize>> = HashMap::default();
    events
        .iter()
        .map(|e| {
            let f = format_of(cat, e.src);
            let rule = match f {
                None => None,
                Some(f) if cat.formats[f].raw_rules => first_rule(cat, f, src_key(cat, e.src), e.message(), &e.raw, e.ascii),
                Some(f) => *cache
                    .entry((e.src, e.message()))
                    .or_insert_with(|| first_rule(cat, f, src_key(cat, e.src), e.message(), &e.raw, e.ascii)),
            };
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
        })
        .collect()
}

fn typed(text: Option<&str>, t: FType) -> Val {
    match text {
        None => Val::Null,
        Some(s) => match t {
            FType::Str => Val::Str(s.to_string()),
            FType::Int => s.replace(',', "").parse::<i64>().map(Val::Int).unwrap_or(Val::Null),
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

/// Fact rows of the events, and identity filled from facts (`identity = [...]`)
/// where the event has none: the first such fact of the catalog wins.
pub fn facts(cat: &Catalog, events: &mut [Event]) -> Vec<FactRow> {
    let mut out = Vec::new();
    // (src, message) -> index in `memo_rows`: for each fact of the format,
    // the values a message fact captured (None: not applicable, multi, no match)
    let mut memo: HashMap<(Src, &str), usize> = HashMap::default();
    let mut memo_rows: Vec<Vec<Option<Rc<[Val]>>>> = Vec::new();
    let mut fills: Vec<(usize, usize, usize)> = Vec::new(); // (event, fact, row)
    let mut locs: Vec<crate::rx::Locs> = cat.facts.iter().map(|f| f.regex.locations()).collect();
    for (ei, e) in events.iter().enumerate() {
        if !e.kept.is_empty() {
            for &fi in &cat.env_facts {
                let col = cat.facts[fi].kept.unwrap();
                if let Some(&(_, s)) = e.kept.iter().find(|(c, _)| *c == col) {
                    let text = e.span(s);
                    if cat.facts[fi].regex.read(&mut locs[fi], text, e.ascii) {
                        let l = &locs[fi];
                        out.push(row(cat, fi, text, |g| l.get(g), ei));
                    }
                }
            }
        }
        let f = match format_of(cat, e.src) {
            Some(f) => f,
            None => continue,
        };
        let key = src_key(cat, e.src);
        let list = &cat.formats[f].facts;
        if list.is_empty() {
            continue;
        }
        let applies = |fi: usize| cat.facts[fi].on.is_none() || cat.facts[fi].on.as_deref() == key;
        let at = *memo.entry((e.src, e.message())).or_insert_with(|| {
            let m = e.message();
            let vals = list
                .iter()
                .map(|&fi| {
                    let fact = &cat.facts[fi];
                    if fact.multi || !applies(fi) || !fact.regex.read(&mut locs[fi], m, e.ascii) {
                        return None;
                    }
                    let l = &locs[fi];
                    Some(row(cat, fi, m, |g| l.get(g), 0).values)
                })
                .collect();
            memo_rows.push(vals);
            memo_rows.len() - 1
        });
        for (k, &fi) in list.iter().enumerate() {
            let fact = &cat.facts[fi];
            if !applies(fi) {
                continue;
            }
            if fact.multi {
                for c in fact.regex.all_captures(&e.raw, e.ascii) {
                    out.push(row(cat, fi, &e.raw, |g| c.get(g).copied().flatten(), ei));
                }
                continue;
            }
            if let Some(values) = &memo_rows[at][k] {
                if !fact.identity.is_empty() {
                    fills.push((ei, fi, out.len()));
                }
                out.push(FactRow { table: fact.table, event: ei, values: values.clone() });
            }
        }
    }
    drop(memo);
    for (ei, fi, ri) in fills {
        for &(ci, col) in &cat.facts[fi].identity {
            if events[ei].ids[col].is_none() {
                let v = val_text(&out[ri].values[ci]);
                events[ei].ids[col] = if cat.int_identity[col] {
                    Id::int_of(v.as_deref(), false)
                } else {
                    v.map_or(Id::None, |t| Id::Text(t.into()))
                };
            }
        }
    }
    out
}
