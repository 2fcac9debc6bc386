//! A catalog regex with an ASCII twin.
//!
//! The catalog's regexes are Unicode-aware (`\d`, `\w`, `\s`, `\b`, `.`,
//! case folding), as polars and DuckDB read them. Unicode classes make big
//! automata: the capture engines pay for them on every line (the bounded
//! backtracker clears a visited set of NFA states x span, the lazy DFA
//! walks more states). Most log lines are ASCII, and on an ASCII text every
//! Unicode class admits exactly the ASCII characters its ASCII version
//! admits (`\d` = [0-9], `\w` = [0-9A-Za-z_], `\s` = [\t\n\v\f\r ], `.` and
//! negated classes = every character but their exclusions, ASCII case
//! folding, ASCII word boundaries); so the same regex compiled without
//! Unicode (over bytes) finds the same matches and groups at the same
//! offsets. The twin runs on ASCII texts, the Unicode regex on the others
//! (and on everything when the pattern has no ASCII form, e.g. `\p{..}`).

use regex::{bytes, CaptureLocations, Regex, RegexBuilder};

pub struct Rx {
    uni: Regex,
    ascii: Option<bytes::Regex>,
}

/// Capture spans of the last successful `Rx::read`.
pub struct Locs {
    uni: CaptureLocations,
    ascii: Option<bytes::CaptureLocations>,
    used_ascii: bool,
}

impl Locs {
    #[inline]
    pub fn get(&self, i: usize) -> Option<(usize, usize)> {
        match (&self.ascii, self.used_ascii) {
            (Some(a), true) => a.get(i),
            _ => self.uni.get(i),
        }
    }
}

impl Rx {
    pub fn new(pattern: &str, multi_line: bool, what: &str) -> Result<Rx, String> {
        let uni = RegexBuilder::new(pattern)
            .multi_line(multi_line)
            .build()
            .map_err(|e| format!("{what}: regex does not compile: {e}"))?;
        let ascii = bytes::RegexBuilder::new(pattern).unicode(false).multi_line(multi_line).build().ok();
        Ok(Rx { uni, ascii })
    }

    /// The Unicode regex (its group names and indices are the twin's too).
    pub fn unicode(&self) -> &Regex {
        &self.uni
    }

    #[inline]
    pub fn has_twin(&self) -> bool {
        self.ascii.is_some()
    }

    /// `ascii`: whether `text` is ASCII (callers know it per line).
    #[inline]
    pub fn is_match(&self, text: &str, ascii: bool) -> bool {
        match (&self.ascii, ascii) {
            (Some(a), true) => a.is_match(text.as_bytes()),
            _ => self.uni.is_match(text),
        }
    }

    pub fn locations(&self) -> Locs {
        Locs { uni: self.uni.capture_locations(), ascii: self.ascii.as_ref().map(|a| a.capture_locations()), used_ascii: false }
    }

    /// Match `text`, filling `locs`; false when there is no match.
    #[inline]
    pub fn read(&self, locs: &mut Locs, text: &str, ascii: bool) -> bool {
        match (&self.ascii, &mut locs.ascii, ascii) {
            (Some(a), Some(l), true) => {
                locs.used_ascii = true;
                a.captures_read(l, text.as_bytes()).is_some()
            }
            _ => {
                locs.used_ascii = false;
                self.uni.captures_read(&mut locs.uni, text).is_some()
            }
        }
    }

    /// Group spans of every successive non-overlapping match (captures_iter).
    pub fn all_captures(&self, text: &str, ascii: bool) -> Vec<Vec<Option<(usize, usize)>>> {
        let span = |m: Option<(usize, usize)>| m;
        match (&self.ascii, ascii) {
            (Some(a), true) => a
                .captures_iter(text.as_bytes())
                .map(|c| (0..c.len()).map(|i| span(c.get(i).map(|m| (m.start(), m.end())))).collect())
                .collect(),
            _ => self
                .uni
                .captures_iter(text)
                .map(|c| (0..c.len()).map(|i| span(c.get(i).map(|m| (m.start(), m.end())))).collect())
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The twin and the Unicode regex agree on ASCII texts, group by group.
    #[test]
    fn twin_agrees_on_ascii() {
        let cases: &[(&str, &[&str])] = &[
            (r"^(?P<host>[\w.-]+):(?P<pid>\d+) (?P<m>.*)$", &["trn-node01:40000 x y", "a_b.c-d:1 ", "nohost", ":1 x"]),
            (r"(?i)\bkill(?:ed)?\b\s+(\S+)", &["process KILLED  now", "skilled x", "Kill\tme", "kill"]),
            (r"[^|]*\d+%\|[^|]*\|", &["  45%|#####| 9/20", "x|y", "100%||"]),
            (r"^\s*[\^~ ]*$", &["   ^^^~~~", "\t ^", "x", "", "\x0b"]),
            (r"(?m)^loss=(?P<v>[\d.eE+-]+)$", &["loss=1.5\nloss=2e-3", "a\nloss=3"]),
        ];
        for (pat, texts) in cases {
            let rx = Rx::new(pat, false, "test").unwrap();
            assert!(rx.has_twin(), "{pat}");
            for t in *texts {
                assert!(t.is_ascii());
                let (mut a, mut u) = (rx.locations(), rx.locations());
                let (ma, mu) = (rx.read(&mut a, t, true), rx.read(&mut u, t, false));
                assert_eq!(ma, mu, "{pat} on {t:?}");
                assert_eq!(rx.is_match(t, true), rx.is_match(t, false));
                for i in 0..rx.unicode().captures_len() {
                    assert_eq!(a.get(i), u.get(i), "{pat} on {t:?}, group {i}");
                }
                assert_eq!(rx.all_captures(t, true), rx.all_captures(t, false), "{pat} on {t:?}");
            }
        }
    }

    #[test]
    fn non_ascii_texts_use_unicode_classes() {
        let rx = Rx::new(r"^(\d+) (\w+)$", false, "test").unwrap();
        let mut l = rx.locations();
        assert!(rx.read(&mut l, "٣ café", false));
        assert_eq!(l.get(2), Some((3, 8))); // "٣" is two bytes
        // a pattern with no ASCII form still compiles and runs
        let p = Rx::new(r"^\p{Greek}+$", false, "test").unwrap();
        assert!(!p.has_twin());
        assert!(p.is_match("αβγ", false) && !p.is_match("abc", true));
    }
}
