//! marks: a bit per mark of parsers/marks.toml, set when a line's raw text
//! contains one of the mark's literals (ASCII case-folded), and every bit on a
//! line that is not ASCII. Queries test a mark before their text tests
//! (`has_mark(marks, 'hot') AND ...`), so it must be a superset: folding case
//! and marking non-ASCII lines whole keep it one whatever LIKE, ILIKE or a
//! regexp would make of the text.
//!
//! A mark may also be set by a line's class (`ClassMarks`: its role, kind or
//! format, decided once per class by out.rs) and by a named line test the
//! engine runs (`report_entry` here, `pods_row` in summary.rs: the terms of
//! queries/align/hot_events.sql that have no literal). With them, every line
//! queries/align/hot_ids.sql takes is marked, and its scan decodes the text of
//! the marked lines only.

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

#[derive(Default)]
pub struct Marks {
    /// all the literals, each found anywhere (overlapping: a literal inside another is not missed)
    ac: Option<AhoCorasick>,
    /// the bit of each literal of `ac`
    bit_of: Vec<i32>,
    /// every bit (a non-ASCII line's)
    all: i32,
    /// the bits of the literals (a line that has them all has no more to find)
    all_literal: i32,
    /// the literals of `ac`, in order
    literals: Vec<String>,
}

impl Marks {
    pub fn new(marks: &[Vec<String>]) -> Result<Marks, String> {
        if marks.len() > 31 {
            return Err(format!("marks: {} marks, the column holds 31", marks.len()));
        }
        let mut lits: Vec<String> = Vec::new();
        let mut bit_of = Vec::new();
        for (bit, ls) in marks.iter().enumerate() {
            for l in ls {
                if l.is_empty() || !l.is_ascii() {
                    return Err(format!("marks: literal {l:?} of mark {bit} must be non-empty ASCII"));
                }
                lits.push(l.clone());
                bit_of.push(1 << bit);
            }
        }
        // (every mark's bit, those of no literal too: a non-ASCII line is marked whole)
        let all = ((1i64 << marks.len()) - 1) as i32;
        let all_literal = bit_of.iter().fold(0, |a, b| a | b);
        if lits.is_empty() {
            return Ok(Marks { ac: None, bit_of, all, all_literal, literals: lits });
        }
        let ac = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&lits)
            .map_err(|e| format!("marks: {e}"))?;
        Ok(Marks { ac: Some(ac), bit_of, all, all_literal, literals: lits })
    }

    /// Every mark's literals (shape.rs splits the byte classes by them).
    pub fn literals(&self) -> &[String] {
        &self.literals
    }

    /// The bits of a line whose raw text is `raw` (`ascii`: whether it is all ASCII).
    #[inline]
    pub fn of(&self, raw: &str, ascii: bool) -> i32 {
        let ac = match &self.ac {
            Some(ac) => ac,
            None => return 0,
        };
        if !ascii {
            return self.all;
        }
        let mut bits = 0;
        for m in ac.find_overlapping_iter(raw) {
            bits |= self.bit_of[m.pattern().as_usize()];
            if bits == self.all_literal {
                break;
            }
        }
        bits
    }
}

/// The marks set by a line's class or by a line test (parsers/marks.toml: roles, kinds,
/// kind_prefixes, formats, lines).
#[derive(Default)]
pub struct ClassMarks {
    /// per kind of the catalog (by index)
    kind: Vec<i32>,
    /// per format of the catalog (by index)
    format: Vec<i32>,
    roles: Vec<(String, i32)>,
    /// the bits `report_entry` sets
    pub report_entry: i32,
    /// the bits a `pods_row` message sets (summary.rs)
    pub pods_row: i32,
}

impl ClassMarks {
    /// `kinds`, `formats`: the catalog's names, by index. Names the catalog does not have are
    /// left out (a user's catalog may lack a kind).
    pub fn new(spec: &[crate::spec::MarkClassSpec], kinds: &[&str], formats: &[&str]) -> Result<ClassMarks, String> {
        let mut m = ClassMarks { kind: vec![0; kinds.len()], format: vec![0; formats.len()], ..Default::default() };
        for c in spec {
            if c.bit > 30 {
                return Err(format!("marks: bit {} of a class mark; the column holds 31", c.bit));
            }
            let bit = 1 << c.bit;
            for (i, k) in kinds.iter().enumerate() {
                if c.kinds.iter().any(|n| n == k) || c.kind_prefixes.iter().any(|p| k.starts_with(p.as_str())) {
                    m.kind[i] |= bit;
                }
            }
            for (i, f) in formats.iter().enumerate() {
                if c.formats.iter().any(|n| n == f) {
                    m.format[i] |= bit;
                }
            }
            for r in &c.roles {
                match m.roles.iter_mut().find(|(n, _)| n == r) {
                    Some((_, b)) => *b |= bit,
                    None => m.roles.push((r.clone(), bit)),
                }
            }
            for t in &c.lines {
                match t.as_str() {
                    "report_entry" => m.report_entry |= bit,
                    "pods_row" => m.pods_row |= bit,
                    other => return Err(format!("marks: unknown line test {other:?} (report_entry, pods_row)")),
                }
            }
        }
        Ok(m)
    }

    /// The bits of a class: its kind, format (indices) and role.
    pub fn of_class(&self, kind: Option<usize>, format: Option<usize>, role: &str) -> i32 {
        let mut bits = kind.map_or(0, |k| self.kind[k]) | format.map_or(0, |f| self.format[f]);
        for (r, b) in &self.roles {
            if r == role {
                bits |= b;
            }
        }
        bits
    }

    /// The line-test bits of a line: `report_entry` on its raw text (`pods_row`: its message's
    /// summary tests, `pods_row` given).
    #[inline]
    pub fn of_line(&self, raw: &str, pods_row: bool) -> i32 {
        let mut bits = 0;
        if self.report_entry != 0 && report_entry(raw.as_bytes()) {
            bits |= self.report_entry;
        }
        if pods_row {
            bits |= self.pods_row;
        }
        bits
    }
}

/// RE2's `\s`: ASCII whitespace but the vertical tab.
#[inline]
fn space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0C | b'\r')
}

/// A line of torchrun's Root Cause / Failures entries, read line by line: exactly
/// queries/align/hot_events.sql's `ascii(raw) IN (116, 104, 114, 101, 32, 9, 10, 12, 13) AND NOT
/// contains(raw, chr(10)) AND regexp_matches(raw, '^\s*(time|host|rank|exitcode)\s*:')` (its first
/// byte tells most lines apart: no regex).
#[inline]
pub fn report_entry(raw: &[u8]) -> bool {
    let mut i = 0;
    while i < raw.len() && space(raw[i]) {
        i += 1;
    }
    let rest = &raw[i..];
    let n = match rest.first() {
        Some(b't') if rest.starts_with(b"time") => 4,
        Some(b'h') if rest.starts_with(b"host") => 4,
        Some(b'r') if rest.starts_with(b"rank") => 4,
        Some(b'e') if rest.starts_with(b"exitcode") => 8,
        _ => return false,
    };
    let mut j = i + n;
    while j < raw.len() && space(raw[j]) {
        j += 1;
    }
    j < raw.len() && raw[j] == b':' && memchr::memchr(b'\n', raw).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks() -> Marks {
        Marks::new(&[vec!["SeqNum=".into(), "nodes".into()], vec!["ranks=[".into()]]).unwrap()
    }

    #[test]
    fn literals_anywhere_in_any_ascii_case() {
        let m = marks();
        assert_eq!(m.of("[rank3]: WorkNCCL(seqnum=12, OpType=ALLREDUCE)", true), 1);
        assert_eq!(m.of("max_NODES=4 local_ranks=[0, 1]", true), 3);
        assert_eq!(m.of("global_ranks=[2, 3]", true), 2);
        assert_eq!(m.of("NCCL INFO Channel 00/0 : 0 -> 1 via P2P/IPC", true), 0);
    }

    #[test]
    fn a_literal_inside_another_match_is_found() {
        // a leftmost search would report `abcd` alone
        let m = Marks::new(&[vec!["abcd".into()], vec!["bc".into()]]).unwrap();
        assert_eq!(m.of("zabcdz", true), 3);
    }

    #[test]
    fn non_ascii_lines_are_marked_whole() {
        let m = marks();
        assert_eq!(m.of("caf\u{e9} says nothing", false), 3);
    }

    #[test]
    fn report_entries_as_the_regexp_reads_them() {
        for (raw, want) in [
            ("  time      : 2024-05-01_12:00:00", true),
            ("host      : node-3", true),
            ("\t rank : 5", true),
            ("exitcode  : -9 (pid: 7)", true),
            ("rank: 3", true),
            ("  time", false),                       // no colon
            ("  timestamp : 1", false),              // another word
            ("  Time : 1", false),                   // case-sensitive
            ("\x0Btime : 1", false),                  // a vertical tab is no \s for RE2
            ("[rank0]:  host : x", false),          // not at the start
            ("  host : x\n  rank : 1", false),       // a block's lines: no
            ("", false),
            ("e", false),
        ] {
            assert_eq!(report_entry(raw.as_bytes()), want, "{raw:?}");
        }
    }

    #[test]
    fn class_marks_of_kinds_prefixes_roles_formats_and_line_tests() {
        let spec = crate::spec::MarkClassSpec {
            bit: 1,
            roles: vec!["cause".into()],
            kinds: vec!["task_exit".into(), "not_a_kind".into()],
            kind_prefixes: vec!["etcd_".into()],
            formats: vec!["slurm_topology".into()],
            lines: vec!["report_entry".into(), "pods_row".into()],
        };
        let m = ClassMarks::new(&[spec.clone()], &["progress", "task_exit", "etcd_slow"], &["nccl", "slurm_topology"]).unwrap();
        assert_eq!(m.of_class(Some(0), Some(0), "info"), 0);
        assert_eq!(m.of_class(Some(1), Some(0), "info"), 2);
        assert_eq!(m.of_class(Some(2), None, "info"), 2);
        assert_eq!(m.of_class(None, Some(1), "info"), 2);
        assert_eq!(m.of_class(None, None, "cause"), 2);
        assert_eq!(m.of_class(None, None, "symptom"), 0);
        assert_eq!(m.of_line("rank : 1", false), 2);
        assert_eq!(m.of_line("NCCL INFO rank 1", false), 0);
        assert_eq!(m.of_line("x", true), 2);
        let bad = crate::spec::MarkClassSpec { lines: vec!["nope".into()], ..spec };
        assert!(ClassMarks::new(&[bad], &[], &[]).is_err());
    }

    #[test]
    fn no_marks_no_bits() {
        let m = Marks::new(&[]).unwrap();
        assert_eq!(m.of("SeqNum=1", true), 0);
        assert!(Marks::new(&[vec!["".into()]]).is_err());
    }
}
