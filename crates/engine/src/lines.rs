//! read: raw bytes of one file -> batches of complete lines (line number,
//! byte offset, text), bounded by the caller's chunk size plus one line
//! capped at `max_line` bytes. A line's text is a span of its batch's one
//! buffer (`Lines`), not a String of its own: the peel and the events
//! borrow it, and a line costs no allocation before its Arrow row.
//!
//! A chunk is cut at its last newline; the tail waits for the next chunk (a
//! batch never splits a line). NUL and invalid UTF-8 become U+FFFD (DuckDB
//! text holds neither), counted for the file's `errors`. A line longer than
//! `max_line` bytes keeps its head (cut before a character it would split)
//! and the rest is skipped up to its newline. None of it depends on how the
//! stream was chunked: the same bytes give the same lines and counts.

/// A framed line: its number, its byte offset in the stream and where its
/// text lies in its `Lines`' buffer.
#[derive(Clone, Copy, Debug)]
pub struct Line {
    pub no: i64,
    pub offset: i64,
    at: usize,
    end: usize,
}

/// Framed lines and the buffer their texts are spans of (a clean chunk's
/// body goes in with one copy; the newlines between its lines stay in it).
#[derive(Default)]
pub struct Lines {
    text: String,
    lines: Vec<Line>,
}

impl Lines {
    pub fn len(&self) -> usize {
        self.lines.len()
    }
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
    #[inline]
    pub fn text(&self, l: &Line) -> &str {
        &self.text[l.at..l.end]
    }
    /// Emptied, its buffers kept (a caller that frames chunk after chunk into
    /// one Lines allocates nothing per chunk; examples/template_alone.rs).
    pub fn clear(&mut self) {
        self.text.clear();
        self.lines.clear();
    }
    /// Each line with its text, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&Line, &str)> + Clone {
        self.lines.iter().map(|l| (l, self.text(l)))
    }
    /// Line `no` at `offset`, its text copied in.
    pub fn push(&mut self, no: i64, offset: i64, text: &str) {
        let at = self.text.len();
        self.text.push_str(text);
        self.lines.push(Line { no, offset, at, end: self.text.len() });
    }
    /// The lines from index `n` on, moved (their text with them) into Lines of their own.
    pub fn split_off(&mut self, n: usize) -> Lines {
        let lines = self.lines.split_off(n);
        let Some(from) = lines.first().map(|l| l.at) else { return Lines::default() };
        let text = self.text.split_off(from);
        let lines = lines.into_iter().map(|l| Line { at: l.at - from, end: l.end - from, ..l }).collect();
        Lines { text, lines }
    }
}

#[derive(Debug, Default, Clone)]
pub struct ReadStats {
    pub bytes: u64,
    pub lines: u64,
    pub invalid_utf8: u64,
    pub nul_bytes: u64,
    pub truncated_lines: u64,
    pub crlf: bool,
    pub cr_only: bool,
    /// times outside PLAUSIBLE years, ignored (the line takes the previous time)
    pub implausible: u64,
}

pub struct Framer {
    pending: Vec<u8>,
    endings: Endings,
    skipping: bool,
    line_no: i64,
    offset: i64, // byte offset of pending[0] in the stream
    max_line: usize,
    pub stats: ReadStats,
}

impl Framer {
    pub fn new(max_line: usize) -> Framer {
        Framer { pending: Vec::new(), endings: Endings::Undecided, skipping: false, line_no: 1, offset: 0, max_line, stats: ReadStats::default() }
    }

    /// The complete lines that `chunk` finishes, appended to `out`; `eof`: the
    /// stream ended (the tail is a last line without newline).
    pub fn feed(&mut self, chunk: &[u8], eof: bool, out: &mut Lines) {
        self.stats.bytes += chunk.len() as u64;
        let mut buf = std::mem::take(&mut self.pending);
        if self.endings == Endings::Undecided {
            // The head is held until the line endings are known.
            buf.extend_from_slice(chunk);
            match decide_endings(&buf, eof) {
                Endings::Undecided => {
                    self.pending = buf;
                    return;
                }
                e => self.endings = e,
            }
            if self.endings == Endings::CrOnly {
                self.stats.cr_only = true;
                buf.iter_mut().filter(|b| **b == b'\r').for_each(|b| *b = b'\n');
            }
        } else if self.endings == Endings::CrOnly {
            buf.extend(chunk.iter().map(|&b| if b == b'\r' { b'\n' } else { b }));
        } else {
            buf.extend_from_slice(chunk);
        }
        let mut start = 0usize;
        if self.skipping {
            match memchr::memchr(b'\n', &buf) {
                None => {
                    self.offset += buf.len() as i64;
                    return;
                }
                Some(nl) => {
                    start = nl + 1;
                    self.offset += start as i64;
                    self.skipping = false;
                }
            }
        }
        let data = &buf[start..];
        let (body_end, rest_start) = if eof {
            (data.len(), data.len())
        } else {
            match memchr::memrchr(b'\n', data) {
                None => (0, 0),
                Some(cut) => (cut + 1, cut + 1),
            }
        };
        self.frame(&data[..body_end], out);
        let rest = &data[rest_start..];
        if rest.len() > self.max_line {
            // An over-long line: its head is the line, the rest is skipped.
            let head = cut(rest, self.max_line);
            let text = self.decode(head);
            out.push(self.line_no, self.offset, &text);
            self.line_no += 1;
            self.stats.lines += 1;
            self.stats.truncated_lines += 1;
            self.offset += rest.len() as i64;
            self.skipping = true;
        } else {
            self.pending = rest.to_vec();
        }
    }

    fn frame(&mut self, body: &[u8], out: &mut Lines) {
        if body.is_empty() {
            return;
        }
        // Nearly every chunk is valid UTF-8 without NUL: checked once here, not
        // line by line (a call per line cost more than the check itself).
        let clean = if memchr::memchr(0, body).is_none() { std::str::from_utf8(body).ok() } else { None };
        // A clean body goes into the buffer whole (one copy); its lines are spans of it.
        let base = out.text.len();
        if let Some(c) = clean {
            out.text.push_str(c);
        }
        let mut pos = 0usize;
        while pos < body.len() {
            let end = memchr::memchr(b'\n', &body[pos..]).map(|i| pos + i).unwrap_or(body.len());
            let mut line = &body[pos..end];
            if line.len() > self.max_line {
                // as if it had come in chunks: its head, the rest skipped
                line = cut(line, self.max_line);
                self.stats.truncated_lines += 1;
            } else if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
                self.stats.crlf = true;
            }
            // a line ends before '\r' or '\n', or where `cut` left whole characters: on a char boundary
            let offset = self.offset + pos as i64;
            if clean.map_or(false, |c| c.is_char_boundary(pos + line.len())) {
                out.lines.push(Line { no: self.line_no, offset, at: base + pos, end: base + pos + line.len() });
            } else {
                let text = self.decode(line);
                out.push(self.line_no, offset, &text);
            }
            self.line_no += 1;
            self.stats.lines += 1;
            pos = end + 1;
        }
        self.offset += body.len() as i64;
    }

    fn decode(&mut self, raw: &[u8]) -> String {
        let mut text = match std::str::from_utf8(raw) {
            Ok(s) if memchr::memchr(0, raw).is_none() => return s.to_string(),
            Ok(s) => s.to_string(),
            Err(_) => {
                self.stats.invalid_utf8 += 1;
                String::from_utf8_lossy(raw).into_owned()
            }
        };
        let nul = text.bytes().filter(|&b| b == 0).count() as u64;
        if nul > 0 {
            self.stats.nul_bytes += nul;
            text = text.replace('\0', "\u{FFFD}");
        }
        text
    }
}

/// How a file ends its lines, from its head.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Endings {
    Undecided,
    Lf,
    /// old Mac line endings: CR alone
    CrOnly,
}

/// A file is CR-only when the first ENDINGS_HEAD bytes (or all of it, if
/// shorter) hold a CR and no LF; undecided while fewer have come and none
/// was an LF.
const ENDINGS_HEAD: usize = 64 << 10;

fn decide_endings(head: &[u8], eof: bool) -> Endings {
    let window = &head[..head.len().min(ENDINGS_HEAD)];
    if memchr::memchr(b'\n', window).is_some() {
        return Endings::Lf;
    }
    if head.len() < ENDINGS_HEAD && !eof {
        return Endings::Undecided;
    }
    if memchr::memchr(b'\r', window).is_some() { Endings::CrOnly } else { Endings::Lf }
}

/// The first `max` bytes of a line, cut before a UTF-8 character the cut
/// would split.
fn cut(line: &[u8], max: usize) -> &[u8] {
    let mut end = max.min(line.len());
    let floor = end.saturating_sub(3);
    while end > floor && end < line.len() && (line[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    &line[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]], max_line: usize) -> (Vec<(i64, i64, String)>, ReadStats) {
        let mut f = Framer::new(max_line);
        let mut out = Lines::default();
        for c in chunks {
            f.feed(c, false, &mut out);
        }
        f.feed(b"", true, &mut out);
        (out.iter().map(|(l, t)| (l.no, l.offset, t.to_string())).collect(), f.stats)
    }

    #[test]
    fn a_cleared_lines_frames_as_a_new_one() {
        // One Lines cleared before each chunk holds that chunk's lines only, with the
        // numbers, offsets and texts a new Lines per chunk gets, and no text of the chunks before.
        let chunks: [&[u8]; 4] = [b"alpha 1\nbeta", b" 22\r\ngamma 333\n", b"\xff bad\nd", b"elta\n"];
        let (mut f1, mut f2) = (Framer::new(64), Framer::new(64));
        let mut kept = Lines::default();
        for (i, c) in chunks.iter().enumerate() {
            let eof = i + 1 == chunks.len();
            let mut fresh = Lines::default();
            f1.feed(c, eof, &mut fresh);
            kept.clear();
            f2.feed(c, eof, &mut kept);
            let got = |l: &Lines| l.iter().map(|(l, t)| (l.no, l.offset, t.to_string())).collect::<Vec<_>>();
            assert_eq!(got(&kept), got(&fresh));
            assert_eq!(kept.text.len(), fresh.text.len());
        }
    }

    #[test]
    fn lines_across_chunks_crlf_and_tail() {
        let (lines, st) = all(&[b"ab\r\ncd", b"e\nlast"], 100);
        assert_eq!(lines, vec![(1, 0, "ab".into()), (2, 4, "cde".into()), (3, 8, "last".into())]);
        assert!(st.crlf);
        assert_eq!(st.lines, 3);
    }

    #[test]
    fn nul_and_bad_utf8_are_replaced_and_counted() {
        let (lines, st) = all(&[b"a\0b\n\xffx\n"], 100);
        assert_eq!(lines[0].2, "a\u{FFFD}b");
        assert_eq!(lines[1].2, "\u{FFFD}x");
        assert_eq!((st.nul_bytes, st.invalid_utf8), (1, 1));
    }

    #[test]
    fn cr_only_files_are_split_at_cr() {
        let (lines, st) = all(&[b"a\rb\rc"], 100);
        assert_eq!(lines.iter().map(|l| l.2.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert!(st.cr_only);
    }

    fn chunked(data: &[u8], size: usize, max_line: usize) -> (Vec<(i64, i64, String)>, ReadStats) {
        let chunks: Vec<&[u8]> = data.chunks(size).collect();
        all(&chunks, max_line)
    }

    #[test]
    fn chunking_changes_nothing() {
        let cases: [&[u8]; 6] = [
            b"a\rb\rc\nd\n",                                    // CRs, then an LF: LF endings
            b"a\rb\rc\rd",                                       // CR only
            b"xxxxxxxxx\ryyyy\nafter\n",                         // over-long, a CR inside
            b"xxxxxxxxxxxx\x00\xff\nafter\n",                     // over-long, bad bytes in the cut part
            "xxxxxxx\u{e9}\u{e9}zz\nok\n".as_bytes(),              // over-long, the cut inside a character
            b"ab\r\ncd\r\n\r\nlast",
        ];
        for data in cases {
            let whole = all(&[data], 8);
            for size in 1..data.len() {
                let got = chunked(data, size, 8);
                assert_eq!(got.0, whole.0, "{data:?} in chunks of {size}");
                let (a, b) = (&got.1, &whole.1);
                assert_eq!((a.lines, a.invalid_utf8, a.nul_bytes, a.truncated_lines, a.crlf, a.cr_only),
                           (b.lines, b.invalid_utf8, b.nul_bytes, b.truncated_lines, b.crlf, b.cr_only),
                           "{data:?} in chunks of {size}");
            }
        }
        let (lines, _) = all(&["xxxxxxx\u{e9}zz\n".as_bytes()], 8);
        assert_eq!(lines[0].2, "xxxxxxx"); // not a broken half of the é
    }

    #[test]
    fn split_lines_keep_their_texts() {
        // a clean chunk (spans of its body) and one with a bad byte (decoded line by line)
        let framed = || {
            let (mut f, mut out) = (Framer::new(100), Lines::default());
            f.feed(b"one\r\ntwo\n", false, &mut out);
            f.feed(b"bad\xff\nfour\nfive", true, &mut out);
            out
        };
        let whole: Vec<String> = framed().iter().map(|(_, t)| t.to_string()).collect();
        assert_eq!(whole, ["one", "two", "bad\u{FFFD}", "four", "five"]);
        for n in 0..=whole.len() {
            let mut head = framed();
            let tail = head.split_off(n);
            let got: Vec<String> = head.iter().chain(tail.iter()).map(|(_, t)| t.to_string()).collect();
            assert_eq!(got, whole, "split at {n}");
            assert_eq!((head.len(), tail.len()), (n, whole.len() - n));
        }
    }

    #[test]
    fn over_long_line_keeps_its_head() {
        let long = vec![b'x'; 50];
        let (lines, st) = all(&[&long, b"yy\nok\n"], 10);
        assert_eq!(lines[0].2, "x".repeat(10));
        assert_eq!(lines[1].2, "ok");
        assert_eq!(lines[1].1, 53);
        assert_eq!(st.truncated_lines, 1);
    }
}
