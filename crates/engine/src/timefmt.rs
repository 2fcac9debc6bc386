//! Captured time text -> UTC microseconds, from a chrono layout.
//!
//! The normalisations are those the catalog's layouts were written for:
//! Python logging's "17:10:08,943" read by a `%.f` layout, ISO "T" read by
//! `%d %H`, torch's c10 logger writing the month unpadded ("E519" is May 19),
//! year-less times parsed in a placeholder leap year (moved after ingest).

use crate::spec::TimeSpec;
use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone};
use chrono_tz::Tz;

/// Year-less times are parsed in this leap year (so Feb 29 parses).
pub const PLACEHOLDER_YEAR: i32 = 2000;

/// Times outside these years (UTC microseconds: 1990-01-01 .. 2100-01-01) are
/// taken for garbage (a year 0001 or 9999 in a log) and not used.
pub const PLAUSIBLE: std::ops::Range<i64> = 631_152_000_000_000..4_102_444_800_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsKind {
    Exact,
    Local,
    YearInferred,
    Envelope,
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
            TsKind::Interpolated => 4,
            TsKind::None => 5,
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
        } else if zone == Zone::Naive {
            TsKind::Local
        } else {
            TsKind::Exact
        };
        Layout { layout, zone, infer_year, comma, t_sep, month_pad, kind }
    }

    /// UTC microseconds of `text`, None when it does not parse.
    pub fn parse(&self, text: &str, tz: &Zoner) -> Option<i64> {
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
        TimeSpec { field: "ts".into(), layout: layout.into(), zone: zone.into(), year: year.into() }
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

    #[test]
    fn unknown_zone_is_an_error() {
        assert!(Zoner::new("Mars/Olympus").is_err());
        assert!(matches!(Zoner::new("UTC"), Ok(Zoner::Utc)));
    }
}
