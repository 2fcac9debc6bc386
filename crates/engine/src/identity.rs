//! identity: the catalogue of identity tokens (parsers/identity.toml).
//!
//! Every token is matched anywhere in a line's body (the line less its
//! peeled envelopes: the format's own prefix and the message); a token's
//! captures named like identity columns (rank, host, pid, pod, gpu, ...)
//! fill the columns the line left empty once its format and facts have
//! spoken (classify.rs), the first token in catalogue order winning a
//! column. Where the tokens match is worked out once per line shape
//! (shape.rs: the tokens' byte classes are part of the shape's classes, and
//! a token that tells digits apart is asked again of each line, like a
//! pattern that does), so a line of a shape met before costs nothing here;
//! a block event takes the hits of its first and its message line. Each
//! fill is a row of the found table (which token, on which event, what it
//! filled), so the store says where a value came from.

use crate::classify::{FactRow, Val};
use crate::compile::{Catalog, FType};
use crate::events::{Event, Id};
use crate::literals::Literals;
use crate::rx::{Locs, Rx};
use crate::spec::CatalogSpec;
use std::sync::Arc;

pub struct Token {
    pub id: String,
    pub regex: Rx,
    /// (capture index, identity column)
    pub cols: Vec<(usize, usize)>,
    /// identity columns (bits) whose value holds for the line's stream (stream.rs)
    pub stream: u16,
    /// identity columns (bits) no later token fills once this one matched
    pub blocks: u16,
    /// identity columns (bits) recorded in the found table only (the line was written elsewhere)
    pub links: u16,
    /// ids (in `Tokens::literals`) one of which every match contains; None: always tried
    pub literals: Option<Vec<usize>>,
}

/// Where the found table keeps a token's hit: its table and column indices.
pub struct Found {
    pub table: usize,
    pub token: usize,
    pub stream: usize,
    /// identity column -> column of the table
    pub cols: Vec<Option<usize>>,
}

#[derive(Default)]
pub struct Tokens {
    pub list: Vec<Token>,
    pub literals: Option<Literals>,
    /// (identity column, regex): values that name nobody
    pub rejects: Vec<(usize, Rx)>,
    pub found: Option<Found>,
}

#[inline]
pub fn bit(col: usize) -> u16 {
    1 << col
}

impl Tokens {
    pub fn compile(spec: &CatalogSpec, tables: &[crate::compile::Table]) -> Result<Tokens, String> {
        let id_index = |name: &str| spec.identity.iter().position(|c| c == name);
        let mask = |cols: &[String], what: &str| -> Result<u16, String> {
            cols.iter().try_fold(0u16, |m, c| Ok(m | bit(id_index(c).ok_or_else(|| format!("{what}: {c:?} is no identity column"))?)))
        };
        let mut lits: Vec<String> = Vec::new();
        let mut list = Vec::new();
        for t in &spec.tokens {
            let what = format!("identity token {}", t.id);
            let regex = Rx::new(&t.regex, false, &what)?;
            let cols: Vec<(usize, usize)> = regex
                .capture_names()
                .iter()
                .enumerate()
                .filter_map(|(i, n)| n.as_deref().and_then(id_index).map(|c| (i, c)))
                .collect();
            let literals = t.literals.as_ref().map(|ls| ls.iter().map(|l| crate::literals::intern(&mut lits, l)).collect());
            list.push(Token {
                id: t.id.clone(),
                stream: mask(&t.stream, &what)?,
                blocks: mask(&t.blocks, &what)?,
                links: mask(&t.links, &what)?,
                regex,
                cols,
                literals,
            });
        }
        let rejects = spec
            .rejects
            .iter()
            .map(|(c, r)| {
                let col = id_index(c).ok_or_else(|| format!("identity reject: {c:?} is no identity column"))?;
                Ok((col, Rx::new(r, false, &format!("identity reject of {c}"))?))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let found = match &spec.found_table {
            None => None,
            Some(name) => {
                let table = tables.iter().position(|t| &t.name == name).ok_or_else(|| format!("found table {name}: not a fact table"))?;
                let col = |n: &str| tables[table].cols.iter().position(|(c, _)| c == n);
                Some(Found {
                    table,
                    token: col("token").ok_or("found table: no token column")?,
                    stream: col("stream").ok_or("found table: no stream column")?,
                    cols: spec.identity.iter().map(|c| col(c)).collect(),
                })
            }
        };
        let literals = if lits.is_empty() { None } else { Some(Literals::new(&lits)?) };
        Ok(Tokens { list, literals, rejects, found })
    }

    /// Whether `text` (a value for column `col`) names nobody.
    fn rejected(&self, col: usize, text: &str, ascii: bool) -> bool {
        self.rejects.iter().any(|(c, rx)| *c == col && rx.is_match(text, ascii))
    }

    /// `rejected`, answered from `memo` when column `col` was last asked of the same text.
    fn rejected_memo(&self, memo: &mut Rejected, col: usize, text: &str, ascii: bool) -> bool {
        if !self.rejects.iter().any(|(c, _)| *c == col) {
            return false;
        }
        if memo.last.len() <= col {
            memo.last.resize_with(col + 1, || None);
        }
        let slot = &mut memo.last[col];
        if let Some((t, a, answer)) = slot {
            if *a == ascii && t.as_bytes() == text.as_bytes() {
                return *answer;
            }
        }
        let answer = self.rejected(col, text, ascii);
        match slot {
            Some((t, a, an)) => {
                t.clear();
                t.push_str(text);
                (*a, *an) = (ascii, answer);
            }
            None => *slot = Some((text.to_string(), ascii, answer)),
        }
        answer
    }
}

/// The last value each identity column's rejects were asked of, with the answer (`apply`): a
/// line's token values mostly repeat the line before's (its host, its rank, its pid), and a
/// reject is a regex run (~310 instructions a value on the corpus node log, where it ran on
/// 48 k of 56 k lines; callgrind, session 13). `rejected` is a pure function of the column,
/// the text and whether the line is ASCII, so the memo answers as the regex does.
#[derive(Default)]
pub struct Rejected {
    last: Vec<Option<(String, bool, bool)>>,
}

/// A token that matched a line's body: every group's span in the body.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub token: u16,
    pub spans: Box<[Option<(u32, u32)>]>,
}

/// The found table's row of a hit: the token and what it captured, typed.
fn found_row(cat: &Catalog, ti: usize, text: &str, spans: &[Option<(u32, u32)>]) -> Option<Arc<[Val]>> {
    let found = cat.tokens.found.as_ref()?;
    let table = &cat.tables[found.table];
    let mut values = vec![Val::Null; table.cols.len()];
    values[found.token] = Val::Str(cat.tokens.list[ti].id.clone());
    for &(gi, col) in &cat.tokens.list[ti].cols {
        if let (Some(tc), Some((a, b))) = (found.cols[col], spans[gi]) {
            let v = &text[a as usize..b as usize];
            values[tc] = match table.cols[tc].1 {
                FType::Int => v.parse::<i64>().map(Val::Int).unwrap_or(Val::Null),
                FType::Float => v.parse::<f64>().map(Val::Float).unwrap_or(Val::Null),
                FType::Str => Val::Str(v.to_string()),
            };
        }
    }
    Some(values.into())
}

/// The hits on `text` of every token but those that tell digits apart
/// (`skip`: asked of each line, shape.rs); `found`: scratch for the literals.
pub fn hits(cat: &Catalog, text: &str, ascii: bool, locs: &mut [Locs], found: &mut Vec<u64>, skip: &[bool]) -> Vec<Hit> {
    let toks = &cat.tokens;
    let mut scanned = false;
    let mut out = Vec::new();
    for (ti, t) in toks.list.iter().enumerate() {
        if skip[ti] {
            continue;
        }
        if let (Some(ids), Some(l)) = (&t.literals, &toks.literals) {
            if !scanned {
                found.clear();
                found.resize(l.words, 0);
                l.scan(text, found);
                scanned = true;
            }
            if !ids.iter().any(|&i| crate::literals::has(found, i)) {
                continue;
            }
        }
        if let Some(spans) = read(t, text, ascii, &mut locs[ti]) {
            out.push(Hit { token: ti as u16, spans });
        }
    }
    out
}

/// Token `t` read on `m`: every group's span (None: no match).
pub fn read(t: &Token, m: &str, ascii: bool, locs: &mut Locs) -> Option<Box<[Option<(u32, u32)>]>> {
    if !t.regex.read(locs, m, ascii) {
        return None;
    }
    Some((0..t.regex.captures_len()).map(|g| locs.get(g).map(|(a, b)| (a as u32, b as u32))).collect())
}

/// Fills event `e`'s empty (or path-hinted) identity columns from `hits`
/// (spans from byte `at` of its raw text), first token first; a fill's row
/// goes into `rows`.
pub fn apply(cat: &Catalog, e: &mut Event, ei: usize, at: u32, hits: &[Hit], rows: &mut Vec<FactRow>, memo: &mut Rejected) {
    let toks = &cat.tokens;
    let (mut blocked, mut filled) = (e.blocked, 0u16);
    for h in hits {
        let t = &toks.list[h.token as usize];
        let (mut mine, mut linked, mut named) = (0u16, 0u16, 0u16);
        for &(gi, col) in &t.cols {
            let Some((a, b)) = h.spans[gi] else { continue };
            if toks.rejected_memo(memo, col, &e.raw[(at + a) as usize..(at + b) as usize], e.ascii) {
                continue; // names nobody: not on the line, not in a link
            }
            named |= bit(col);
            if t.links & bit(col) != 0 {
                linked |= bit(col);
                continue;
            }
            if (blocked | filled) & bit(col) != 0 {
                continue;
            }
            if t.stream & bit(col) != 0 && e.stream_src & bit(col) == 0 {
                // (the line's pattern, when it names the stream's value, stays its basis)
                e.stream_src |= bit(col);
                e.stream_via = h.token + 1;
            }
            if !(e.ids[col].is_none() || e.hinted & bit(col) != 0) {
                continue;
            }
            let (a, b) = (at + a, at + b);
            let v = if cat.int_identity[col] { Id::int_of(Some(&e.raw[a as usize..b as usize]), true) } else { Id::Span(a, b) };
            if v.is_none() {
                continue;
            }
            e.ids[col] = v;
            e.hinted &= !bit(col);
            mine |= bit(col);
        }
        filled |= mine;
        blocked |= t.blocks;
        // what the line took from the token; with a link, everything it captured (both ends of it)
        let kept = if linked != 0 { named } else { mine };
        if kept != 0 {
            if let Some(found) = &toks.found {
                let spans: Vec<Option<(u32, u32)>> = h
                    .spans
                    .iter()
                    .enumerate()
                    .map(|(gi, s)| s.filter(|_| t.cols.iter().any(|&(g, c)| g == gi && kept & bit(c) != 0)))
                    .collect();
                if let Some(values) = found_row(cat, h.token as usize, &e.raw[at as usize..], &spans) {
                    rows.push(FactRow { table: found.table, event: ei, values });
                }
            }
        }
    }
    // a block's second line (its message) reads on after its first: what the first blocked stays so
    e.blocked = blocked;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejected_memo_answers_as_the_rejects() {
        let spec = r#"{"identity": ["host", "rank", "pid", "program"], "int_identity": ["rank", "pid"],
            "severities": ["debug", "info"], "envelopes": [],
            "patterns": [{"key": "f.any", "format": "f", "regex": "^(?P<message>.*)$", "first": null, "literals": null,
                          "ts": null, "kind": null, "program": null, "split": null}],
            "blocks": [], "rules": [], "facts": [], "fact_tables": {}, "kinds": {}, "levels": {},
            "tokens": [{"id": "pid", "regex": "pid=(?P<pid>\\d+)", "literals": ["pid="]}],
            "rejects": [["pid", "^0+$"], ["host", "^(localhost|é)$"], ["host", "^none$"]], "found_table": null}"#;
        let cat = Catalog::compile(&crate::CatalogSpec::from_json(spec).unwrap()).unwrap();
        let toks = &cat.tokens;
        let mut memo = Rejected::default();
        let asks = [(2, "0", true), (2, "0", true), (2, "00", true), (2, "1", true), (2, "1", false), (2, "0", true),
                    (0, "localhost", true), (0, "localhost", true), (0, "node1", true), (0, "none", true), (0, "none", false),
                    (0, "é", false), (0, "é", false), (0, "node1", true), (1, "0", true), (1, "0", true), (2, "0", false)];
        for (col, text, ascii) in asks {
            assert_eq!(toks.rejected_memo(&mut memo, col, text, ascii), toks.rejected(col, text, ascii), "{col} {text:?} {ascii}");
        }
        assert!(toks.rejected(2, "0", true) && toks.rejected(0, "none", true) && !toks.rejected(1, "0", true));
    }
}
