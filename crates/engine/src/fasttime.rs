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

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

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
    /// this layout's memo entries (0: none)
    id: u64,
}

/// A parsed text: its naive time as seconds and nanoseconds since 1970-01-01
/// 00:00 (the naive time read as UTC), and an offset in seconds (0 when none).
pub struct Parts {
    pub secs: i64,
    pub nano: u32,
    pub offset: i32,
}

impl Parts {
    /// The naive time as UTC microseconds: chrono's `and_utc().timestamp_micros()` of it
    /// (whole seconds times 10^6 plus the microseconds of the fraction).
    #[inline]
    pub fn micros(&self) -> i64 {
        self.secs * 1_000_000 + (self.nano / 1_000) as i64
    }

    /// The naive time (for a named zone's local-to-UTC).
    pub fn naive(&self) -> NaiveDateTime {
        chrono::DateTime::from_timestamp(self.secs, self.nano).expect("a time the fast path read").naive_utc()
    }
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
        Some(Fast { steps, id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed) })
    }

    /// The fields of `s` (ASCII), None when chrono must decide.
    pub fn parse(&self, s: &[u8]) -> Option<Parts> {
        MEMO.with(|memo| {
            let mut memo = memo.borrow_mut();
            let slot = match memo.slots.iter().position(|e| e.id == self.id) {
                Some(k) => k,
                None => {
                    memo.evict ^= 1;
                    let k = memo.evict;
                    memo.slots[k] = Remembered { id: self.id, ..Default::default() };
                    k
                }
            };
            let e = &mut memo.slots[slot];
            // The steps whose bytes all lie before the first byte that differs
            // from the text before are done already (same length: a step that
            // reads to the end of the text reads as far).
            let mut from = 0;
            if e.text.len() == s.len() {
                let d = first_difference(&e.text, s);
                from = e.after.len();
                while from > 0 && e.after[from - 1].i + 1 > d {
                    from -= 1;
                }
            }
            e.after.truncate(from);
            e.text.clear();
            e.text.extend_from_slice(s);
            let st = self.run(s, from, &mut e.after)?;
            let At { i, y, mo, d, h, mi, sec, nano, off } = st;
            if i != s.len() || !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 59 {
                return None; // trailing text, out of range, or a leap second: chrono decides
            }
            // The date's first second, once a day: consecutive lines share their date, so chrono
            // validates and counts the date once a day, not once a line (with the word compare
            // above, -94 instructions a line of Fast::parse's 765 on the long run's srun output,
            // callgrind, session 12).
            if e.day.0 != (y, mo, d) {
                let first = i32::try_from(y)
                    .ok()
                    .and_then(|y| NaiveDate::from_ymd_opt(y, mo as u32, d as u32))
                    .map(|date| date.and_time(NaiveTime::MIN).and_utc().timestamp());
                e.day = ((y, mo, d), first);
            }
            // and_hms_nano_opt holds for these: h <= 23, mi <= 59, sec <= 59, nano < 10^9
            let secs = e.day.1? + h * 3600 + mi * 60 + sec;
            Some(Parts { secs, nano, offset: off })
        })
    }

    /// The steps from step `from` on (`after`: the state after each step
    /// before it), each step's state pushed onto `after`; None: a step fails.
    fn run(&self, s: &[u8], from: usize, after: &mut Vec<At>) -> Option<At> {
        let mut st = if from == 0 { At::default() } else { after[from - 1] };
        let skip_ws = |i: &mut usize| {
            while *i < s.len() && s[*i].is_ascii_whitespace() {
                *i += 1;
            }
        };
        for step in &self.steps[from..] {
            let i = &mut st.i;
            match *step {
                Step::Lit(c) => {
                    if s.get(*i) != Some(&c) {
                        return None;
                    }
                    *i += 1;
                }
                Step::Space => skip_ws(i),
                Step::Num(f, width) => {
                    skip_ws(i);
                    if f == Field::Year && matches!(s.get(*i), Some(b'+' | b'-')) {
                        return None; // signed years: chrono's business
                    }
                    let start = *i;
                    let mut v = 0i64;
                    while *i < s.len() && *i - start < width as usize && s[*i].is_ascii_digit() {
                        v = v * 10 + (s[*i] - b'0') as i64;
                        *i += 1;
                    }
                    if *i == start {
                        return None;
                    }
                    match f {
                        Field::Year => st.y = v,
                        Field::Month => st.mo = v,
                        Field::Day => st.d = v,
                        Field::Hour => st.h = v,
                        Field::Minute => st.mi = v,
                        Field::Second => st.sec = v,
                    }
                }
                Step::MonthName => {
                    let w = s.get(*i..*i + 3)?;
                    st.mo = match (w[0] | 32, w[1] | 32, w[2] | 32) {
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
                    *i += 3;
                }
                Step::Frac => {
                    if s.get(*i) == Some(&b'.') {
                        *i += 1;
                        let start = *i;
                        let mut v = 0u32;
                        while *i < s.len() && *i - start < 9 && s[*i].is_ascii_digit() {
                            v = v * 10 + (s[*i] - b'0') as u32;
                            *i += 1;
                        }
                        let n = *i - start;
                        if n == 0 {
                            return None;
                        }
                        st.nano = v * 10u32.pow(9 - n as u32);
                        while *i < s.len() && s[*i].is_ascii_digit() {
                            *i += 1; // digits past nanoseconds are ignored
                        }
                    }
                }
                Step::FracN(n) => {
                    let w = s.get(*i..*i + n as usize)?;
                    if !w.iter().all(u8::is_ascii_digit) {
                        return None;
                    }
                    let v = w.iter().fold(0u32, |a, &c| a * 10 + (c - b'0') as u32);
                    st.nano = v * 10u32.pow(9 - n as u32);
                    *i += n as usize;
                }
                Step::Offset => {
                    skip_ws(i);
                    let neg = match s.get(*i) {
                        Some(b'+') => false,
                        Some(b'-') => true,
                        _ => return None,
                    };
                    *i += 1;
                    let two = |at: usize| -> Option<i32> {
                        let w = s.get(at..at + 2)?;
                        if w[0].is_ascii_digit() && w[1].is_ascii_digit() {
                            Some(((w[0] - b'0') * 10 + (w[1] - b'0')) as i32)
                        } else {
                            None
                        }
                    };
                    let oh = two(*i)?;
                    *i += 2;
                    if s.get(*i) == Some(&b':') {
                        *i += 1;
                    }
                    let om = two(*i)?;
                    *i += 2;
                    if oh > 23 || om > 59 {
                        return None;
                    }
                    st.off = (oh * 3600 + om * 60) * if neg { -1 } else { 1 };
                }
            }
            after.push(st);
        }
        Some(st)
    }
}

/// The state of a parse after a step: where it is and the fields so far.
/// A step reads no byte at or past `i + 1` (it stops at `i`, having looked at it or not).
#[derive(Clone, Copy, Default)]
struct At {
    i: usize,
    y: i64,
    mo: i64,
    d: i64,
    h: i64,
    mi: i64,
    sec: i64,
    nano: u32,
    off: i32,
}

/// The last text a layout parsed, its state after each step, and the last
/// date it read: (year, month, day) and the date's first second since 1970
/// (None: no such date).
#[derive(Default)]
struct Remembered {
    id: u64,
    text: Vec<u8>,
    after: Vec<At>,
    day: ((i64, i64, i64), Option<i64>),
}

/// Where `a` and `b` (of one length) first differ (their length when equal),
/// compared a word at a time.
#[inline]
fn first_difference(a: &[u8], b: &[u8]) -> usize {
    let word = |c: &[u8], w: usize| u64::from_le_bytes(c[w * 8..w * 8 + 8].try_into().expect("8 bytes"));
    let n = a.len().min(b.len());
    for w in 0..n / 8 {
        let x = word(a, w) ^ word(b, w);
        if x != 0 {
            return w * 8 + x.trailing_zeros() as usize / 8;
        }
    }
    (n / 8 * 8..n).find(|&k| a[k] != b[k]).unwrap_or(n)
}

/// Consecutive lines' times share all but their last digits: a parse takes
/// up the previous one's state after the steps that read only the bytes the
/// two texts share. Two layouts at a time (a line's and its envelope's), per thread.
#[derive(Default)]
struct Memo {
    slots: [Remembered; 2],
    evict: usize,
}

thread_local! {
    static MEMO: std::cell::RefCell<Memo> = std::cell::RefCell::new(Memo::default());
}

/// Ids of compiled layouts (a memo entry is a layout's: the same id, the same steps).
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

#[cfg(test)]
mod tests {
    use super::*;

    /// A parse that takes up the previous text's steps reads what a parse
    /// from the start reads: every text of a run of one length (times a
    /// second, a minute, a day apart, out of range, cut short), in both orders.
    #[test]
    fn memo_reads_as_from_the_start() {
        let f = Fast::compile("%Y-%m-%d %H:%M:%S%.f", false).unwrap();
        let g = Fast::compile("%Y %b %d %H:%M:%S", false).unwrap(); // a second layout between, sharing the memo
        let texts = [
            "2026-03-02 03:00:00.305931", "2026-03-02 03:00:01.305931", "2026-03-02 03:01:01.000001", "2026-03-03 03:01:01.000001",
            "2026-02-30 03:01:01.000001", "2026-03-02 24:00:00.305931", "2026-03-02 03:00:60.305931", "2026-03-02 03:00:0x.305931",
            "2026-03-02 03:00:00 305931", "2026-03-02 03:00:00.3059xx", "2026-03-02 03:00:00.305931", "2026-03-02  3:00:00.305931",
            "2026-03-02 03:00:00.30593", "2026-03-02 03:00:00.3",
        ];
        let key = |p: Option<Parts>| p.map(|p| (p.naive(), p.offset));
        let mut some = 0;
        for order in [texts.to_vec(), texts.iter().rev().copied().collect()] {
            for t in order {
                let got = key(f.parse(t.as_bytes()));
                // the same text with nothing remembered
                let kept = MEMO.with(|m| std::mem::take(&mut *m.borrow_mut()));
                let want = key(f.parse(t.as_bytes()));
                MEMO.with(|m| *m.borrow_mut() = kept);
                assert_eq!(got, want, "{t}");
                if let Some((n, _)) = got {
                    assert_eq!(Some(n), NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f").ok(), "{t}");
                    some += 1;
                }
                assert!(g.parse(b"2026 Mar  2 03:00:00").is_some());
            }
        }
        assert!(some >= 12, "{some}");
    }

    /// `first_difference` finds what a byte-at-a-time search finds, in and past whole words.
    #[test]
    fn first_difference_is_bytewise() {
        let a = b"2026-03-02 03:00:00.305931+01:00";
        for n in 0..=a.len() {
            for d in 0..=n {
                let mut b = a[..n].to_vec();
                if d < n {
                    b[d] ^= 1;
                }
                let want = a[..n].iter().zip(&b).position(|(x, y)| x != y).unwrap_or(n);
                assert_eq!(first_difference(&a[..n], &b), want, "{n} {d}");
            }
        }
    }
}
