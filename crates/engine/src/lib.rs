//! ranktrace-engine: the per-line ingest engine.
//!
//! It executes the catalog of parsers/ (compiled by the Python loader into a
//! JSON spec) over the raw bytes of a log file: lines are framed, peeled of
//! their envelopes, joined into blocks, claimed by the first pattern in
//! precedence order (first-character tables and one Aho-Corasick pass pick
//! the candidates), timed, classified and mined for facts, and leave as
//! Arrow record batches. One pass per line; no per-pattern pass over a batch.

pub mod blocks;
pub mod classes;
pub mod classify;
pub mod compile;
pub mod events;
pub mod fasttime;
pub mod guard;
pub mod identity;
pub mod lines;
pub mod lines_parquet;
pub mod literals;
pub mod marks;
pub mod out;
pub mod par;
pub mod peel;
pub mod rx;
pub mod shape;
pub mod spec;
pub mod stream;
pub mod summary;
pub mod timefmt;

use arrow_array::RecordBatch;
use compile::Catalog;
use lines::{Framer, Lines, ReadStats};
use peel::Peeled;
use std::sync::Arc;
use timefmt::Zoner;

pub use spec::CatalogSpec;

/// Most lines parsed as one batch (a bound on the engine's memory).
pub const MAX_BATCH_LINES: usize = 65_536;

/// The parsed part of a batch: events (the store's event_rows), the classes
/// they are the first of in their file (event_classes), and fact tables.
pub struct Output {
    pub events: RecordBatch,
    pub classes: RecordBatch,
    pub facts: Vec<(String, RecordBatch)>,
}

/// Which envelopes a file gets.
pub enum Envelopes {
    /// the line-scoped ones and the file-scoped ones its head calls for
    Sniff,
    /// exactly these (by name)
    Named(Vec<String>),
}

/// The parse of one file, fed its bytes in chunks.
pub struct FileParser {
    cat: Arc<Catalog>,
    file_id: i64,
    file: String,
    hints: Vec<events::Id>,
    tz: Zoner,
    framer: Framer,
    envelopes: Option<Vec<usize>>,
    want: Envelopes,
    /// the lines of a block left open at the end of the last batch
    carry: Lines,
    carried: events::Carried,
    /// identity carried over each stream of the file (stream.rs)
    streams: stream::Streams,
    prev_ts: Option<i64>,
    /// framed lines not parsed yet
    queued: Lines,
    /// parsed batches not handed out yet (a batch parsed in parallel leaves as several)
    ready: std::collections::VecDeque<Output>,
    /// threads per batch, when fixed (RANKTRACE_ENGINE_THREADS; tests)
    threads: Option<usize>,
    /// the line shapes seen, one memo per thread of a batch
    memos: Vec<shape::Memo>,
    /// the message shapes classify met, one memo per thread of a batch (kept from batch to batch)
    shapes: Vec<classify::Shapes>,
    /// whether lines of a shape met before take its structure (RANKTRACE_ENGINE_MEMO=0: no; tests)
    memo: bool,
    /// the classes of the file's lines numbered so far
    classes: classes::FileClasses,
    /// events per format so far (the catalog's order; the last: no format, 'raw')
    per_format: Vec<u64>,
    eof: bool,
    done: bool,
}

impl FileParser {
    pub fn new(cat: Arc<Catalog>, file_id: i64, file: String, hints: &[(String, String)], tz: &str,
               envelopes: Envelopes, max_line: usize) -> Result<FileParser, String> {
        let hints = cat
            .identity
            .iter()
            .map(|c| hints.iter().find(|(k, _)| k == c).map_or(events::Id::None, |(_, v)| events::Id::Text(events::shared(v))))
            .collect();
        let n_formats = cat.formats.len();
        Ok(FileParser {
            tz: Zoner::new(tz)?,
            cat,
            file_id,
            file,
            hints,
            framer: Framer::new(max_line),
            envelopes: None,
            want: envelopes,
            carry: Lines::default(),
            carried: events::Carried::default(),
            streams: Default::default(),
            prev_ts: None,
            queued: Lines::default(),
            ready: Default::default(),
            threads: std::env::var("RANKTRACE_ENGINE_THREADS").ok().and_then(|v| v.parse().ok()),
            memos: Vec::new(),
            shapes: Vec::new(),
            memo: std::env::var("RANKTRACE_ENGINE_MEMO").map_or(true, |v| v != "0"),
            classes: Default::default(),
            per_format: vec![0; n_formats + 1],
            eof: false,
            done: false,
        })
    }

    pub fn stats(&self) -> &ReadStats {
        &self.framer.stats
    }

    /// How the lines were read (shape.rs): of a shape met before, new, own.
    pub fn memo_stats(&self) -> shape::MemoStats {
        self.memos.iter().fold(Default::default(), |a, m| shape::MemoStats {
            hits: a.hits + m.stats.hits,
            new: a.new + m.stats.new,
            own: a.own + m.stats.own,
        })
    }

    /// Events so far per format ('raw': claimed by none), formats with none left out.
    pub fn format_counts(&self) -> Vec<(&str, u64)> {
        let names = self.cat.formats.iter().map(|f| f.name.as_str()).chain(["raw"]);
        names.zip(self.per_format.iter().copied()).filter(|&(_, n)| n > 0).collect()
    }

    /// Names of the file-scoped envelopes the file was found to carry.
    pub fn file_envelopes(&self) -> Vec<String> {
        self.envelopes
            .iter()
            .flatten()
            .map(|&i| &self.cat.envelopes[i])
            .filter(|e| e.file_scope)
            .map(|e| e.name.clone())
            .collect()
    }

    /// Frame the lines `chunk` completes (all of them when `eof`: the last
    /// chunk); `next_batch` parses them.
    pub fn feed(&mut self, chunk: &[u8], eof: bool) {
        self.framer.feed(chunk, eof, &mut self.queued);
        self.eof = eof;
    }

    /// The next batch of the lines fed so far, parsed: at most MAX_BATCH_LINES
    /// lines at a time (memory goes with lines, not bytes: 4 MB of "x\n" are
    /// 2 M lines), None when nothing is left to parse until the next feed.
    pub fn next_batch(&mut self) -> Option<Output> {
        if let Some(o) = self.ready.pop_front() {
            return Some(o);
        }
        let _active = par::Active::enter();
        if self.queued.len() > MAX_BATCH_LINES {
            let rest = self.queued.split_off(MAX_BATCH_LINES);
            let batch = std::mem::replace(&mut self.queued, rest);
            return self.process(batch, false);
        }
        if self.done || (self.queued.is_empty() && !(self.eof && !self.carry.is_empty())) {
            return None;
        }
        if self.envelopes.is_none() && !self.eof && !self.head_known() {
            return None; // the envelopes are sniffed from the head: wait for all of it
        }
        let batch = std::mem::take(&mut self.queued);
        self.done = self.eof;
        self.process(batch, self.eof)
    }

    /// Whether the lines queued hold the whole head that `peel::sniff`
    /// reads, so that the envelopes do not depend on how the file was chunked.
    fn head_known(&self) -> bool {
        peel::head_len(self.queued.iter().map(|(_, t)| t)).1
    }

    /// `lines`: (line number, offset, text) of the batch.
    fn pick_envelopes(&mut self, lines: &[(i64, i64, &str)]) {
        let cat = &self.cat;
        let mut envs: Vec<usize> = match &self.want {
            Envelopes::Named(names) => {
                cat.envelopes.iter().enumerate().filter(|(_, e)| names.contains(&e.name)).map(|(i, _)| i).collect()
            }
            Envelopes::Sniff => {
                let sniffed = peel::sniff(cat, lines.iter().map(|l| l.2));
                (0..cat.envelopes.len()).filter(|i| !cat.envelopes[*i].file_scope || sniffed.contains(i)).collect()
            }
        };
        envs.sort();
        self.envelopes = Some(envs);
        // the head read whole before the first batch is parsed: stream values reach back into it
        let n = peel::head_len(lines.iter().map(|l| l.2)).0;
        self.streams.head_end = if n == 0 { 0 } else { lines[n - 1].0 };
    }

    fn process(&mut self, lines: Lines, last: bool) -> Option<Output> {
        // The carried lines, then the batch's: their texts stay in the two buffers, which outlive
        // the batch's peeled lines and events (they borrow them).
        let carried = std::mem::take(&mut self.carry);
        let batch: Vec<(i64, i64, &str)> = carried.iter().chain(lines.iter()).map(|(l, t)| (l.no, l.offset, t)).collect();
        if self.envelopes.is_none() {
            self.pick_envelopes(&batch);
        }
        let cat = &*self.cat;
        let envs = self.envelopes.clone().unwrap();
        let (tz, hints) = (&self.tz, &self.hints);
        let threads = par::threads_for(batch.len(), self.threads);
        let prof = std::env::var_os("RANKTRACE_PROFILE").is_some();
        let mut t = std::time::Instant::now();
        let mut lap = |what: &str| {
            if prof {
                eprintln!("{what}: {:.3}s", t.elapsed().as_secs_f64());
                t = std::time::Instant::now();
            }
        };
        let cut = par::even(batch.len(), threads);
        let w = cat.start_words;
        let memo_on = self.memo;
        if self.memos.len() < threads {
            self.memos.resize_with(threads, Default::default);
        }
        let parts: Vec<(&[(i64, i64, &str)], &mut shape::Memo)> =
            cut.windows(2).map(|w| &batch[w[0]..w[1]]).zip(self.memos.iter_mut()).collect();
        let (peeled, starts): (Vec<_>, Vec<_>) = par::map(parts, |(lines, memo): (&[(i64, i64, &str)], &mut shape::Memo)| {
            let mut reader = shape::Reader::new(cat, &envs, tz, memo_on);
            // the block kinds each line may start
            let mut starts = vec![0u64; lines.len() * w];
            let peeled: Vec<Peeled> = lines
                .iter()
                .zip(starts.chunks_mut(w))
                .map(|(&(no, offset, text), row)| reader.read(memo, no, offset, text, row))
                .collect();
            (peeled, starts)
        })
        .into_iter()
        .unzip();
        let (mut peeled, starts) = (par::concat(peeled), par::concat(starts));
        lap("peel");
        // A line's stream matters only to blocks: in a batch where no line may start one (most
        // batches of a long run) no line is in a block and none waits for the next batch (`find`
        // and `carry_from` give that without reading the streams), and the streams are not made
        // (a key of each line's envelope identity hashed, then the blocks' passes: 433
        // instructions a line on an srun output, whose ranks interleave; callgrind, session 11).
        let may_start = starts.iter().any(|&w| w != 0);
        let stream = if may_start { blocks::streams(cat, &peeled) } else { Vec::new() };
        let (block, start_of) = if may_start {
            blocks::find(cat, &peeled, &stream, &starts)
        } else {
            (vec![blocks::NO_BLOCK; peeled.len()], vec![usize::MAX; peeled.len()])
        };
        lap("blocks");
        let mut keep = peeled.len();
        if !last && may_start {
            if let Some(s) = blocks::carry_from(cat, &peeled, &stream, &block, &start_of) {
                // A block open at the end of the batch waits for the next one
                // (bounded: blocks::CARRY_LIMIT lines).
                keep = s;
                for p in peeled.drain(keep..) {
                    self.carry.push(p.no, p.offset, p.raw);
                }
            }
        }
        let cut = par::cuts(&block[..keep], &start_of[..keep], threads);
        let mut events: Vec<Vec<events::Event>> = par::map(
            par::split_mut(&mut peeled, &cut).into_iter().zip(cut.windows(2)).collect(),
            |(lines, r): (&mut [Peeled], &[usize])| {
                events::build(cat, lines, &block[r[0]..r[1]], &start_of[r[0]..r[1]], hints, tz)
            },
        );
        drop(peeled);
        lap("extract");
        // The parts stay apart to the end (concatenated, ~0.5 KB an event
        // was copied on one thread): carry and times go through them in order.
        events.retain(|evs| !evs.is_empty());
        if events.is_empty() {
            events.push(Vec::new()); // one batch, empty
        }
        for evs in events.iter_mut() {
            events::carry(cat, evs, &mut self.carried);
            for e in evs.iter() {
                self.per_format[classify::format_of(cat, e.src).unwrap_or(cat.formats.len())] += 1;
            }
            self.prev_ts = events::times(evs, self.prev_ts, &mut self.framer.stats.implausible);
        }
        lap("carry+times");
        let (file_id, file) = (self.file_id, self.file.as_str());
        let mut classes = Vec::with_capacity(events.len());
        let mut rows = Vec::with_capacity(events.len());
        let mut summaries = Vec::with_capacity(events.len());
        if self.shapes.len() < events.len() {
            self.shapes.resize_with(events.len(), Default::default);
        }
        let jobs: Vec<(&mut [events::Event], &mut classify::Shapes)> =
            events.iter_mut().map(Vec::as_mut_slice).zip(self.shapes.iter_mut()).collect();
        for (c, r, s) in par::map(jobs, |(evs, shapes): (&mut [events::Event], &mut classify::Shapes)| classify::read_with(cat, evs, memo_on, shapes)) {
            classes.push(c);
            rows.push(r);
            summaries.push(s);
        }
        // identity implied for a stream, after each line's own and its tokens' (in order, over the parts)
        stream::carry(cat, &mut events, &mut rows, &mut self.streams);
        let parts = par::map(
            events.iter().zip(classes.iter()).zip(rows.iter()).zip(summaries.iter()).collect(),
            |(((evs, classes), rows), summaries): (((&Vec<events::Event>, &Vec<classify::Class>), &Vec<classify::FactRow>), &Vec<summary::Facts>)| {
                (out::event_rows(cat, file_id, evs, classes, summaries, rows), out::fact_batches(cat, file_id, evs, rows, summaries))
            },
        );
        let schema = out::event_schema(cat);
        let mut outs: std::collections::VecDeque<Output> = parts
            .into_iter()
            .map(|((mut cols, local), facts)| {
                let (class_id, classes) = self.classes.assign(cat, file_id, file, local);
                let facts = out::with_line_class(facts, &class_id);
                cols.push(class_id);
                let events = RecordBatch::try_new(schema.clone(), cols).expect("events batch matches its schema");
                Output { events, classes, facts }
            })
            .collect();
        lap("classify+facts+arrow");
        if prof {
            eprintln!("message shapes read: {}", self.shapes.iter().map(|s| s.read).sum::<u64>());
        }
        let first = outs.pop_front(); // one part at least
        self.ready.extend(outs);
        first
    }
}

/// Compile a catalog spec (JSON from ranktrace.ingest.core).
pub fn compile(spec_json: &str) -> Result<Arc<Catalog>, String> {
    let spec = CatalogSpec::from_json(spec_json)?;
    Ok(Arc::new(Catalog::compile(&spec)?))
}
