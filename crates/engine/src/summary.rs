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

struct Rx {
    step: Regex,
    says: Regex,
    nranks: Regex,
}

fn rx() -> &'static Rx {
    static RX: OnceLock<Rx> = OnceLock::new();
    RX.get_or_init(|| Rx {
        step: Regex::new(STEP).expect("STEP compiles"),
        says: Regex::new(SAYS_STEP).expect("SAYS_STEP compiles"),
        nranks: Regex::new(NRANKS).expect("NRANKS compiles"),
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
    f
}

/// The facts of every event of a batch (its class beside it).
pub fn of_events(cat: &Catalog, events: &[Event], classes: &[Class]) -> Vec<Facts> {
    let kinds = Kinds::of(cat);
    events.iter().zip(classes).map(|(e, c)| facts(&kinds, e.span(e.message), c)).collect()
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

    #[test]
    fn says_step_only_without_a_kind() {
        let k = kinds();
        assert_eq!(facts(&k, "STEP: 3 done", &class(None, 4)).says_step, Some(true));
        assert_eq!(facts(&k, "step 3", &class(Some(0), 1)).says_step, None);
        assert_eq!(facts(&k, "global_step 3", &class(None, 1)).says_step, None);
        assert_eq!(facts(&k, "no steps here", &class(None, 1)).says_step, None);
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
