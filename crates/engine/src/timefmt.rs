//! Captured time text -> UTC microseconds, from a chrono layout.
//!
//! The normalisations are those the catalog's layouts were written for:
//! Python logging's "17:10:08,943" read by a `%.f` layout, ISO "T" read by
//! `%d %H`, torch's c10 logger writing the month unpadded ("E519" is May 19),
//! year-less times parsed in a placeholder leap year (moved after ingest).

use crate::fasttime::Fast;
use crate::spec::TimeSpec;
use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone};
use chrono_tz::Tz;

/// Year-less times are parsed in this leap year (so Feb 29 parses).
pub const PLACEHOLDER_YEAR: i32 = 2000;
/// PLACEHOLDER_YEAR as text (the fast path writes it without formatting).
const PLACEHOLDER_TEXT: &[u8] = b"2000";

/// Times outside these years (UTC microseconds: 1990-01-01 .. 2100-01-01) are
/// taken for garbage (a year 0001 or 9999 in a log) and not used.
pub const PLAUSIBLE: std::ops::Range<i64> = 631_152_000_000_000..4_102_444_800_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TsKind {
    Exact,
    Local,
    YearInferred,
    Envelope,
    /// written by a collector of other processes' lines (mpirun --timestamp-output): its own clock,
    /// not the clock of the host the line is about; the line's own time wins
    Collector,
    Interpolated,
    None,
}

impl TsKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TsKind::Exact => "exact",
            TsKind::Local => "local",
            TsKind::YearInferred => "year_inferred",
            TsKind::Envelope => "envelope",
            TsKind::Collector => "collector",
            TsKind::Interpolated => "interpolated",
            TsKind::None => "none",
        }
    }
    /// Lower is better when a line has two times (its own and its envelope's).
    pub fn rank(self) -> u8 {
        match self {
            TsKind::Exact => 0,
            TsKind::Local => 1,
            TsKind::YearInferred => 2,
            TsKind::Envelope => 3,
            TsKind::Collector => 4,
            TsKind::Interpolated => 5,
            TsKind::None => 6,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Layout {
    layout: String,
    zone: Zone,
    infer_year: bool,
    comma: Fix, // "17:10:08,943" under a %.f layout
    t_sep: Fix, // "2026-03-02T03:12" under a %d %H layout
    month_pad: bool,
    /// the layout compiled for the fast path (None: chrono reads every text)
    fast: Option<Fast>,
    pub kind: TsKind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Zone {
    Utc,
    Offset,
    Naive,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fix {
    No,
    First,        // replace the first occurrence
    BetweenDigits, // replace the first occurrence between two digits
}

fn names_words(layout: &str) -> bool {
    ["%a", "%A", "%b", "%B", "%h", "%p", "%P"].iter().any(|d| layout.contains(d))
}

impl Layout {
    pub fn new(spec: &TimeSpec) -> Layout {
        let mut layout = spec.layout.split_whitespace().collect::<Vec<_>>().join(" ");
        let comma = if !layout.contains("%.f") {
            Fix::No
        } else if layout.contains(',') {
            Fix::BetweenDigits
        } else {
            Fix::First
        };
        let t_sep = if !layout.contains("%d %H") {
            Fix::No
        } else if names_words(&layout) {
            Fix::BetweenDigits
        } else {
            Fix::First
        };
        let month_pad = layout.starts_with("%m%d");
        let infer_year = spec.year == "infer";
        if infer_year {
            layout = format!("%Y {layout}");
        }
        let zone = match spec.zone.as_str() {
            "utc" => Zone::Utc,
            "offset" => Zone::Offset,
            _ => Zone::Naive,
        };
        let kind = if infer_year {
            TsKind::YearInferred
        } else if spec.clock == "collector" {
            TsKind::Collector
        } else if zone == Zone::Naive {
            TsKind::Local
        } else {
            TsKind::Exact
        };
        let fast = Fast::compile(&layout, zone == Zone::Offset);
        Layout { layout, zone, infer_year, comma, t_sep, month_pad, fast, kind }
    }

    /// UTC microseconds of `text`, None when it does not parse.
    pub fn parse(&self, text: &str, tz: &Zoner) -> Option<i64> {
        if let Some(f) = &self.fast {
            if let Some(t) = self.parse_fast(f, text, tz) {
                return Some(t);
            }
        }
        self.parse_chrono(text, tz)
    }

    /// `parse_chrono`'s normalisations on a stack buffer, then the fast
    /// steps; None when chrono must decide.
    fn parse_fast(&self, f: &Fast, text: &str, tz: &Zoner) -> Option<i64> {
        const ROOM: usize = 64;
        let t = text.trim().as_bytes();
        if !t.is_ascii() || t.len() >= ROOM {
            return None;
        }
        let mut buf = [0u8; ROOM + 16];
        let year = PLACEHOLDER_TEXT;
        let start = if self.infer_year { year.len() + 1 } else { 0 };
        let mut n = start + t.len();
        buf[start..n].copy_from_slice(t);
        fix_first(&mut buf[start..n], self.comma, b',', b'.');
        fix_first(&mut buf[start..n], self.t_sep, b'T', b' ');
        if self.month_pad {
            let b = &buf[start..n];
            if b.len() >= 3 && b[..3].iter().all(u8::is_ascii_digit) && (b.len() == 3 || !is_word(b[3])) {
                buf.copy_within(start..n, start + 1);
                buf[start] = b'0';
                n += 1;
            }
        }
        if self.infer_year {
            buf[..year.len()].copy_from_slice(year);
            buf[year.len()] = b' ';
        }
        let s = &buf[..n];
        let ends_z = s.last() == Some(&b'Z');
        match self.zone {
            Zone::Offset => {
                let p = if ends_z {
                    let mut z = [0u8; ROOM + 24];
                    z[..n - 1].copy_from_slice(&s[..n - 1]);
                    z[n - 1..n + 5].copy_from_slice(b"+00:00");
                    f.parse(&z[..n + 5])?
                } else {
                    f.parse(s)?
                };
                Some(p.micros() - p.offset as i64 * 1_000_000)
            }
            Zone::Utc => Some(f.parse(s)?.micros()),
            Zone::Naive if ends_z && !self.layout.ends_with('Z') => {
                Some(f.parse(&s[..n - 1])?.micros())
            }
            Zone::Naive => {
                let p = f.parse(s)?;
                match tz {
                    Zoner::Utc => Some(p.micros()), // to_utc's, without the NaiveDateTime
                    Zoner::Named(_) => tz.to_utc(p.naive()),
                }
            }
        }
    }

    /// chrono reads the normalised text with the layout.
    fn parse_chrono(&self, text: &str, tz: &Zoner) -> Option<i64> {
        let mut s: String = text.trim().to_string();
        s = replace_first(&s, self.comma, b',', b'.');
        s = replace_first(&s, self.t_sep, b'T', b' ');
        if self.month_pad {
            // ^(\d{3})\b -> 0\1
            let b = s.as_bytes();
            if b.len() >= 3
                && b[..3].iter().all(u8::is_ascii_digit)
                && (b.len() == 3 || !is_word(b[3]))
            {
                s.insert(0, '0');
            }
        }
        if self.infer_year {
            s = format!("{PLACEHOLDER_YEAR} {s}");
        }
        match self.zone {
            Zone::Offset => {
                if s.ends_with('Z') {
                    s.pop();
                    s.push_str("+00:00");
                }
                DateTime::parse_from_str(&s, &self.layout).ok().map(|d| d.timestamp_micros())
            }
            Zone::Utc => parse_naive(&s, &self.layout).map(|n| n.and_utc().timestamp_micros()),
            // A trailing Z the layout does not spell is UTC, whatever --tz says.
            Zone::Naive if s.ends_with('Z') && !self.layout.ends_with('Z') => {
                parse_naive(&s[..s.len() - 1], &self.layout).map(|n| n.and_utc().timestamp_micros())
            }
            Zone::Naive => parse_naive(&s, &self.layout).and_then(|n| tz.to_utc(n)),
        }
    }
}

fn parse_naive(s: &str, layout: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(s, layout).ok()
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// `replace_first` in place (the same byte is replaced: ASCII for ASCII).
fn fix_first(b: &mut [u8], fix: Fix, from: u8, to: u8) {
    if let Some(i) = find_fix(b, fix, from) {
        b[i] = to;
    }
}

fn find_fix(b: &[u8], fix: Fix, from: u8) -> Option<usize> {
    match fix {
        Fix::No => None,
        Fix::First => memchr::memchr(from, b),
        Fix::BetweenDigits => (1..b.len().saturating_sub(1))
            .find(|&i| b[i] == from && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit()),
    }
}

fn replace_first(s: &str, fix: Fix, from: u8, to: u8) -> String {
    let b = s.as_bytes();
    let at = match fix {
        Fix::No => None,
        Fix::First => memchr::memchr(from, b),
        Fix::BetweenDigits => (1..b.len().saturating_sub(1))
            .find(|&i| b[i] == from && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit()),
    };
    match at {
        None => s.to_string(),
        Some(i) => {
            let mut out = b.to_vec();
            out[i] = to;
            String::from_utf8(out).unwrap_or_else(|_| s.to_string())
        }
    }
}

/// The zone of times written without one (`--tz`, default UTC).
#[derive(Debug, Clone)]
pub enum Zoner {
    Utc,
    Named(Tz),
}

impl Zoner {
    pub fn new(name: &str) -> Result<Zoner, String> {
        if name.eq_ignore_ascii_case("utc") || name == "Etc/UTC" || name == "Z" {
            return Ok(Zoner::Utc);
        }
        name.parse::<Tz>().map(Zoner::Named).map_err(|_| format!("unknown time zone {name:?}"))
    }

    /// A local time to UTC: the earliest of an ambiguous time, None for a
    /// time the zone skips (a DST gap).
    pub fn to_utc(&self, n: NaiveDateTime) -> Option<i64> {
        match self {
            Zoner::Utc => Some(n.and_utc().timestamp_micros()),
            Zoner::Named(tz) => match tz.from_local_datetime(&n) {
                LocalResult::Single(d) => Some(d.timestamp_micros()),
                LocalResult::Ambiguous(a, b) => Some(a.timestamp_micros().min(b.timestamp_micros())),
                LocalResult::None => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(layout: &str, zone: &str, year: &str) -> TimeSpec {
        TimeSpec { field: "ts".into(), layout: layout.into(), zone: zone.into(), year: year.into(), clock: String::new() }
    }

    fn iso(us: i64) -> String {
        DateTime::from_timestamp_micros(us).unwrap().naive_utc().format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
    }

    #[test]
    fn python_logging_comma_and_iso_t() {
        let l = Layout::new(&spec("%Y-%m-%d %H:%M:%S%.f", "naive", "given"));
        assert_eq!(iso(l.parse("2026-03-02 17:10:08,943", &Zoner::Utc).unwrap()), "2026-03-02T17:10:08.943000");
        assert_eq!(iso(l.parse(" 2026-03-02T17:10:08.5 ", &Zoner::Utc).unwrap()), "2026-03-02T17:10:08.500000");
        assert_eq!(l.kind, TsKind::Local);
    }

    #[test]
    fn glog_unpadded_month_and_year_inference() {
        let l = Layout::new(&spec("%m%d %H:%M:%S%.f", "naive", "infer"));
        assert_eq!(iso(l.parse("519 10:52:31.5", &Zoner::Utc).unwrap()), "2000-05-19T10:52:31.500000");
        assert_eq!(iso(l.parse("1108 10:52:31.5", &Zoner::Utc).unwrap()), "2000-11-08T10:52:31.500000");
        assert_eq!(l.kind, TsKind::YearInferred);
    }

    #[test]
    fn offsets_and_z() {
        let l = Layout::new(&spec("%Y-%m-%dT%H:%M:%S%.f%:z", "offset", "given"));
        assert_eq!(iso(l.parse("2026-03-02T03:17:41.2+01:00", &Zoner::Utc).unwrap()), "2026-03-02T02:17:41.200000");
        assert_eq!(iso(l.parse("2026-03-02T03:17:41.2Z", &Zoner::Utc).unwrap()), "2026-03-02T03:17:41.200000");
        assert_eq!(l.kind, TsKind::Exact);
    }

    #[test]
    fn named_zone_dst() {
        let l = Layout::new(&spec("%Y-%m-%d %H:%M:%S", "naive", "given"));
        let z = Zoner::new("Europe/Berlin").unwrap();
        assert_eq!(iso(l.parse("2026-07-01 12:00:00", &z).unwrap()), "2026-07-01T10:00:00.000000");
        assert!(l.parse("2026-03-29 02:30:00", &z).is_none()); // skipped by DST
        assert!(l.parse("not a time", &z).is_none());
    }

    #[test]
    fn syslog_double_space() {
        let l = Layout::new(&spec("%b %d %H:%M:%S%.f", "naive", "infer"));
        assert_eq!(iso(l.parse("Mar  2 07:56:01", &Zoner::Utc).unwrap()), "2000-03-02T07:56:01.000000");
    }

    #[test]
    fn normalisations_before_parsing() {
        let cases = [
            // whitespace runs and tabs where the layout has one space
            ("Mar \t 2  07:56:01", "%b %d %H:%M:%S", "infer", "2000-03-02T07:56:01.000000"),
            // Python logging's comma before the fraction, an ISO T between date and time
            ("2026-03-02T17:10:08,943", "%Y-%m-%d %H:%M:%S%.f", "given", "2026-03-02T17:10:08.943000"),
            // a weekday with a T (Tue, Thu) is a word, not the date/time separator
            ("Thu Mar  5 03:12:09 2026", "%a %b %d %H:%M:%S %Y", "given", "2026-03-05T03:12:09.000000"),
            ("Tue Mar 03 03:12:09.5 2026", "%a %b %d %H:%M:%S%.f %Y", "given", "2026-03-03T03:12:09.500000"),
            // nanoseconds are cut to microseconds
            ("1108 10:52:31.512781555", "%m%d %H:%M:%S%.f", "infer", "2000-11-08T10:52:31.512781"),
            ("101 13:40:12.26", "%m%d %H:%M:%S%.f", "infer", "2000-01-01T13:40:12.260000"),
        ];
        for (text, layout, year, want) in cases {
            let l = Layout::new(&spec(layout, "naive", year));
            assert_eq!(iso(l.parse(text, &Zoner::Utc).expect(text)), want, "{text}");
        }
        let l = Layout::new(&spec("%a, %d %b %Y %H:%M:%S %z", "offset", "given"));
        assert_eq!(iso(l.parse("Thu, 05 Mar 2026 03:12:09 +0100", &Zoner::Utc).unwrap()), "2026-03-05T02:12:09.000000");
        let l = Layout::new(&spec("%Y-%m-%d", "naive", "given"));
        assert!(l.parse("not a time", &Zoner::Utc).is_none());
    }

    #[test]
    fn trailing_z_is_utc_under_any_tz() {
        let l = Layout::new(&spec("%Y-%m-%d %H:%M:%S%.f", "naive", "given"));
        let z = Zoner::new("Asia/Shanghai").unwrap();
        assert_eq!(iso(l.parse("2026-03-02T03:17:41.2Z", &z).unwrap()), "2026-03-02T03:17:41.200000");
        assert_eq!(iso(l.parse("2026-03-02T03:17:41.2", &z).unwrap()), "2026-03-01T19:17:41.200000");
    }

    /// The fast path answers exactly what chrono answers, or leaves the text
    /// to chrono; and it does answer the common shapes.
    #[test]
    fn fast_path_agrees_with_chrono() {
        let layouts = [
            ("%Y-%m-%d %H:%M:%S,%3f", "naive", "given"),
            ("%m%d %H:%M:%S%.f", "naive", "infer"),
            ("%Y-%m-%dT%H:%M:%S", "naive", "given"),
            ("%Y-%m-%dT%H:%M:%S%.f%#z", "offset", "given"),
            ("%Y-%m-%dT%H:%M:%S%.f%:z", "offset", "given"),
            ("%Y-%m-%dT%H:%M:%S,%6f%:z", "offset", "given"),
            ("%a, %d %b %Y %H:%M:%S %z", "offset", "given"),
            ("%d %b %Y %H:%M:%S %z", "offset", "given"),
            ("%Y-%m-%dT%H:%M:%S%.f", "naive", "given"),
            ("%Y-%m-%dT%H:%M:%S%.fZ", "utc", "given"),
            ("%Y-%m-%d %H:%M:%S", "naive", "given"),
            ("%Y-%m-%d %H:%M:%S%.f", "naive", "given"),
            ("%Y/%m/%d %H:%M:%S%.f", "naive", "given"),
            ("%m/%d/%Y %H:%M:%S", "naive", "given"),
            ("%m-%d %H:%M:%S", "naive", "infer"),
            ("%b %d %H:%M:%S%.f", "naive", "infer"),
            ("%Y-%m-%d_%H:%M:%S", "naive", "given"),
            ("%Y-%m-%d %H:%M", "naive", "given"),
            ("%s", "utc", "given"),
        ];
        let mut texts: Vec<String> = [
            // ISO and Python logging shapes
            "2026-03-02 17:10:08,943", "2026-03-02T17:10:08.943", "2026-03-02 17:10:08", "2026-03-02T17:10:08",
            "2026-03-02T03:17:41.2+01:00", "2026-03-02T03:17:41.2Z", "2026-03-02T03:17:41Z", "2026-03-02T03:17:41-07:30",
            "2026-03-02T03:17:41.123456+0100", "2026-03-02T03:17:41,123456+01:00", "2026-03-02T03:17:41.2+01",
            "2026-03-02T03:17:41.2+24:00", "2026-03-02T03:17:41.2+01:60", "2026-03-02T03:17:41.2 +01:00",
            "2026/03/02 17:10:08.5", "03/02/2026 17:10:08", "2026-03-02_17:10:08", "2026-03-02 17:10",
            // fractions of 1..12 digits, a dot without digits
            "2026-03-02T17:10:08.1", "2026-03-02T17:10:08.12", "2026-03-02T17:10:08.123",
            "2026-03-02T17:10:08.1234", "2026-03-02T17:10:08.12345", "2026-03-02T17:10:08.123456",
            "2026-03-02T17:10:08.1234567", "2026-03-02T17:10:08.12345678", "2026-03-02T17:10:08.123456789",
            "2026-03-02T17:10:08.1234567891", "2026-03-02T17:10:08.123456789123", "2026-03-02T17:10:08.",
            "2026-03-02 17:10:08,94", "2026-03-02 17:10:08,9431", "2026-03-02 17:10:08.943",
            // calendar edges: leap years, Feb 29/30, month 13, day 0/32, 24:00, 23:60, leap second
            "2024-02-29 00:00:00", "2023-02-29 00:00:00", "2000-02-29 12:00:00", "1900-02-29 12:00:00",
            "2026-02-30 00:00:00", "2026-04-31 00:00:00", "2026-12-31 23:59:59", "2026-13-01 00:00:00",
            "2026-00-10 00:00:00", "2026-01-00 00:00:00", "2026-01-32 00:00:00", "2026-03-02 24:00:00",
            "2026-03-02 23:60:00", "2026-03-02 23:59:60", "2026-03-02 23:59:60.5",
            // bad digits, short fields, padding, signs, trailing text
            "2026-0a-02 17:10:08", "2026-3-2 7:1:8", "26-03-02 17:10:08", "20260-03-02 17:10:08",
            "+2026-03-02 17:10:08", "-2026-03-02 17:10:08", "2026-03-02 17:10:08 ", " 2026-03-02 17:10:08",
            "2026-03-02  17:10:08", "2026-03-02\t17:10:08", "2026-03-02 17:10:08x", "2026-03-02 17:10:08.5x",
            "2026-03-02", "", "x", "2026-03-02 17:10:08Z", "2026-03-02T17:10:08.5Z",
            // glog / klog, syslog, year-less
            "0302 03:00:00.123456", "302 03:00:00.000000000", "1108 10:52:31.512781555", "101 13:40:12.26",
            "1231 23:59:59.999999", "0229 01:02:03.5", "0230 01:02:03.5", "1301 01:02:03", "302x 03:00:00",
            "Mar  2 07:56:01", "Mar 02 07:56:01.250", "mar 2 07:56:01", "MAR 12 07:56:01", "Feb 29 00:00:00",
            "Feb 30 00:00:00", "Mrz 2 07:56:01", "March 2 07:56:01", "Dec 31 23:59:59.999", "03-02 07:56:01",
            // RFC 2822
            "Thu, 05 Mar 2026 03:12:09 +0100", "Thu, 05 Mar 2026 03:12:09 -0000", "Fri, 05 Mar 2026 03:12:09 +0100",
            "05 Mar 2026 03:12:09 +01:00", "5 Mar 2026 03:12:09 +0100", "05 Mar 2026 03:12:09 GMT",
            // non-ASCII and epoch seconds
            "2026-03-02 17:10:08\u{a0}", "２026-03-02 17:10:08", "1772420000",
        ]
        .iter()
        .map(|s| s.replace("\\t", "\t").replace("\\u{a0}", "\u{a0}"))
        .collect();
        // every digit of a few shapes replaced by every other digit
        for base in ["2024-02-29T23:59:59.999999+05:30", "0229 23:59:59.999", "Feb 29 23:59:59"] {
            for i in 0..base.len() {
                if base.as_bytes()[i].is_ascii_digit() {
                    for d in b'0'..=b'9' {
                        let mut b = base.as_bytes().to_vec();
                        b[i] = d;
                        texts.push(String::from_utf8(b).unwrap());
                    }
                }
            }
        }
        let zones = [Zoner::Utc, Zoner::new("America/New_York").unwrap(), Zoner::new("Europe/Berlin").unwrap()];
        let mut answered = 0;
        for (layout, zone, year) in layouts {
            let l = Layout::new(&spec(layout, zone, year));
            for t in &texts {
                for tz in &zones {
                    let slow = l.parse_chrono(t, tz);
                    if let Some(f) = &l.fast {
                        if let Some(fast) = l.parse_fast(f, t, tz) {
                            answered += 1;
                            assert_eq!(Some(fast), slow, "{layout} ({zone}, {year}) on {t:?} in {tz:?}");
                        }
                    }
                    assert_eq!(l.parse(t, tz), slow, "{layout} on {t:?}");
                }
            }
        }
        assert!(answered > 500, "the fast path answered only {answered} times");
        for (layout, zone, year) in [("%Y-%m-%d %H:%M:%S", "naive", "given"), ("%b %d %H:%M:%S%.f", "naive", "infer"),
                                     ("%Y-%m-%dT%H:%M:%S%.f%:z", "offset", "given"), ("%m%d %H:%M:%S%.f", "naive", "infer")] {
            assert!(Layout::new(&spec(layout, zone, year)).fast.is_some(), "{layout}");
        }
        // no year to read (chrono refuses), no offset where the zone wants one
        assert!(Layout::new(&spec("%b %d %H:%M:%S", "naive", "given")).fast.is_none());
        for (layout, zone) in [("%a, %d %b %Y %H:%M:%S %z", "offset"), ("%Y-%m-%d %H:%M", "naive"), ("%s", "utc"), ("%Y-%m-%d %H:%M:%S", "offset")] {
            assert!(Layout::new(&spec(layout, zone, "given")).fast.is_none(), "{layout}");
        }
        assert_eq!(PLACEHOLDER_TEXT, PLACEHOLDER_YEAR.to_string().as_bytes());
    }

    #[test]
    fn unknown_zone_is_an_error() {
        assert!(Zoner::new("Mars/Olympus").is_err());
        assert!(matches!(Zoner::new("UTC"), Ok(Zoner::Utc)));
    }
}
