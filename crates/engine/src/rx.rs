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

//!
//! The Unicode regex is compiled the first time a text needs it (a
//! non-ASCII line, or a pattern with no ASCII form): Unicode classes take
//! most of a catalog's compile time (535 regexes: 0.45 s against 0.07 s for
//! the twins), and most logs never ask for them.

use regex::{bytes, CaptureLocations, Regex, RegexBuilder};
use std::sync::OnceLock;

pub struct Rx {
    pattern: String,
    multi_line: bool,
    uni: OnceLock<Regex>,
    ascii: Option<bytes::Regex>,
    /// the twin's NFA, for guard.rs (built the first time a shape asks for it)
    nfa: OnceLock<Option<regex_automata::nfa::thompson::NFA>>,
}

/// Capture spans of the last successful `Rx::read`.
pub struct Locs {
    /// made on the first read of a non-ASCII text (the Unicode regex is compiled then)
    uni: Option<CaptureLocations>,
    ascii: Option<bytes::CaptureLocations>,
    used_ascii: bool,
}

impl Locs {
    #[inline]
    pub fn get(&self, i: usize) -> Option<(usize, usize)> {
        match (&self.ascii, self.used_ascii) {
            (Some(a), true) => a.get(i),
            _ => self.uni.as_ref().and_then(|l| l.get(i)),
        }
    }
}

impl Rx {
    pub fn new(pattern: &str, multi_line: bool, what: &str) -> Result<Rx, String> {
        let ascii = bytes::RegexBuilder::new(pattern).unicode(false).multi_line(multi_line).build().ok();
        let rx = Rx { pattern: pattern.to_string(), multi_line, uni: OnceLock::new(), ascii, nfa: OnceLock::new() };
        if rx.ascii.is_none() {
            // No ASCII form (or a pattern that does not compile): the Unicode regex now, its error named.
            let uni = rx.build_unicode().map_err(|e| format!("{what}: regex does not compile: {e}"))?;
            let _ = rx.uni.set(uni);
        } else {
            // The Unicode syntax is checked now, so that a later build can only fail on size, and the
            // checks a twin passes say nothing of the Unicode form's.
            regex_syntax::ParserBuilder::new()
                .multi_line(multi_line)
                .build()
                .parse(pattern)
                .map_err(|e| format!("{what}: regex does not compile: {e}"))?;
        }
        Ok(rx)
    }

    fn build_unicode(&self) -> Result<Regex, regex::Error> {
        RegexBuilder::new(&self.pattern).multi_line(self.multi_line).build()
    }

    /// The Unicode regex, compiled on first use.
    pub fn unicode(&self) -> &Regex {
        self.uni.get_or_init(|| {
            self.build_unicode().unwrap_or_else(|e| panic!("regex {:?} passed its syntax check but does not build: {e}", self.pattern))
        })
    }

    /// The NFA of the ASCII twin (None: no twin), as guard.rs follows it:
    /// the twin's syntax (no Unicode, bytes, `multi_line`); groups do not
    /// change which bytes its transitions tell apart.
    pub fn guard_nfa(&self) -> Option<&regex_automata::nfa::thompson::NFA> {
        use regex_automata::nfa::thompson::{self, WhichCaptures};
        use regex_automata::util::syntax;
        self.nfa
            .get_or_init(|| {
                self.ascii.as_ref()?;
                thompson::Compiler::new()
                    .syntax(syntax::Config::new().unicode(false).utf8(false).multi_line(self.multi_line))
                    .configure(thompson::Config::new().which_captures(WhichCaptures::None).utf8(false))
                    .build(&self.pattern)
                    .ok()
            })
            .as_ref()
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Capture groups, the whole match included (the twin's and the Unicode regex's are the same).
    pub fn captures_len(&self) -> usize {
        match &self.ascii {
            Some(a) => a.captures_len(),
            None => self.unicode().captures_len(),
        }
    }

    /// Group names by index (None: unnamed), as the Unicode regex has them.
    pub fn capture_names(&self) -> Vec<Option<String>> {
        match &self.ascii {
            Some(a) => a.capture_names().map(|n| n.map(str::to_string)).collect(),
            None => self.unicode().capture_names().map(|n| n.map(str::to_string)).collect(),
        }
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
            _ => self.unicode().is_match(text),
        }
    }

    pub fn locations(&self) -> Locs {
        Locs { uni: None, ascii: self.ascii.as_ref().map(|a| a.capture_locations()), used_ascii: false }
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
                let uni = self.unicode();
                let l = locs.uni.get_or_insert_with(|| uni.capture_locations());
                uni.captures_read(l, text).is_some()
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
                .unicode()
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
                for i in 0..rx.captures_len() {
                    assert_eq!(a.get(i), u.get(i), "{pat} on {t:?}, group {i}");
                }
                assert_eq!(rx.all_captures(t, true), rx.all_captures(t, false), "{pat} on {t:?}");
            }
        }
    }

    /// The Unicode regex waits for the first text that needs it; bad patterns still fail at once.
    #[test]
    fn unicode_form_is_compiled_on_first_use() {
        let rx = Rx::new(r"^(?P<w>\w+) (?P<n>\d+)$", false, "test").unwrap();
        assert_eq!(rx.captures_len(), 3);
        assert_eq!(rx.capture_names(), vec![None, Some("w".to_string()), Some("n".to_string())]);
        let mut l = rx.locations();
        assert!(rx.read(&mut l, "abc 12", true) && rx.is_match("abc 12", true));
        assert!(rx.uni.get().is_none(), "an ASCII text needs no Unicode regex");
        assert!(rx.read(&mut l, "café 12", false));
        assert_eq!((l.get(1), l.get(2)), (Some((0, 5)), Some((6, 8))));
        assert!(rx.uni.get().is_some());
        for bad in [r"(unclosed", r"\p{NoSuchClass}", r"(?-u:\xFF)", r"a{2,1}"] {
            let err = Rx::new(bad, false, "pattern x").err().unwrap_or_else(|| panic!("{bad} compiled"));
            assert!(err.starts_with("pattern x: regex does not compile"), "{bad}: {err}");
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
