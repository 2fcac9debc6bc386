//! read: raw bytes of one file -> batches of complete lines (line number,
//! byte offset, text), bounded by the caller's chunk size plus one line
//! capped at `max_line` bytes.
//!
//! A chunk is cut at its last newline; the tail waits for the next chunk (a
//! batch never splits a line). NUL and invalid UTF-8 become U+FFFD (DuckDB
//! text holds neither), counted for the file's `errors`. A line longer than
//! `max_line` keeps its head and the rest is skipped up to its newline.

pub struct Line {
    pub no: i64,
    pub offset: i64,
    pub text: String,
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
    skipping: bool,
    line_no: i64,
    offset: i64, // byte offset of pending[0] in the stream
    max_line: usize,
    pub stats: ReadStats,
}

impl Framer {
    pub fn new(max_line: usize) -> Framer {
        Framer { pending: Vec::new(), skipping: false, line_no: 1, offset: 0, max_line, stats: ReadStats::default() }
    }

    /// The complete lines that `chunk` finishes; `eof`: the stream ended (the
    /// tail is a last line without newline).
    pub fn feed(&mut self, chunk: &[u8], eof: bool) -> Vec<Line> {
        self.stats.bytes += chunk.len() as u64;
        if self.stats.bytes == chunk.len() as u64 && !chunk.is_empty()
            && memchr::memchr(b'\n', chunk).is_none() && memchr::memchr(b'\r', chunk).is_some()
        {
            // Old Mac line endings: a file whose first chunk has CRs and no LF.
            self.stats.cr_only = true;
        }
        let mut buf = std::mem::take(&mut self.pending);
        if self.stats.cr_only {
            buf.extend(chunk.iter().map(|&b| if b == b'\r' { b'\n' } else { b }));
        } else {
            buf.extend_from_slice(chunk);
        }
        let mut start = 0usize;
        if self.skipping {
            match memchr::memchr(b'\n', &buf) {
                None => {
                    self.offset += buf.len() as i64;
                    return Vec::new();
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
        let mut out = Vec::new();
        self.frame(&data[..body_end], &mut out);
        let rest = &data[rest_start..];
        if rest.len() > self.max_line {
            // An over-long line: its head is the line, the rest is skipped.
            let head = rest[..self.max_line].to_vec();
            self.frame(&head, &mut out);
            self.offset += (rest.len() - self.max_line) as i64;
            self.skipping = true;
            self.stats.truncated_lines += 1;
        } else {
            self.pending = rest.to_vec();
        }
        out
    }

    fn frame(&mut self, body: &[u8], out: &mut Vec<Line>) {
        if body.is_empty() {
            return;
        }
        if !self.stats.crlf && memchr::memmem::find(&body[..body.len().min(65536)], b"\r\n").is_some() {
            self.stats.crlf = true;
        }
        let mut pos = 0usize;
        while pos < body.len() {
            let end = memchr::memchr(b'\n', &body[pos..]).map(|i| pos + i).unwrap_or(body.len());
            let mut line = &body[pos..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            out.push(Line { no: self.line_no, offset: self.offset + pos as i64, text: self.decode(line) });
            self.line_no += 1;
            self.stats.lines += 1;
            pos = end + 1;
        }
        self.offset += body.len() as i64;
    }

    fn decode(&mut self, raw: &[u8]) -> String {
        let mut text = match std::str::from_utf8(raw) {
            Ok(s) if memchr::memchr(0, raw).is_none() => return self.cap(s.to_string()),
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
        self.cap(text)
    }

    /// A line longer than max_line characters keeps its first max_line.
    fn cap(&mut self, text: String) -> String {
        if text.len() <= self.max_line {
            return text;
        }
        match text.char_indices().nth(self.max_line) {
            None => text,
            Some((i, _)) => {
                self.stats.truncated_lines += 1;
                text[..i].to_string()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]], max_line: usize) -> (Vec<(i64, i64, String)>, ReadStats) {
        let mut f = Framer::new(max_line);
        let mut out = Vec::new();
        for c in chunks {
            out.extend(f.feed(c, false));
        }
        out.extend(f.feed(b"", true));
        (out.into_iter().map(|l| (l.no, l.offset, l.text)).collect(), f.stats)
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
