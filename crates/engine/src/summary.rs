//! summary: the text tests of the store's per-line summaries, decided in the scan.
//!
//! The summaries made after ingest (queries/align/event_groups.sql: a rank's
//! highest step, when it last wrote one, whether the job assembled, the NCCL
//! communicator size, the teardown lines; queries/align/anchors.sql: the
//! steps every rank writes, the clock's anchors) read a few facts out of a
//! line's message with regexps. In SQL that cost a read of every line's text
//! and a regexp on every progress line: on a long run whose every rank
//! prints its steps (15 M of 15.4 M lines) most of the end of ingest, and the
//! clock's anchors ran out of memory. Here the parser thread that has the
//! line, its message and its class decides them once, and they leave as four
//! narrow columns of the lines (`out::event_schema`): step, says_step,
//! nranks, teardown. A reader groups integers, never text.
//!
//! Each is exactly the SQL expression it replaces (DuckDB's RE2 semantics:
//! `\b`, `\s` and `\d` are ASCII there, so they are written ASCII here; `(?i)`
//! folds Unicode in both); tests/correlate/test_scan_summaries.py holds the
//! engine's columns equal to those expressions on every sample bundle.

use crate::classify::Class;
use crate::compile::Catalog;
use crate::events::Event;
use regex::Regex;
use std::sync::OnceLock;

/// event_groups.sql's and anchors.sql's step of a progress line:
/// `TRY_CAST(regexp_extract(message, '(?i)\b(?:global[_ ])?(?:step|iter|iteration)\s*[=:#]?\s*\[?(\d+)', 1) AS BIGINT)`
const STEP: &str = r"(?i)(?-u:\b)(?:global[_ ])?(?:step|iter|iteration)[\t\n\x0C\r ]*[=:#]?[\t\n\x0C\r ]*\[?([0-9]+)";
/// event_groups.sql's `says_step` of a line of no kind:
/// `regexp_matches(message, '(?i)\b(?:step|iter|iteration)\s*[=:#]?\s*\d+')`
const SAYS_STEP: &str = r"(?i)(?-u:\b)(?:step|iter|iteration)[\t\n\x0C\r ]*[=:#]?[\t\n\x0C\r ]*[0-9]+";
/// event_groups.sql's NCCL communicator size: `TRY_CAST(regexp_extract(message, '\bnranks (\d+)', 1) AS INTEGER)`
const NRANKS: &str = r"(?-u:\b)nranks ([0-9]+)";
/// hot_events.sql's `kubectl get pods` row (mark `taken`'s line test `pods_row`, marks.rs):
/// `regexp_matches(message, '^[a-z0-9][a-z0-9.-]*\s+\d+/\d+\s+\S+\s+\d+')` (`\S`: any character but RE2's
/// five spaces, non-ASCII ones too)
const PODS_ROW: &str = r"^[a-z0-9][a-z0-9.-]*[\t\n\x0C\r ]+[0-9]+/[0-9]+[\t\n\x0C\r ]+[^\t\n\x0C\r ]+[\t\n\x0C\r ]+[0-9]+";

struct Rx {
    step: Regex,
    says: Regex,
    nranks: Regex,
    pods_row: Regex,
}

fn rx() -> &'static Rx {
    static RX: OnceLock<Rx> = OnceLock::new();
    RX.get_or_init(|| Rx {
        step: Regex::new(STEP).expect("STEP compiles"),
        says: Regex::new(SAYS_STEP).expect("SAYS_STEP compiles"),
        nranks: Regex::new(NRANKS).expect("NRANKS compiles"),
        pods_row: Regex::new(PODS_ROW).expect("PODS_ROW compiles"),
    })
}

/// The summary facts of one line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// the training step a progress line writes (a line of kind progress, or of no kind at
    /// debug / info / notice level)
    pub step: Option<i64>,
    /// a line of no kind says `step N` / `iter N` (a sign that the job assembled); None: no
    pub says_step: Option<bool>,
    /// the NCCL communicator size a line says (`nranks N`)
    pub nranks: Option<i32>,
    /// the line says a worker failed or SIGTERM was sent to one
    pub teardown: bool,
    /// the message is a `kubectl get pods` row (`pods_row`)
    pub pods_row: bool,
}

/// The kinds of a catalog's classes a step is read from (by index): progress, and none.
pub struct Kinds {
    progress: Option<usize>,
    quiet: [bool; 8],
}

impl Kinds {
    pub fn of(cat: &Catalog) -> Kinds {
        let mut quiet = [false; 8];
        for (i, s) in cat.severities.iter().enumerate().take(8) {
            quiet[i] = matches!(s.as_str(), "info" | "debug" | "notice");
        }
        Kinds { progress: cat.kinds.iter().position(|k| k.name == "progress"), quiet }
    }
}

/// The leading digits of `s` as TRY_CAST reads them (None: too large).
fn int<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.parse().ok()
}

/// The summary facts of `message` (a line's message), whose class is `class`.
pub fn facts(kinds: &Kinds, message: &str, class: &Class) -> Facts {
    let mut f = Facts::default();
    let progress = class.kind.is_some() && class.kind == kinds.progress;
    let no_kind = class.kind.is_none();
    // (every regexp needs its literal: a cheap test first, as the marks are in SQL)
    if progress || no_kind {
        let low = message.as_bytes();
        let maybe = memchr::memmem::find(low, b"tep").is_some()
            || memchr::memmem::find(low, b"iter").is_some()
            || !message.is_ascii()
            || low.iter().any(u8::is_ascii_uppercase);
        if maybe {
            let quiet = kinds.quiet.get(class.severity as usize).copied().unwrap_or(false);
            if progress || quiet {
                f.step = rx().step.captures(message).and_then(|c| int(c.get(1)?.as_str()));
            }
            if no_kind && rx().says.is_match(message) {
                f.says_step = Some(true);
            }
        }
    }
    if memchr::memmem::find(message.as_bytes(), b"nranks ").is_some() {
        f.nranks = rx().nranks.captures(message).and_then(|c| int(c.get(1)?.as_str()));
    }
    f.teardown = memchr::memmem::find(message.as_bytes(), b"failed (exitcode:").is_some()
        || memchr::memmem::find(message.as_bytes(), b"closing signal SIGTERM").is_some();
    f.pods_row = pods_row(message);
    f
}

/// Whether `message` is a `kubectl get pods` row (PODS_ROW): its first byte and a '/' first
/// (hot_events.sql's own prefilters), the regexp on the few left.
#[inline]
pub fn pods_row(message: &str) -> bool {
    let b = message.as_bytes();
    matches!(b.first(), Some(b'a'..=b'z' | b'0'..=b'9')) && memchr::memchr(b'/', b).is_some() && rx().pods_row.is_match(message)
}

/// The facts of every event of a batch (its class beside it), each read from its message
/// (the reference: classify.rs gives the same facts, replayed per message and per shape).
pub fn of_events(cat: &Catalog, events: &[Event], classes: &[Class]) -> Vec<Facts> {
    let kinds = Kinds::of(cat);
    events.iter().zip(classes).map(|(e, c)| facts(&kinds, e.span(e.message), c)).collect()
}

/// What a message's text says, whatever its class: `facts(kinds, m, class)` is
/// `combine(kinds, tests(m), class)`. A message met again (classify.rs: per (source,
/// message)) or of a shape met before (per shape: `ShapeTests`) takes them without a search.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tests {
    /// the step the step regexp reads (whatever the class)
    pub step: Option<i64>,
    /// whether the says-step regexp matches
    pub says: bool,
    pub nranks: Option<i32>,
    pub teardown: bool,
    pub pods_row: bool,
}

/// The literals of the tests, their searchers made once (memmem::find makes one per call).
struct Finders {
    tep: memchr::memmem::Finder<'static>,
    iter: memchr::memmem::Finder<'static>,
    nranks: memchr::memmem::Finder<'static>,
    exitcode: memchr::memmem::Finder<'static>,
    sigterm: memchr::memmem::Finder<'static>,
}

/// The literals `teardown` looks for.
pub const TEARDOWN: [&str; 2] = ["failed (exitcode:", "closing signal SIGTERM"];

fn finders() -> &'static Finders {
    static F: OnceLock<Finders> = OnceLock::new();
    F.get_or_init(|| Finders {
        tep: memchr::memmem::Finder::new(b"tep"),
        iter: memchr::memmem::Finder::new(b"iter"),
        nranks: memchr::memmem::Finder::new(b"nranks "),
        exitcode: memchr::memmem::Finder::new(TEARDOWN[0].as_bytes()),
        sigterm: memchr::memmem::Finder::new(TEARDOWN[1].as_bytes()),
    })
}

/// The tests of `message`, read from its text.
pub fn tests(message: &str) -> Tests {
    let b = message.as_bytes();
    let f = finders();
    let mut t = Tests::default();
    // the step regexps need `step`, `iter` or `iteration` in any case (`facts`' cheap test)
    let maybe = f.tep.find(b).is_some() || f.iter.find(b).is_some() || !message.is_ascii() || b.iter().any(u8::is_ascii_uppercase);
    if maybe {
        t.step = rx().step.captures(message).and_then(|c| int(c.get(1)?.as_str()));
        t.says = rx().says.is_match(message);
    }
    if f.nranks.find(b).is_some() {
        t.nranks = rx().nranks.captures(message).and_then(|c| int(c.get(1)?.as_str()));
    }
    t.teardown = f.exitcode.find(b).is_some() || f.sigterm.find(b).is_some();
    t.pods_row = pods_row(message);
    t
}

/// `facts` of a message whose tests are `t`, for its class.
#[inline]
pub fn combine(kinds: &Kinds, t: &Tests, class: &Class) -> Facts {
    let progress = class.kind.is_some() && class.kind == kinds.progress;
    let no_kind = class.kind.is_none();
    let quiet = kinds.quiet.get(class.severity as usize).copied().unwrap_or(false);
    Facts {
        step: if (progress || no_kind) && (progress || quiet) { t.step } else { None },
        says_step: (no_kind && t.says).then_some(true),
        nranks: t.nranks,
        teardown: t.teardown,
        pods_row: t.pods_row,
    }
}

/// The regexps and literals of the tests, for the byte classes of message shapes
/// (classify.rs): ASCII messages of one shape match them alike, with the same spans.
pub fn shape_sources() -> Vec<String> {
    let mut s = vec![STEP.to_string(), SAYS_STEP.to_string(), NRANKS.to_string(), PODS_ROW.to_string()];
    s.extend(TEARDOWN.iter().map(|l| regex::escape(l)));
    s
}

/// The tests of a message shape: where its step and nranks digits are (spans of the
/// message), and the answers that need no digits.
#[derive(Debug, Clone, Copy)]
pub struct ShapeTests {
    step: Option<(u32, u32)>,
    says: bool,
    nranks: Option<(u32, u32)>,
    teardown: bool,
    pods_row: bool,
}

impl ShapeTests {
    /// Read on the message that made the shape.
    pub fn of(message: &str) -> ShapeTests {
        let span = |re: &Regex| re.captures(message).and_then(|c| c.get(1)).map(|m| (m.start() as u32, m.end() as u32));
        let b = message.as_bytes();
        let f = finders();
        ShapeTests {
            step: span(&rx().step),
            says: rx().says.is_match(message),
            nranks: span(&rx().nranks),
            teardown: f.exitcode.find(b).is_some() || f.sigterm.find(b).is_some(),
            pods_row: pods_row(message),
        }
    }

    /// The tests of `message`, of this shape: only its digits are read.
    #[inline]
    pub fn tests(&self, message: &str) -> Tests {
        let at = |s: (u32, u32)| &message[s.0 as usize..s.1 as usize];
        Tests {
            step: self.step.and_then(|s| int(at(s))),
            says: self.says,
            nranks: self.nranks.and_then(|s| int(at(s))),
            teardown: self.teardown,
            pods_row: self.pods_row,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds() -> Kinds {
        let mut quiet = [false; 8];
        quiet[1] = true; // info
        Kinds { progress: Some(0), quiet }
    }

    fn class(kind: Option<usize>, severity: u8) -> Class<'static> {
        Class { kind, severity, role: "info" }
    }

    #[test]
    fn step_of_progress_lines_and_quiet_lines_of_no_kind() {
        let k = kinds();
        assert_eq!(facts(&k, "step 11 | loss 2.4", &class(Some(0), 3)).step, Some(11));
        assert_eq!(facts(&k, "global_step=[42] lr", &class(None, 1)).step, Some(42));
        assert_eq!(facts(&k, "Iteration: 7", &class(None, 1)).step, Some(7));
        // a loud line of no kind, a line of another kind: no step
        assert_eq!(facts(&k, "step 11", &class(None, 4)).step, None);
        assert_eq!(facts(&k, "step 11", &class(Some(1), 1)).step, None);
        // ASCII word boundary, as RE2's: `_step` is no word start; `ministep 3` neither
        assert_eq!(facts(&k, "warmup_step 5", &class(Some(0), 1)).step, None);
        assert_eq!(facts(&k, "ministep 3", &class(Some(0), 1)).step, None);
        // too large for BIGINT: NULL, as TRY_CAST
        assert_eq!(facts(&k, "step 99999999999999999999", &class(Some(0), 1)).step, None);
        // RE2's \s is [\t\n\f\r ]: no vertical tab, no Unicode space
        assert_eq!(facts(&k, "step\u{0B}5", &class(Some(0), 1)).step, None);
        assert_eq!(facts(&k, "step\u{00A0}5", &class(Some(0), 1)).step, None);
        // \b is ASCII: no word starts at a non-ASCII letter (RE2 gives none for `ſtep 5`)
        assert_eq!(facts(&k, "\u{017F}tep 5", &class(Some(0), 1)).step, None);
        assert_eq!(facts(&k, "x STEP=5", &class(Some(0), 1)).step, Some(5));
        // \d is ASCII: an Arabic-Indic digit is none
        assert_eq!(facts(&k, "step \u{0663}", &class(Some(0), 1)).step, None);
    }

    /// `facts` is `combine` of `tests`, and of a shape's tests on the message that made it.
    #[test]
    fn facts_are_tests_combined() {
        let k = kinds();
        let msgs = ["step 11 | loss 2.4", "global_step=[42] lr", "Iteration: 7", "warmup_step 5", "STEP: 3 done",
                    "step 99999999999999999999", "step\u{0B}5", "\u{017F}tep 5", "comm 0x1 rank 3 nranks 16",
                    "nranks 4294967296", "failed (exitcode: 1)", "closing signal SIGTERM", "no steps here", "",
                    "trainer-0-worker-3   1/1   Running   0   5m", "web.x-1 0/2 CrashLoopBackOff 12 3h"];
        for m in msgs {
            for c in [class(Some(0), 3), class(Some(0), 1), class(None, 1), class(None, 4), class(Some(1), 1)] {
                assert_eq!(combine(&k, &tests(m), &c), facts(&k, m, &c), "{m:?}");
                assert_eq!(combine(&k, &ShapeTests::of(m).tests(m), &c), facts(&k, m, &c), "{m:?}");
            }
        }
    }

    #[test]
    fn says_step_only_without_a_kind() {
        let k = kinds();
        assert_eq!(facts(&k, "STEP: 3 done", &class(None, 4)).says_step, Some(true));
        assert_eq!(facts(&k, "step 3", &class(Some(0), 1)).says_step, None);
        assert_eq!(facts(&k, "global_step 3", &class(None, 1)).says_step, None);
        assert_eq!(facts(&k, "no steps here", &class(None, 1)).says_step, None);
    }

    #[test]
    fn pods_rows_as_the_regexp_reads_them() {
        for (m, want) in [
            ("trainer-0-worker-3   1/1   Running   0   5m", true),
            ("web.x-1 0/2 CrashLoopBackOff 12 3h", true),
            ("9pod 1/1 Running 0", true),
            ("pod 1/1 R\u{00e9}ady 0", true),                 // \S: any non-space character
            ("pod 1/1 Running", false),                     // no restarts column
            ("Pod 1/1 Running 0", false),                   // an upper-case start
            ("NAME READY STATUS RESTARTS AGE", false),
            ("pod 1/1\u{00a0}Running 0", false),             // RE2's \s is ASCII: no no-break space
            ("pod 1/1\x0BRunning 0", false),                 // nor a vertical tab
            ("NCCL INFO Channel 00/0 : 0 -> 1", false),
            ("l 00/0 : 0", true),
        ] {
            assert_eq!(pods_row(m), want, "{m:?}");
            assert_eq!(tests(m).pods_row, want, "{m:?}");
        }
    }

    #[test]
    fn nranks_and_teardown() {
        let k = kinds();
        let c = class(Some(1), 1);
        assert_eq!(facts(&k, "comm 0x1 rank 3 nranks 16 cudaDev 3", &c).nranks, Some(16));
        assert_eq!(facts(&k, "nranks 4294967296", &c).nranks, None);
        assert_eq!(facts(&k, "xnranks 16", &c).nranks, None);
        assert!(facts(&k, "failed (exitcode: 1) local_rank: 0 (pid: 7)", &c).teardown);
        assert!(facts(&k, "Sending process 7 closing signal SIGTERM", &c).teardown);
        assert!(!facts(&k, "closing signal SIGKILL", &c).teardown);
    }
}
