//! A fast path for the time layouts the catalog declares, exact to chrono.
//!
//! chrono's `parse_from_str` re-reads the strftime layout on every call and
//! goes through its general `Parsed`; log lines are timed millions of times
//! with a dozen layouts. A layout made only of the items below is compiled
//! once into steps that do what chrono's parser does for them
//! (chrono-0.4 format/parse.rs: `Space` skips whitespace, a number skips
//! whitespace then takes 1..=width digits, `%.f` an optional dot and 1..9
//! digits with further digits skipped, `%3f` exactly 3 digits, `%b` three
//! letters case-blind, offsets `[+-]HH[:]MM`). The fast path only ever
//! answers for texts it fully understands with a valid date and time; any
//! other text (non-ASCII, a leap second, Feb 30, a short offset, ...) is
//! left to chrono: it can be slower, never different.

use chrono::{NaiveDate, NaiveDateTime};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Lit(u8),
    Space,
    /// a numeric field: which, at most `width` digits
    Num(Field, u8),
    MonthName,
    /// `%.f`: optional dot and digits
    Frac,
    /// `%3f`, `%6f`, `%9f`: exactly so many digits, no dot
    FracN(u8),
    Offset,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Field {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

/// A layout compiled into steps (None: a layout chrono alone reads).
#[derive(Debug, Clone)]
pub struct Fast {
    steps: Vec<Step>,
}

/// Fields of a parsed text: a naive time and an offset in seconds (0 when none).
pub struct Parts {
    pub naive: NaiveDateTime,
    pub offset: i32,
}

impl Fast {
    /// `with_offset`: the layout must carry an offset (`zone = "offset"`), or must not.
    pub fn compile(layout: &str, with_offset: bool) -> Option<Fast> {
        let b = layout.as_bytes();
        let mut steps = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c == b'%' {
                let rest = &b[i + 1..];
                let (step, used) = match rest {
                    [b'Y', ..] => (Step::Num(Field::Year, 4), 1),
                    [b'm', ..] => (Step::Num(Field::Month, 2), 1),
                    [b'd', ..] => (Step::Num(Field::Day, 2), 1),
                    [b'H', ..] => (Step::Num(Field::Hour, 2), 1),
                    [b'M', ..] => (Step::Num(Field::Minute, 2), 1),
                    [b'S', ..] => (Step::Num(Field::Second, 2), 1),
                    [b'b', ..] => (Step::MonthName, 1),
                    [b'.', b'f', ..] => (Step::Frac, 2),
                    [b'3', b'f', ..] => (Step::FracN(3), 2),
                    [b'6', b'f', ..] => (Step::FracN(6), 2),
                    [b'9', b'f', ..] => (Step::FracN(9), 2),
                    [b'z', ..] => (Step::Offset, 1),
                    [b':', b'z', ..] | [b'#', b'z', ..] => (Step::Offset, 2),
                    _ => return None,
                };
                steps.push(step);
                i += 1 + used;
            } else if c.is_ascii_whitespace() {
                // chrono: a run of whitespace in the layout is one Space item
                if steps.last() != Some(&Step::Space) {
                    steps.push(Step::Space);
                }
                i += 1;
            } else if c.is_ascii() {
                steps.push(Step::Lit(c));
                i += 1;
            } else {
                return None;
            }
        }
        // Every field exactly once (chrono would check repeats against each
        // other, and default or refuse missing ones); one fraction at most.
        let count = |f: &dyn Fn(&Step) -> bool| steps.iter().filter(|s| f(s)).count();
        let month = count(&|s| matches!(s, Step::Num(Field::Month, _) | Step::MonthName));
        for f in [Field::Year, Field::Day, Field::Hour, Field::Minute, Field::Second] {
            if count(&|s| matches!(s, Step::Num(g, _) if *g == f)) != 1 {
                return None;
            }
        }
        let fracs = count(&|s| matches!(s, Step::Frac | Step::FracN(_)));
        let offsets = count(&|s| matches!(s, Step::Offset));
        if month != 1 || fracs > 1 || offsets != usize::from(with_offset) {
            return None;
        }
        Some(Fast { steps })
    }

    /// The fields of `s` (ASCII), None when chrono must decide.
    pub fn parse(&self, s: &[u8]) -> Option<Parts> {
        let mut i = 0usize;
        let (mut y, mut mo, mut d, mut h, mut mi, mut sec, mut nano, mut off) = (0i64, 0, 0, 0, 0, 0, 0u32, 0i32);
        let skip_ws = |i: &mut usize| {
            while *i < s.len() && s[*i].is_ascii_whitespace() {
                *i += 1;
            }
        };
        for step in &self.steps {
            match *step {
                Step::Lit(c) => {
                    if s.get(i) != Some(&c) {
                        return None;
                    }
                    i += 1;
                }
                Step::Space => skip_ws(&mut i),
                Step::Num(f, width) => {
                    skip_ws(&mut i);
                    if f == Field::Year && matches!(s.get(i), Some(b'+' | b'-')) {
                        return None; // signed years: chrono's business
                    }
                    let start = i;
                    let mut v = 0i64;
                    while i < s.len() && i - start < width as usize && s[i].is_ascii_digit() {
                        v = v * 10 + (s[i] - b'0') as i64;
                        i += 1;
                    }
                    if i == start {
                        return None;
                    }
                    match f {
                        Field::Year => y = v,
                        Field::Month => mo = v,
                        Field::Day => d = v,
                        Field::Hour => h = v,
                        Field::Minute => mi = v,
                        Field::Second => sec = v,
                    }
                }
                Step::MonthName => {
                    let w = s.get(i..i + 3)?;
                    mo = match (w[0] | 32, w[1] | 32, w[2] | 32) {
                        (b'j', b'a', b'n') => 1,
                        (b'f', b'e', b'b') => 2,
                        (b'm', b'a', b'r') => 3,
                        (b'a', b'p', b'r') => 4,
                        (b'm', b'a', b'y') => 5,
                        (b'j', b'u', b'n') => 6,
                        (b'j', b'u', b'l') => 7,
                        (b'a', b'u', b'g') => 8,
                        (b's', b'e', b'p') => 9,
                        (b'o', b'c', b't') => 10,
                        (b'n', b'o', b'v') => 11,
                        (b'd', b'e', b'c') => 12,
                        _ => return None,
                    };
                    i += 3;
                }
                Step::Frac => {
                    if s.get(i) == Some(&b'.') {
                        i += 1;
                        let start = i;
                        let mut v = 0u32;
                        while i < s.len() && i - start < 9 && s[i].is_ascii_digit() {
                            v = v * 10 + (s[i] - b'0') as u32;
                            i += 1;
                        }
                        let n = i - start;
                        if n == 0 {
                            return None;
                        }
                        nano = v * 10u32.pow(9 - n as u32);
                        while i < s.len() && s[i].is_ascii_digit() {
                            i += 1; // digits past nanoseconds are ignored
                        }
                    }
                }
                Step::FracN(n) => {
                    let w = s.get(i..i + n as usize)?;
                    if !w.iter().all(u8::is_ascii_digit) {
                        return None;
                    }
                    let v = w.iter().fold(0u32, |a, &c| a * 10 + (c - b'0') as u32);
                    nano = v * 10u32.pow(9 - n as u32);
                    i += n as usize;
                }
                Step::Offset => {
                    skip_ws(&mut i);
                    let neg = match s.get(i) {
                        Some(b'+') => false,
                        Some(b'-') => true,
                        _ => return None,
                    };
                    i += 1;
                    let two = |at: usize| -> Option<i32> {
                        let w = s.get(at..at + 2)?;
                        if w[0].is_ascii_digit() && w[1].is_ascii_digit() {
                            Some(((w[0] - b'0') * 10 + (w[1] - b'0')) as i32)
                        } else {
                            None
                        }
                    };
                    let oh = two(i)?;
                    i += 2;
                    if s.get(i) == Some(&b':') {
                        i += 1;
                    }
                    let om = two(i)?;
                    i += 2;
                    if oh > 23 || om > 59 {
                        return None;
                    }
                    off = (oh * 3600 + om * 60) * if neg { -1 } else { 1 };
                }
            }
        }
        if i != s.len() || !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 59 {
            return None; // trailing text, out of range, or a leap second: chrono decides
        }
        let date = NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, mo as u32, d as u32)?;
        let naive = date.and_hms_nano_opt(h as u32, mi as u32, sec as u32, nano)?;
        Some(Parts { naive, offset: off })
    }
}
