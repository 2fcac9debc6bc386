//! guard: when a digit-telling regex need not be asked again.
//!
//! A shape (shape.rs, classify.rs) keeps what its reading asked of the
//! regexes that tell digits apart, and a later line of the shape asks them
//! again of its own bytes: on syslog that was half the cost of a line (the
//! journald envelope's `[ 0-3]?\d` day, kernel facts' `\.[0-7]`), though
//! such a regex looks at a digit's value in one or two places only.
//!
//! So the reading that made the shape is followed through the regex's NFA
//! (every thread, whatever the priorities, to the end of the text): at each
//! offset, the bytes that every transition then tried treats as it treats
//! the line's own byte (and every look-around there and just before judges
//! alike). A text of the shape (its bytes in the same classes) that has
//! such a byte at every offset runs every thread of the NFA the same way
//! the line did, so every engine gives the same answer, groups included.
//! The guard keeps only the offsets where that set is narrower than the
//! shape's class of the byte (a day's digit; not the digits of a pid,
//! which `\d+` reads alike): a later text checks a few bytes instead of
//! running the regex. A text that fails the guard still runs it.

use regex_automata::nfa::thompson::{State, NFA};
use regex_automata::util::look::Look;

use crate::shape::Classes;

/// Bytes 0..128 as bits (guards are for ASCII texts only).
type Set = u128;

/// Offsets of a text and the bytes a text of its shape may have there for
/// the regex to read it as it read the text that made the guard.
#[derive(Clone, Debug, Default)]
pub struct Guard {
    at: Box<[(u32, Set)]>,
}

impl Guard {
    /// Whether ASCII `text` (of the shape the guard was made for) reads as that text did.
    #[inline]
    pub fn admits(&self, text: &[u8]) -> bool {
        self.at.iter().all(|&(i, set)| text.get(i as usize).map_or(false, |&b| b < 128 && set >> b & 1 == 1))
    }
}

/// The bytes lo..=hi (their ASCII part).
#[inline]
fn range(lo: u8, hi: u8) -> Set {
    if lo >= 128 || hi < lo {
        return 0;
    }
    (Set::MAX << lo) & (Set::MAX >> (127 - hi.min(127)))
}

/// [0-9A-Za-z_]
const WORD: Set = (((1 << 10) - 1) << b'0') | (((1 << 26) - 1) << b'A') | (((1 << 26) - 1) << b'a') | (1 << b'_');
const LF: Set = 1 << b'\n';
const CR: Set = 1 << b'\r';

/// The bytes that every look-around judges as it judges ASCII `b` (word
/// or not, line terminator or not).
#[inline]
fn look_alike(b: u8) -> Set {
    match 1u128 << b {
        bit if bit & (WORD | LF | CR) != 0 => if bit & WORD != 0 { WORD } else { bit },
        _ => !(WORD | LF | CR),
    }
}

fn unicode_look(l: Look) -> bool {
    matches!(
        l,
        Look::WordUnicode
            | Look::WordUnicodeNegate
            | Look::WordStartUnicode
            | Look::WordEndUnicode
            | Look::WordStartHalfUnicode
            | Look::WordEndHalfUnicode
    )
}

/// The guard of `nfa` (the ASCII twin's, `Rx::guard_nfa`) on ASCII `text`,
/// whose bytes' classes are `classes` (what a text of its shape shares with it);
/// None when the NFA has what this does not follow (Unicode look-around).
pub fn make(nfa: &NFA, text: &[u8], classes: &Classes) -> Option<Guard> {
    if !text.is_ascii() {
        return None;
    }
    let n = text.len();
    let mut allowed: Vec<Set> = vec![Set::MAX; n];
    SCRATCH.with(|scratch| {
        let mut stamp = scratch.borrow_mut();
        // offsets of this guard are stamped `base + i`, above every earlier guard's
        let states = nfa.states().len();
        if stamp.1.len() < states || stamp.0 > u32::MAX - 1 - n as u32 {
            *stamp = (0, vec![0; states.max(stamp.1.len())]);
        }
        let base = stamp.0 + 1;
        stamp.0 = base + n as u32;
        follow(nfa, text, base, &mut allowed, &mut stamp.1)
    })?;
    let at: Vec<(u32, Set)> = allowed
        .iter()
        .enumerate()
        .filter_map(|(i, &set)| {
            let same = classes.ascii[classes.of[text[i] as usize] as usize];
            (set & same != same).then_some((i as u32, set & same))
        })
        .collect();
    Some(Guard { at: at.into() })
}

thread_local! {
    /// (the last stamp used, a stamp per NFA state): kept between guards, so
    /// that a guard does not clear one per state
    static SCRATCH: std::cell::RefCell<(u32, Vec<u32>)> = std::cell::RefCell::new((0, Vec::new()));
}

/// Every thread of `nfa` on `text`: narrows `allowed` (see `make`). None:
/// what this does not follow (Unicode look-around, a non-ASCII byte).
fn follow(nfa: &NFA, text: &[u8], base: u32, allowed: &mut [Set], stamp: &mut [u32]) -> Option<()> {
    let n = text.len();
    let lm = nfa.look_matcher();
    let mut now: Vec<regex_automata::util::primitives::StateID> = Vec::new();
    let mut next = Vec::new();
    let mut stack = Vec::new();
    let mut consuming = Vec::new();
    // the epsilon closure at offset `i` of the states in `seeds`, into `consuming`
    let mut closure = |i: usize, seeds: &[regex_automata::util::primitives::StateID], consuming: &mut Vec<_>,
                       allowed: &mut [Set], stamp: &mut [u32]|
     -> bool {
        consuming.clear();
        stack.clear();
        stack.extend_from_slice(seeds);
        while let Some(sid) = stack.pop() {
            if stamp[sid.as_usize()] == base + i as u32 {
                continue;
            }
            stamp[sid.as_usize()] = base + i as u32;
            match nfa.state(sid) {
                State::ByteRange { .. } | State::Sparse(_) | State::Dense(_) => consuming.push(sid),
                State::Look { look, next } => {
                    if unicode_look(*look) {
                        return false;
                    }
                    // its answer depends on the bytes around `i`: they keep their kind
                    if i < n {
                        allowed[i] &= look_alike(text[i]);
                    }
                    if i > 0 {
                        allowed[i - 1] &= look_alike(text[i - 1]);
                    }
                    if lm.matches(*look, text, i) {
                        stack.push(*next);
                    }
                }
                State::Union { alternates } => stack.extend(alternates.iter().rev()),
                State::BinaryUnion { alt1, alt2 } => {
                    stack.push(*alt2);
                    stack.push(*alt1);
                }
                State::Capture { next, .. } => stack.push(*next),
                State::Fail | State::Match { .. } => {}
            }
        }
        true
    };
    now.push(nfa.start_unanchored());
    for i in 0..=n {
        if !closure(i, &now, &mut consuming, allowed, stamp) {
            return None;
        }
        if i == n || consuming.is_empty() {
            break;
        }
        let b = text[i];
        if b >= 128 {
            return None;
        }
        next.clear();
        let mut set = allowed[i];
        for &sid in consuming.iter() {
            match nfa.state(sid) {
                State::ByteRange { trans } => {
                    let r = range(trans.start, trans.end);
                    if trans.matches_byte(b) {
                        set &= r;
                        next.push(trans.next);
                    } else {
                        set &= !r;
                    }
                }
                State::Sparse(sp) => match sp.transitions.iter().find(|t| t.matches_byte(b)) {
                    Some(t) => {
                        set &= range(t.start, t.end);
                        next.push(t.next);
                    }
                    None => set &= !sp.transitions.iter().fold(0, |s, t| s | range(t.start, t.end)),
                },
                State::Dense(d) => {
                    let to = d.transitions[b as usize];
                    set &= (0..128u8).filter(|&c| d.transitions[c as usize] == to).fold(0, |s, c| s | 1 << c);
                    if to != regex_automata::util::primitives::StateID::ZERO {
                        next.push(to);
                    }
                }
                _ => unreachable!("only consuming states"),
            }
        }
        allowed[i] = set;
        std::mem::swap(&mut now, &mut next);
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rx::Rx;

    #[test]
    fn range_is_the_bytes_between() {
        for lo in 0..=255u8 {
            for hi in [0u8, 1, 9, 48, 57, 126, 127, 128, 255] {
                let want = (0..128u8).filter(|&b| lo <= b && b <= hi).fold(0 as Set, |s, b| s | 1 << b);
                assert_eq!(range(lo, hi), want, "{lo} {hi}");
            }
        }
    }

    /// `look_alike` is: the same kind for every look-around.
    #[test]
    fn look_alike_is_kind_equality() {
        let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        for b in 0..128u8 {
            let want = (0..128u8)
                .filter(|&c| word(c) == word(b) && (c == b'\n') == (b == b'\n') && (c == b'\r') == (b == b'\r'))
                .fold(0 as Set, |s, c| s | 1 << c);
            assert_eq!(look_alike(b), want, "{b}");
        }
    }

    /// Every text of a shape that a guard admits gets the regex's answer on
    /// the text that made it (groups included); the journald day is guarded,
    /// the digits that `\d` reads alike are not.
    #[test]
    fn admitted_texts_read_alike() {
        let classes = Classes::default(); // one class: every byte alike, as far as the shape goes
        let cases: &[(&str, &[&str])] = &[
            (r"^(?P<ts>[A-Z][a-z]{2} [ 0-3]?\d \d\d:\d\d:\d\d) (?P<host>[\w.-]+) (?P<program>[\w.@/()-]+?)(?:\[(?P<pid>\d+)\])?: ",
             &["Mar 02 03:00:00 trn-node01 slurmd[2199]: launch 45", "Mar 12 13:59:09 trn-node01 slurmd[7199]: launch 45"]),
            (r"\bNVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-f]{4}:[0-9a-f]{2}(?:\.[0-7])?)\): (?P<xid>\d+)", &["x NVRM: Xid (PCI:0000:98.3): 79, y"]),
            (r"(?m)^day [0-3]\d$", &["day 12\nday 45", "day 45"]),
        ];
        for (pat, texts) in cases {
            let rx = Rx::new(pat, pat.starts_with("(?m)"), "test").unwrap();
            let nfa = rx.guard_nfa().unwrap();
            for t in *texts {
                let g = make(nfa, t.as_bytes(), &classes).unwrap();
                let mut want = rx.locations();
                let hit = rx.read(&mut want, t, true);
                // every variant of the text with one byte changed to another byte
                let mut admitted = 0;
                for i in 0..t.len() {
                    for c in 0x20u8..0x7f {
                        let mut v = t.as_bytes().to_vec();
                        v[i] = c;
                        if !g.admits(&v) {
                            continue;
                        }
                        admitted += 1;
                        let v = String::from_utf8(v).unwrap();
                        let mut got = rx.locations();
                        assert_eq!(rx.read(&mut got, &v, true), hit, "{pat} on {v:?}");
                        for k in 0..rx.captures_len() {
                            assert_eq!(got.get(k), want.get(k), "{pat} on {v:?} group {k}");
                        }
                    }
                }
                assert!(admitted > 0);
            }
        }
        // the journald day is guarded, the time and pid are not
        let rx = Rx::new(cases[0].0, false, "test").unwrap();
        let t = cases[0].1[0];
        let g = make(rx.guard_nfa().unwrap(), t.as_bytes(), &Classes::of_digits()).unwrap();
        assert!(g.admits(b"Mar 02 03:59:59 trn-node01 slurmd[9999]: launch 99"));
        assert!(!g.admits(b"Mar 52 03:00:00 trn-node01 slurmd[2199]: launch 45"));
    }
}
