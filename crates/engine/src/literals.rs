//! The required literals of every pattern and of every block start, found
//! in one pass over each line's body.
//!
//! One Aho-Corasick DFA holds them all; a plain loop steps it a byte at a
//! time and, at each match state, marks every literal that ends there (for
//! the standard match kind a state carries all the literals that end at it,
//! so nothing overlapping is missed). The result is a bit set per line:
//! which patterns are worth trying, which block kinds a line may start.

use aho_corasick::automaton::Automaton;
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, MatchKind};

pub struct Literals {
    dfa: Option<DFA>,
    lits: Vec<String>,
    /// u64 words of a line's bit set
    pub words: usize,
}

impl Literals {
    pub fn new(lits: &[String]) -> Result<Literals, String> {
        let words = lits.len().div_ceil(64).max(1);
        if lits.is_empty() {
            return Ok(Literals { dfa: None, lits: vec![], words });
        }
        let dfa = DFA::builder().match_kind(MatchKind::Standard).build(lits).map_err(|e| format!("literals: {e}"))?;
        Ok(Literals { dfa: Some(dfa), lits: lits.to_vec(), words })
    }

    /// The literals, by id.
    pub fn strings(&self) -> &[String] {
        &self.lits
    }

    /// Marks in `row` (`words` long, zeroed) every literal that occurs in `text`.
    pub fn scan(&self, text: &str, row: &mut [u64]) {
        let dfa = match &self.dfa {
            Some(d) => d,
            None => return,
        };
        let mut mark = |sid| {
            for k in 0..dfa.match_len(sid) {
                let p = dfa.match_pattern(sid, k).as_usize();
                row[p / 64] |= 1 << (p % 64);
            }
        };
        let mut sid = dfa.start_state(Anchored::No).expect("an unanchored start state");
        if dfa.is_match(sid) {
            mark(sid);
        }
        for &b in text.as_bytes() {
            sid = dfa.next_state(Anchored::No, sid, b);
            if dfa.is_special(sid) && dfa.is_match(sid) {
                mark(sid);
            }
        }
    }
}

/// The id of literal `l` in `lits`, added at the end when it is new (the
/// literals of several regexes share one automaton, each literal once).
pub fn intern(lits: &mut Vec<String>, l: &str) -> usize {
    lits.iter().position(|x| x == l).unwrap_or_else(|| {
        lits.push(l.to_string());
        lits.len() - 1
    })
}

#[inline]
pub fn has(row: &[u64], l: usize) -> bool {
    row[l / 64] >> (l % 64) & 1 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every literal that occurs is marked, overlapping ones included, and
    /// only those (checked against str::contains).
    #[test]
    fn marks_exactly_the_literals_that_occur() {
        let lits: Vec<String> = [":", ": ", "a: b", "Failures:", "Other Failures:", "] ", "NCCL ", "x", "xx", "xxx"]
            .iter()
            .map(|s| s.to_string())
            .chain((0..70).map(|i| format!("lit{i:02}")))
            .collect();
        let l = Literals::new(&lits).unwrap();
        assert_eq!(l.words, 2);
        for text in ["Other Failures: a: b", "xx", "[0] NCCL INFO lit69 lit07", "", "no literal here"] {
            let mut row = vec![0u64; l.words];
            l.scan(text, &mut row);
            for (i, lit) in lits.iter().enumerate() {
                assert_eq!(has(&row, i), text.contains(lit.as_str()), "{lit:?} in {text:?}");
            }
        }
    }
}
