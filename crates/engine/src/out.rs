//! Arrow record batches of events and facts: the columns of the store's
//! `event_rows` (each event's class: classes.rs) and of each fact table
//! (plus event_id, file_id).

use crate::classes;
use crate::summary;
use crate::classify::{self, Class, FactRow, Val};
use crate::compile::{Catalog, FType};
use crate::events::{Event, Id};
use crate::timefmt::TsKind;
use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use std::sync::Arc;

/// The columns of the store's `event_rows`: what is each line's own; the
/// rest is its class (classes.rs), the last column.
pub fn event_schema(cat: &Catalog) -> Arc<Schema> {
    let mut f = vec![];
    for n in ["event_id", "file_id", "line", "end_line", "byte_offset"] {
        f.push(Field::new(n, DataType::Int64, false));
    }
    f.push(Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true));
    f.push(Field::new("ts_text", DataType::Utf8, true));
    for (c, _) in cat.identity.iter().zip(&cat.int_identity).filter(|(_, &int)| int) {
        f.push(Field::new(c, DataType::Int64, true));
    }
    // The message is a span of raw, given as SQL's substr() takes it (1-based, in characters):
    // storing its text again cost DuckDB a third of the insert (queries/schema/001_tables.sql).
    f.push(Field::new("message_at", DataType::Int32, false));
    f.push(Field::new("message_len", DataType::Int32, false));
    f.push(Field::new("raw", DataType::Utf8, false));
    f.push(Field::new("marks", DataType::Int32, false));
    // Whether ts is still at the placeholder year (a year-less time, or one taken from it): the
    // year is chosen over the whole store, after the lines are written (store.py: the view moves it).
    f.push(Field::new("year_placeholder", DataType::Boolean, false));
    // The summaries' text tests, decided in the scan (summary.rs): the step a progress line
    // writes, whether a line of no kind says one, the NCCL communicator size, teardown.
    f.push(Field::new("step", DataType::Int64, true));
    f.push(Field::new("says_step", DataType::Boolean, true));
    f.push(Field::new("nranks", DataType::Int32, true));
    f.push(Field::new("teardown", DataType::Boolean, false));
    // The training position a line's progress facts give (`progress_positions`): what
    // queries/attempts/step_buckets.sql read by joining every line with fact table progress.
    f.push(Field::new("progress_lo", DataType::Int64, true));
    f.push(Field::new("progress_hi", DataType::Int64, true));
    f.push(Field::new("class_id", DataType::Int64, false));
    Arc::new(Schema::new(f))
}

/// An event's message as `substr(raw, at, len)` reads it: its 1-based
/// start and its length, in characters (bytes for an ASCII line).
fn message_chars(e: &Event) -> (i32, i32) {
    let (s, t) = (e.message.0 as usize, e.message.1 as usize);
    if e.ascii {
        return (s as i32 + 1, (t - s) as i32);
    }
    let before = e.raw[..s].chars().count();
    (before as i32 + 1, e.raw[s..t].chars().count() as i32)
}

/// The first and last microsecond of the placeholder year (timefmt.rs parses year-less times in 2000).
const PLACEHOLDER_YEAR_US: (i64, i64) = (946_684_800_000_000, 978_307_200_000_000);

/// Whether an event's time waits for its year: a year-less time, or an
/// interpolated one that a year-less line before it gave (the lines the
/// store's year inference moves: store.py).
fn year_placeholder(e: &Event) -> bool {
    match (e.ts_kind, e.ts) {
        (Some(TsKind::YearInferred), Some(_)) => true,
        (Some(TsKind::Interpolated), Some(t)) => (PLACEHOLDER_YEAR_US.0..PLACEHOLDER_YEAR_US.1).contains(&t),
        _ => false,
    }
}

/// `event_rows` remembers the last event of 2^STREAM_SLOT_BITS streams (4096 slots: the 128
/// tasks of the long run's srun output shared 256 slots often enough that a third of its
/// events missed; two streams meet in a slot with odds ~ streams / 4096).
const STREAM_SLOT_BITS: u32 = 12;
const STREAM_SLOTS: usize = 1 << STREAM_SLOT_BITS;

/// Events a bucket of `event_rows` keeps (one class each): a bucket holds
/// more than one class only when their hashes collide.
const BUCKET_EVENTS: usize = 8;

/// A part's events: the columns of `event_schema` but the class id (made
/// when the parts are put in file order: classes::FileClasses), and each
/// event's class.
/// `facts`: each event's summary facts (classify::read; `summary::of_events` reads the same).
/// `rows`: the events' fact rows (their progress facts give columns progress_lo, progress_hi).
pub fn event_rows(cat: &Catalog, file_id: i64, events: &[Event], classes: &[Class], facts: &[summary::Facts],
                  rows: &[FactRow]) -> (Vec<ArrayRef>, classes::Local) {
    // A few distinct envelope chains per file: each joined once.
    // A line's chain is most often the line before's: compared first, not hashed (the lookup a
    // line was ~1.3% of the engine's samples on the corpus node log, perf, session 21).
    let mut joined: rustc_hash::FxHashMap<&[u16], String> = Default::default();
    let mut before: &[u16] = &[];
    for e in events {
        let chain = e.envelopes.as_slice();
        if chain.is_empty() || chain == before {
            continue;
        }
        before = chain;
        if !joined.contains_key(chain) {
            let names: Vec<&str> = chain.iter().map(|&i| cat.envelopes[i as usize].name.as_str()).collect();
            joined.insert(chain, names.join(">"));
        }
    }
    let mut local = classes::Local::with_capacity(events.len());
    let mut key = Vec::with_capacity(256);
    // Events of each class met, by `classes::key_hash`: a file's lines take
    // a few dozen classes in turns (an NCCL rank's channel lines, its init
    // line, its step line, its timed ProcessGroupNCCL line, each rank's GPU
    // a class of its own), and for an event unlike the one before, hashing
    // its fields and comparing it with the event of its bucket costs less
    // than building and hashing its whole key. `same_key` is key
    // equality, so the class found is the one `add` would give.
    let mut seen: rustc_hash::FxHashMap<u64, Vec<(usize, u32)>> = Default::default();
    // The last event of each stream (`Event::stream_key`: an srun label, a `[rankN]:`), by a
    // few bits of its key: an srun output interleaves its tasks' lines, so the line before is
    // another task's, of another host (carried by stream.rs) and another class, for most lines
    // (94% on the long run), where the task's own line before is most often of the same class.
    // Two streams that share a slot only make its compare miss (`same_key` decides).
    let mut last_of = vec![u32::MAX; STREAM_SLOTS];
    // the mark bits of each class (marks.rs: ClassMarks), decided when the class is first met
    let mut class_bits: Vec<i32> = Vec::new();
    let mut raw_bytes = 0;
    for (i, (e, class)) in events.iter().zip(classes).enumerate() {
        raw_bytes += e.raw.len();
        let slot = (e.stream_key >> (64 - STREAM_SLOT_BITS)) as usize;
        let mine = std::mem::replace(&mut last_of[slot], i as u32) as usize;
        if e.stream_key != 0 && mine + 1 < i && classes::same_key(cat, &events[mine], &classes[mine], e, class) {
            let k = local.of[mine];
            local.push(k);
            continue;
        }
        if i > 0 && classes::same_key(cat, &events[i - 1], &classes[i - 1], e, class) {
            local.again();
            continue;
        }
        let bucket = seen.entry(classes::key_hash(cat, e, class)).or_default();
        if let Some(&(_, k)) = bucket.iter().find(|&&(j, _)| classes::same_key(cat, &events[j], &classes[j], e, class)) {
            local.push(k);
            continue;
        }
        classes::key(cat, e, class, joined.get(e.envelopes.as_slice()).map(String::as_str), &mut key);
        let k = local.add(&key);
        if k as usize == class_bits.len() {
            class_bits.push(cat.class_marks.of_class(class.kind, classify::format_of(cat, e.src), class.role));
        }
        if bucket.len() < BUCKET_EVENTS {
            bucket.push((i, k));
        }
    }
    // The columns of the events, in one pass over them: an Event is ~0.6 KB, and a pass per
    // column (each integer identity column among them) walked a part's events again each time
    // (20 MB for 32 K events, out of cache: 30% of this function's samples were one load).
    let n = events.len();
    let int_cols: Vec<usize> = (0..cat.identity.len()).filter(|&c| cat.int_identity[c]).collect();
    let (mut eid, mut line, mut end_line, mut offset) =
        (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    let mut ts = TimestampMicrosecondBuilder::with_capacity(n);
    let mut ts_text = StringBuilder::with_capacity(n, n * 16);
    let mut ints: Vec<Int64Builder> = int_cols.iter().map(|_| Int64Builder::with_capacity(n)).collect();
    let (mut at, mut len) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut raw = StringBuilder::with_capacity(n, raw_bytes);
    let mut marks = Vec::with_capacity(n);
    let mut placeholder = Vec::with_capacity(n);
    for ((e, f), &k) in events.iter().zip(facts).zip(&local.of) {
        eid.push((file_id << 32) + e.line);
        line.push(e.line);
        end_line.push(e.end_line);
        offset.push(e.offset);
        ts.append_option(e.ts);
        ts_text.append_option(e.ts_text.map(|s| e.span(s)));
        for (b, &c) in ints.iter_mut().zip(&int_cols) {
            b.append_option(if let Id::Int(v) = e.ids[c] { Some(v) } else { None });
        }
        let (a, l) = message_chars(e);
        at.push(a);
        len.push(l);
        raw.append_value(&*e.raw);
        let literal = e.marks.unwrap_or_else(|| cat.marks.of(&e.raw, e.ascii));
        marks.push(literal | class_bits[k as usize] | cat.class_marks.of_line(&e.raw, f.pods_row));
        placeholder.push(year_placeholder(e));
    }
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(arrow_array::Int64Array::from(eid)),
        Arc::new(arrow_array::Int64Array::from_iter_values(std::iter::repeat(file_id).take(n))),
        Arc::new(arrow_array::Int64Array::from(line)),
        Arc::new(arrow_array::Int64Array::from(end_line)),
        Arc::new(arrow_array::Int64Array::from(offset)),
        Arc::new(ts.finish()),
        Arc::new(ts_text.finish()),
    ];
    cols.extend(ints.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
    cols.push(Arc::new(arrow_array::Int32Array::from(at)));
    cols.push(Arc::new(arrow_array::Int32Array::from(len)));
    cols.push(Arc::new(raw.finish()));
    cols.push(Arc::new(arrow_array::Int32Array::from(marks)));
    cols.push(Arc::new(arrow_array::BooleanArray::from_iter(placeholder.into_iter().map(Some))));
    cols.push(Arc::new(arrow_array::Int64Array::from_iter(facts.iter().map(|f| f.step))));
    cols.push(Arc::new(arrow_array::BooleanArray::from_iter(facts.iter().map(|f| f.says_step))));
    cols.push(Arc::new(arrow_array::Int32Array::from_iter(facts.iter().map(|f| f.nranks))));
    cols.push(Arc::new(arrow_array::BooleanArray::from_iter(facts.iter().map(|f| Some(f.teardown)))));
    let (lo, hi) = progress_positions(cat, n, rows);
    cols.push(Arc::new(arrow_array::Int64Array::from(lo)));
    cols.push(Arc::new(arrow_array::Int64Array::from(hi)));
    (cols, local)
}

/// The columns of fact table `progress` a position is made of: (table, step, epoch), by index;
/// None when the catalog has no progress facts with an integer step.
fn progress_columns(cat: &Catalog) -> Option<(usize, usize, Option<usize>)> {
    let t = cat.tables.iter().position(|t| t.name == "progress")?;
    let col = |name: &str| cat.tables[t].cols.iter().position(|(c, ty)| c == name && matches!(ty, FType::Int));
    Some((t, col("step")?, col("epoch")))
}

/// Each event's least and greatest training position among its rows of fact table `progress`
/// whose step is known: `coalesce(epoch, 0) * 1000000000 + step`, as step_buckets.sql computed
/// it joining every line with the table (`JOIN progress p USING (event_id) WHERE p.step IS NOT
/// NULL`: the step after the epoch, so that a per-epoch batch counter that starts again at 0 is
/// no step back). None for an event without such a row. (A position past BIGINT, which made
/// DuckDB's join fail with an overflow, is left out.)
pub fn progress_positions(cat: &Catalog, n: usize, rows: &[FactRow]) -> (Vec<Option<i64>>, Vec<Option<i64>>) {
    positions(progress_columns(cat), n, rows)
}

/// `progress_positions` given the columns: (table, step, epoch) by index.
fn positions(cols: Option<(usize, usize, Option<usize>)>, n: usize, rows: &[FactRow]) -> (Vec<Option<i64>>, Vec<Option<i64>>) {
    let (mut lo, mut hi) = (vec![None; n], vec![None; n]);
    let Some((t, step, epoch)) = cols else { return (lo, hi) };
    for r in rows.iter().filter(|r| r.table == t) {
        let Val::Int(s) = r.values[step] else { continue };
        let e = match epoch.map(|c| &r.values[c]) {
            Some(Val::Int(e)) => *e,
            _ => 0,
        };
        let Some(pos) = e.checked_mul(1_000_000_000).and_then(|x| x.checked_add(s)) else { continue };
        let (l, h) = (&mut lo[r.event], &mut hi[r.event]);
        *l = Some(l.map_or(pos, |v: i64| v.min(pos)));
        *h = Some(h.map_or(pos, |v: i64| v.max(pos)));
    }
    (lo, hi)
}

/// Fact tables whose rows carry their line's own columns (LINE_FACT_COLUMNS, after the fact's): what
/// identity.world_comms and store.imply_ranks read of the line, which they joined every line for
/// (nccl_world: 1.0-1.8 CPU-s of a 1 GB ingest's end, and again in every diagnose). The store's
/// schema has the same (ranktrace.store.LINE_FACTS).
pub const LINE_FACTS: &[&str] = &["nccl_comm"];
/// The line's columns of a LINE_FACTS row, in order: its int identity columns as the lines file has
/// them, its `nranks` (summary.rs), the rank of its srun `[rankN]:` prefix (`srun_rank`) and its
/// class id (numbered when the parts are put in file order: `with_line_class`).
pub const LINE_FACT_COLUMNS: &[&str] =
    &["line_rank", "line_local_rank", "line_pid", "line_task", "line_nranks", "line_srun_rank", "line_class_id"];

/// The rank of a line's inner `[rankN]:` prefix behind srun's `--label` task (`3: [rank5]: ...`,
/// `3: [default0]:[rank5]: ...`): what identity.SRUN_RANK reads from raw,
/// `TRY_CAST(nullif(regexp_extract(raw, '^\s*\d+:\s+(?:\[default\d+\]:)?\[rank(\d+)\]:', 1), '') AS INTEGER)`
/// (RE2: `\s` is [\t\n\f\r ], as u8::is_ascii_whitespace; `\d` ASCII; past INTEGER: NULL).
pub fn srun_rank(raw: &str) -> Option<i32> {
    fn digits(b: &[u8]) -> usize {
        b.iter().take_while(|c| c.is_ascii_digit()).count()
    }
    // `[rank(\d+)]:` at the start of `b`: Some(its value, None past INTEGER), None when it is not there
    fn tag(b: &[u8]) -> Option<Option<i32>> {
        let b = b.strip_prefix(b"[rank")?;
        let n = digits(b);
        if n == 0 || !b[n..].starts_with(b"]:") {
            return None;
        }
        Some(std::str::from_utf8(&b[..n]).ok()?.parse::<i32>().ok())
    }
    let b = raw.as_bytes();
    let mut i = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    let n = digits(&b[i..]);
    if n == 0 || b.get(i + n) != Some(&b':') {
        return None;
    }
    i += n + 1;
    let n = b[i..].iter().take_while(|c| c.is_ascii_whitespace()).count();
    if n == 0 {
        return None;
    }
    let rest = &b[i + n..];
    // the optional `[defaultN]:` first, as the regexp tries it before skipping it
    let behind_default = rest.strip_prefix(b"[default").and_then(|r| {
        let n = digits(r);
        (n > 0 && r[n..].starts_with(b"]:")).then(|| &r[n + 2..])
    });
    behind_default.and_then(tag).or_else(|| tag(rest)).flatten()
}

/// A part's fact batches with the line's class id appended to the rows of LINE_FACTS (`events`: the
/// rows' event index of each such table, from fact_batches; `class_id`: each event's).
pub fn with_line_class(facts: Vec<(String, RecordBatch, Vec<u32>)>, class_id: &ArrayRef) -> Vec<(String, RecordBatch)> {
    let ids = class_id.as_any().downcast_ref::<arrow_array::Int64Array>().expect("class ids are Int64");
    facts
        .into_iter()
        .map(|(table, batch, events)| {
            if !LINE_FACTS.contains(&table.as_str()) {
                return (table, batch);
            }
            let mut fields: Vec<Field> = batch.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
            fields.push(Field::new("line_class_id", DataType::Int64, false));
            let mut cols = batch.columns().to_vec();
            cols.push(Arc::new(arrow_array::Int64Array::from_iter_values(events.iter().map(|&e| ids.value(e as usize)))));
            (table, RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).expect("fact batch matches its schema"))
        })
        .collect()
}

/// One record batch per fact table that has rows: event_id, file_id, columns; for LINE_FACTS, the
/// line's columns but its class id (LINE_FACT_COLUMNS), and each row's event (else none).
pub fn fact_batches(cat: &Catalog, file_id: i64, events: &[Event], rows: &[FactRow], summaries: &[summary::Facts]
                    ) -> Vec<(String, RecordBatch, Vec<u32>)> {
    // Each table's rows in their order, from one pass over the rows: a pass per table (65 in the
    // catalog) over every row was ~900 instructions a line on a run of progress lines (callgrind).
    let mut by_table: Vec<Vec<&FactRow>> = (0..cat.tables.len()).map(|_| Vec::new()).collect();
    for r in rows {
        by_table[r.table].push(r);
    }
    let mut out = Vec::new();
    for (table, mine) in cat.tables.iter().zip(by_table) {
        if mine.is_empty() {
            continue;
        }
        let mut fields = vec![Field::new("event_id", DataType::Int64, false), Field::new("file_id", DataType::Int64, false)];
        let mut eid = Int64Builder::with_capacity(mine.len());
        let mut fid = Int64Builder::with_capacity(mine.len());
        for r in &mine {
            eid.append_value((file_id << 32) + events[r.event].line);
            fid.append_value(file_id);
        }
        let mut cols: Vec<ArrayRef> = vec![Arc::new(eid.finish()), Arc::new(fid.finish())];
        for (ci, (name, t)) in table.cols.iter().enumerate() {
            match t {
                FType::Str => {
                    let mut b = StringBuilder::new();
                    mine.iter().for_each(|r| match &r.values[ci] {
                        Val::Str(s) => b.append_value(s),
                        _ => b.append_null(),
                    });
                    cols.push(Arc::new(b.finish()));
                    fields.push(Field::new(name, DataType::Utf8, true));
                }
                FType::Int => {
                    let mut b = Int64Builder::new();
                    mine.iter().for_each(|r| b.append_option(if let Val::Int(v) = r.values[ci] { Some(v) } else { None }));
                    cols.push(Arc::new(b.finish()));
                    fields.push(Field::new(name, DataType::Int64, true));
                }
                FType::Float => {
                    let mut b = Float64Builder::new();
                    mine.iter().for_each(|r| b.append_option(if let Val::Float(v) = r.values[ci] { Some(v) } else { None }));
                    cols.push(Arc::new(b.finish()));
                    fields.push(Field::new(name, DataType::Float64, true));
                }
            }
        }
        let mut of = Vec::new();
        if LINE_FACTS.contains(&table.name.as_str()) {
            of = mine.iter().map(|r| r.event as u32).collect();
            for c in ["rank", "local_rank", "pid", "task"] {
                let at = cat.identity.iter().zip(&cat.int_identity).position(|(n, &int)| int && n == c);
                let mut b = Int64Builder::with_capacity(mine.len());
                mine.iter().for_each(|r| b.append_option(at.and_then(|a| match events[r.event].ids[a] {
                    Id::Int(v) => Some(v),
                    _ => None,
                })));
                cols.push(Arc::new(b.finish()));
                fields.push(Field::new(format!("line_{c}"), DataType::Int64, true));
            }
            cols.push(Arc::new(arrow_array::Int32Array::from_iter(mine.iter().map(|r| summaries[r.event].nranks))));
            fields.push(Field::new("line_nranks", DataType::Int32, true));
            cols.push(Arc::new(arrow_array::Int32Array::from_iter(mine.iter().map(|r| srun_rank(&events[r.event].raw)))));
            fields.push(Field::new("line_srun_rank", DataType::Int32, true));
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).expect("fact batch matches its schema");
        out.push((table.name.clone(), batch, of));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(table: usize, event: usize, step: Val, epoch: Val) -> FactRow {
        FactRow { table, event, values: vec![step, Val::Null, epoch].into() }
    }

    #[test]
    fn srun_rank_reads_what_the_regexp_reads() {
        for (raw, want) in [
            ("0: [rank3]: x", Some(3)),
            ("  12:\t[default0]:[rank7]: x", Some(7)),
            ("1: [default0]:[rankx]: [rank2]: x", None),   // the default prefix then no rank tag: no match
            ("1: [default]:[rank2]: x", None),             // `[default]` without its digits is no prefix
            ("1: [rank002]:", Some(2)),
            ("1: [rank2147483648]:", None),                // past INTEGER (TRY_CAST)
            ("1:[rank2]:", None),                          // `\s+`: at least one
            ("1: [rank2] x", None),
            ("\u{b}1: [rank2]:", None),                    // a vertical tab is no `\s` of RE2's
            ("2026-01-01 [rank2]:", None),
            ("", None),
        ] {
            assert_eq!(srun_rank(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn positions_of_progress_rows() {
        let cols = Some((1, 0, Some(2)));
        let rows = [
            row(1, 0, Val::Int(7), Val::Null),          // no epoch: the step
            row(1, 1, Val::Int(5), Val::Int(2)),        // after its epoch
            row(1, 1, Val::Int(9), Val::Int(1)),        // a second row of the same line: least and greatest
            row(1, 2, Val::Null, Val::Int(3)),          // no step: no position
            row(0, 3, Val::Int(4), Val::Null),          // another table's row
            row(1, 4, Val::Int(1), Val::Int(i64::MAX / 1000)),   // past BIGINT: left out
        ];
        let (lo, hi) = positions(cols, 6, &rows);
        assert_eq!(lo, vec![Some(7), Some(1_000_000_009), None, None, None, None]);
        assert_eq!(hi, vec![Some(7), Some(2_000_000_005), None, None, None, None]);
        // a catalog without progress facts: none
        assert_eq!(positions(None, 2, &rows), (vec![None, None], vec![None, None]));
    }
}
