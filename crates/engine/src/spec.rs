//! The compiled catalog as the Python loader hands it over (JSON).
//!
//! `ranktrace.formats` stays the one validator of parsers/*.toml; it derives
//! precedence, first characters and required literals, and serialises the
//! result with `ranktrace.ingest.core.spec_json`. Nothing here re-derives them.

use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Deserialize)]
pub struct TimeSpec {
    pub field: String,
    pub layout: String,
    pub zone: String, // utc | offset | naive
    pub year: String, // given | infer
    /// own | collector: whose clock wrote the time (a collector's: another host's, perhaps)
    #[serde(default)]
    pub clock: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EnvelopeSpec {
    pub name: String,
    pub regex: String,
    pub scope: String, // line | file
    pub ts: Option<TimeSpec>,
    /// Characters a match can start with ("\u{80}" stands for any non-ASCII); None: any.
    pub first: Option<String>,
    /// One of these occurs in every line the regex matches; None: no such literal.
    pub literals: Option<Vec<String>>,
    #[serde(default)]
    pub deny: Vec<String>,
    #[serde(default)]
    pub weak: Vec<String>,
    /// capture -> name of the column that keeps it for the envelope's facts.
    #[serde(default)]
    pub kept: BTreeMap<String, String>,
    /// The regex without its rest-of-line tail (see Split).
    pub split: Option<Split>,
}

/// `^P(?P<g>.*)$` is matched as `^(?P<__pre>P)`: the group is the text after
/// the prefix (capture engines pay per character spanned, and a message
/// spans most of the line). `group` None: a bare `.*$` tail.
#[derive(Debug, Clone, Deserialize)]
pub struct Split {
    pub prefix: String,
    pub group: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PatternSpec {
    pub key: String,
    pub format: String,
    pub regex: String,
    pub first: Option<String>,
    pub literals: Option<Vec<String>>,
    pub ts: Option<TimeSpec>,
    pub kind: Option<String>,
    #[serde(default)]
    pub carry: Vec<String>,
    #[serde(default)]
    pub end_carry: Vec<String>,
    pub program: Option<String>,
    pub split: Option<Split>,
    /// identity columns whose captured value holds for the line's whole stream (stream.rs)
    #[serde(default)]
    pub stream: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct BlockSpec {
    pub key: String,
    pub format: String,
    pub start: String,
    /// one of these occurs in every line `start` matches; None: no such literal
    pub start_literals: Option<Vec<String>>,
    pub cont: String,
    pub end: Option<String>,
    pub message: String, // first | last
    pub max_lines: usize,
    pub kind: Option<String>,
    pub program: Option<String>,
    pub ts: Option<TimeSpec>,
    pub ts_regex: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RuleSpec {
    pub format: String,
    pub regex: String,
    pub kind: String,
    /// pattern or block key the rule is limited to.
    pub on: Option<String>,
    pub field: String, // message | raw
    pub severity: Option<String>,
    pub role: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FactSpec {
    pub format: String,
    pub table: String,
    pub regex: String,
    pub on: Option<String>,
    #[serde(default)]
    pub types: BTreeMap<String, String>,
    #[serde(default)]
    pub identity: Vec<String>,
    #[serde(default)]
    pub multi: bool,
    /// "message", or the kept column of an envelope capture.
    pub field: String,
}

/// An identity token of parsers/identity.toml: a regex matched anywhere in a
/// claimed line's message (or a raw line's body) whose captures named like
/// identity columns fill the columns the line left empty (identity.rs).
#[derive(Debug, Clone, Deserialize)]
pub struct TokenSpec {
    pub id: String,
    pub regex: String,
    /// columns whose value names the line's emitter: it holds for its whole stream
    #[serde(default)]
    pub stream: Vec<String>,
    /// columns no later token may fill once this one matched (a group rank is no global rank)
    #[serde(default)]
    pub blocks: Vec<String>,
    /// columns kept in the found table only, not put on the line (it was written elsewhere)
    #[serde(default)]
    pub links: Vec<String>,
    /// one of these occurs in every text the regex matches; None: no such literal
    pub literals: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct KindSpec {
    pub role: String,
    pub severity: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CatalogSpec {
    pub identity: Vec<String>,
    pub int_identity: Vec<String>,
    pub severities: Vec<String>,
    pub envelopes: Vec<EnvelopeSpec>,
    pub patterns: Vec<PatternSpec>,
    pub blocks: Vec<BlockSpec>,
    pub rules: Vec<RuleSpec>,
    pub facts: Vec<FactSpec>,
    /// table -> [(column, type)] in declaration order.
    pub fact_tables: BTreeMap<String, Vec<(String, String)>>,
    pub kinds: BTreeMap<String, KindSpec>,
    pub levels: BTreeMap<String, BTreeMap<String, String>>,
    /// parsers/marks.toml: the literals of each mark bit (marks.rs)
    #[serde(default)]
    pub marks: Vec<Vec<String>>,
    /// parsers/marks.toml: the marks a line's class or a line test sets (marks.rs: ClassMarks)
    #[serde(default)]
    pub mark_classes: Vec<MarkClassSpec>,
    /// parsers/identity.toml: the identity tokens, in priority order
    #[serde(default)]
    pub tokens: Vec<TokenSpec>,
    /// (column, regex): values of the column that name nobody (pid 0); never filled
    #[serde(default)]
    pub rejects: Vec<(String, String)>,
    /// the fact table that records where the identity layer's values come from
    #[serde(default)]
    pub found_table: Option<String>,
}

/// A mark set by a line's class (any of its role, kind, kind prefix or format) or by the
/// engine's named line tests (marks.rs: `report_entry`, summary.rs: `pods_row`).
#[derive(Deserialize, Debug, Clone, Default)]
pub struct MarkClassSpec {
    pub bit: u32,
    #[serde(default)]
    pub roles: Vec<String>,
    #[serde(default)]
    pub kinds: Vec<String>,
    #[serde(default)]
    pub kind_prefixes: Vec<String>,
    #[serde(default)]
    pub formats: Vec<String>,
    #[serde(default)]
    pub lines: Vec<String>,
}

impl CatalogSpec {
    pub fn from_json(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| format!("catalog spec: {e}"))
    }
}
