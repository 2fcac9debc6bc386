//! marks: a bit per mark of parsers/marks.toml, set when a line's raw text
//! contains one of the mark's literals (ASCII case-folded), and every bit on a
//! line that is not ASCII. Queries test a mark before their text tests
//! (`has_mark(marks, 'hot') AND ...`), so it must be a superset: folding case
//! and marking non-ASCII lines whole keep it one whatever LIKE, ILIKE or a
//! regexp would make of the text.

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

#[derive(Default)]
pub struct Marks {
    /// all the literals, each found anywhere (overlapping: a literal inside another is not missed)
    ac: Option<AhoCorasick>,
    /// the bit of each literal of `ac`
    bit_of: Vec<i32>,
    /// every bit
    all: i32,
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
        let all = bit_of.iter().fold(0, |a, b| a | b);
        if lits.is_empty() {
            return Ok(Marks { ac: None, bit_of, all, literals: lits });
        }
        let ac = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&lits)
            .map_err(|e| format!("marks: {e}"))?;
        Ok(Marks { ac: Some(ac), bit_of, all, literals: lits })
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
            if bits == self.all {
                break;
            }
        }
        bits
    }
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
    fn no_marks_no_bits() {
        let m = Marks::new(&[]).unwrap();
        assert_eq!(m.of("SeqNum=1", true), 0);
        assert!(Marks::new(&[vec!["".into()]]).is_err());
    }
}
