//! stream: identity implied for a whole stream.
//!
//! Some values name a line's emitter, not just the line: the host of an NCCL
//! line (`host:pid:tid [dev] NCCL ...`) is the host of every line its process
//! wrote. The patterns and identity tokens that capture such a value say so
//! (`stream = ["host"]`); the value then fills that column on every line of
//! the same stream that has none of its own (or only a path hint). A stream
//! is a file, or within a file one envelope identity (`[rank3]:`, an srun
//! label, a pdsh host). Lines come in order: a value fills the lines after
//! the one that names it, and the lines of the file's head (peel::head_len,
//! read whole before the first batch is parsed) before it, so what a file
//! parses to does not depend on how it was chunked. A stream whose lines
//! name two values for a column (a console of several hosts) stops carrying
//! it; when its head names both, none of the head's lines takes either (they
//! are named only once the whole head is read). One envelope's stream (a
//! rank's `[1,0]<stdout>:` tag, `[rank3]:`) that names a second value past the
//! head has moved: its process runs elsewhere now (a requeue placed the job
//! on other nodes, and mpirun or srun tags rank 0 as before), so the new value
//! is carried from its line on; a stream that moves more than MAX_MOVES times
//! is a console of several emitters under one tag and stops carrying. A nested
//! prefix (`5: [rank5]:`, torch's own inside an srun label) is a stream of its
//! own; where it names no value, its lines take the one its outermost envelope's
//! stream carries (`5: `, named by task 5's NCCL lines): a launcher's tag is a
//! placement, and the processes inside it run where it runs. The line
//! that first names a stream's value (or the value it moved to) gets a row in
//! the found table (token `stream:<pattern or token>`): the basis of the
//! carried value.

use crate::classify::{FactRow, Val};
use crate::compile::Catalog;
use crate::events::{Event, Id, Src};
use crate::identity::bit;
use rustc_hash::FxHashMap;

/// Streams a file keeps in mind (bounded: a file of endless distinct prefixes stops carrying).
pub const MAX_STREAMS: usize = 4096;
/// Moves of one envelope's stream to another value (its restarts elsewhere) before it is taken for a
/// console of several emitters: Slurm requeues a job at most 5 times by default (MaxBatchRequeue), a
/// long run's restarts from checkpoint are a few dozen at most; a console that alternates hosts under
/// one tag moves on nearly every line that names one.
pub const MAX_MOVES: u16 = 16;

#[derive(Default)]
struct State {
    value: Vec<Id>,
    /// columns (bits) with a value
    known: u16,
    /// columns (bits) whose lines named two values: no longer carried
    conflict: u16,
    /// ... of which the file's head named two (its lines are not named, whatever came first)
    head_conflict: u16,
    /// times an envelope's stream named a value other than the one it carried, past the head
    moves: u16,
    /// head lines (part, index) that lacked a stream column when read
    pending: Vec<(usize, usize)>,
    /// the stream of its outermost envelope alone, when it has a nested one (`5: [rank5]:` in task 5's)
    outer: Option<usize>,
}

/// What the carry knows of a file's streams, from one batch to the next.
#[derive(Default)]
pub struct Streams {
    by_key: FxHashMap<u64, usize>,
    states: Vec<State>,
    /// the last line (number) of the file's head: lines up to it take a value named after them
    pub head_end: i64,
    /// whether some stream has a value (until then a line past the head that names none is skipped)
    known_any: bool,
}

impl Streams {
    fn state(&mut self, key: u64, nid: usize) -> Option<usize> {
        if let Some(&i) = self.by_key.get(&key) {
            return Some(i);
        }
        if self.states.len() >= MAX_STREAMS {
            return None;
        }
        self.states.push(State { value: vec![Id::None; nid], ..Default::default() });
        self.by_key.insert(key, self.states.len() - 1);
        Some(self.states.len() - 1)
    }
}

/// Whether a stream's known value `a` (an Int or a Text) is the line's own value `b` (a span
/// of `raw`, a text or an int). Compared in place: it once compared a copy of the span
/// (`detached`) on every line that names its stream, the scan's most frequent allocation on the
/// corpus node log (1.7 a line; callgrind, session 13).
fn same_as_own(a: &Id, b: &Id, raw: &str) -> bool {
    match (a, b) {
        (Id::Int(x), Id::Int(y)) => x == y,
        (Id::Text(x), Id::Span(..) | Id::Text(_)) => b.bytes(raw.as_bytes()) == Some(x.as_bytes()),
        _ => false,
    }
}

/// Carries stream values over the events of a batch (its parts in order);
/// the basis rows go into each part's `rows`.
pub fn carry(cat: &Catalog, parts: &mut [Vec<Event>], rows: &mut [Vec<FactRow>], st: &mut Streams) {
    let cols = cat.stream_cols;
    if cols == 0 {
        return;
    }
    let nid = cat.identity.len();
    for pi in 0..parts.len() {
        for i in 0..parts[pi].len() {
            let e = &parts[pi][i];
            if !st.known_any && e.stream_src == 0 && e.line > st.head_end {
                continue; // nothing named yet, nothing to name, past the head
            }
            let oi = if e.outer_key != e.stream_key { st.state(e.outer_key, nid) } else { None };
            let Some(si) = st.state(e.stream_key, nid) else { continue };
            if st.states[si].outer.is_none() {
                st.states[si].outer = oi;
            }
            for c in (0..nid).filter(|&c| cols & bit(c) != 0) {
                let e = &parts[pi][i];
                let own = !e.ids[c].is_none() && e.hinted & bit(c) == 0;
                if own && e.stream_src & bit(c) != 0 {
                    let s = &mut st.states[si];
                    if s.known & bit(c) != 0 {
                        if !same_as_own(&s.value[c], &e.ids[c], &e.raw) {
                            let moved = e.stream_key != 0 && e.line > st.head_end && s.conflict & bit(c) == 0
                                && s.moves < MAX_MOVES;
                            if !moved {
                                s.conflict |= bit(c);
                                if e.line <= st.head_end {
                                    s.head_conflict |= bit(c);
                                }
                                continue;
                            }
                            let value = e.ids[c].detached(&e.raw);
                            let row = basis(cat, e, i, c, &value);
                            // the head's lines still waiting (its nested streams' that named none, too)
                            // take the value the stream had before it moved
                            name_pending(parts, &st.states[si], c);
                            for n in (0..st.states.len()).filter(|&n| st.states[n].outer == Some(si)) {
                                if st.states[n].known & bit(c) == 0 {
                                    name_lines(parts, &st.states[n].pending, &st.states[si], c);
                                }
                            }
                            let s = &mut st.states[si];
                            s.moves += 1;
                            s.value[c] = value;
                            rows[pi].extend(row);
                        }
                        continue;
                    }
                    s.value[c] = e.ids[c].detached(&e.raw);
                    s.known |= bit(c);
                    st.known_any = true;
                    if let Some(r) = basis(cat, e, i, c, &s.value[c]) {
                        rows[pi].push(r);
                    }
                } else if !own {
                    let line = e.line;
                    let s = &mut st.states[si];
                    if line <= st.head_end {
                        // a head line is named once the whole head is read: a second value further on
                        // (a console every host writes to) leaves it unnamed
                        if s.conflict & bit(c) == 0 && s.pending.last() != Some(&(pi, i)) {
                            s.pending.push((pi, i));
                        }
                    } else if let Some(v) = carried(&st.states, si, c) {
                        let v = v.clone();
                        let e = &mut parts[pi][i];
                        e.ids[c] = v;
                        e.hinted &= !bit(c);
                    }
                }
            }
        }
    }
    // the head is in the first batch: its lines take the value named first, unless the head itself named
    // two (a console of several hosts: whichever host spoke first is not the head's); what is still
    // pending then stays unnamed
    for si in 0..st.states.len() {
        for c in (0..nid).filter(|&c| cols & bit(c) != 0) {
            let s = &st.states[si];
            // a nested stream that never named the column takes its outer stream's (head and all)
            let from = match s.outer {
                Some(o) if s.known & bit(c) == 0 => &st.states[o],
                _ => s,
            };
            name_lines(parts, &s.pending, from, c);
        }
        st.states[si].pending = Vec::new();
    }
}

/// The value of column `c` a line of stream `si` takes: its stream's, unless two conflict; or, when its
/// stream never named one, the stream of its outermost envelope's (task 5's host for `5: [rank5]:`
/// lines: the srun task, mpirun rank or pod runs where its processes run, and their own prefix names no
/// host).
fn carried(states: &[State], si: usize, c: usize) -> Option<&Id> {
    let s = &states[si];
    let s = match s.outer {
        Some(o) if s.known & bit(c) == 0 => &states[o],
        _ => s,
    };
    (s.known & bit(c) != 0 && s.conflict & bit(c) == 0).then(|| &s.value[c])
}

/// The head's pending lines of a stream take its value of column `c`, unless the head named two or
/// the line has a value of its own.
fn name_pending(parts: &mut [Vec<Event>], s: &State, c: usize) {
    name_lines(parts, &s.pending, s, c);
}

/// Head lines `pending` take stream `s`'s value of column `c` (see name_pending).
fn name_lines(parts: &mut [Vec<Event>], pending: &[(usize, usize)], s: &State, c: usize) {
    if s.known & bit(c) == 0 || s.head_conflict & bit(c) != 0 {
        return;
    }
    for &(pj, j) in pending {
        let p = &mut parts[pj][j];
        if p.ids[c].is_none() || p.hinted & bit(c) != 0 {
            p.ids[c] = s.value[c].clone();
            p.hinted &= !bit(c);
        }
    }
}

/// The found table's row of the line that first names a stream's value of column `c`.
fn basis(cat: &Catalog, e: &Event, ei: usize, c: usize, v: &Id) -> Option<FactRow> {
    let found = cat.tokens.found.as_ref()?;
    let table = &cat.tables[found.table];
    let mut values = vec![Val::Null; table.cols.len()];
    let via = match (e.stream_via, e.src) {
        (0, Src::Pattern(p)) => cat.patterns[p as usize].key.as_str(),
        (0, _) => "line",
        (t, _) => cat.tokens.list[t as usize - 1].id.as_str(),
    };
    values[found.token] = Val::Str(format!("stream:{via}"));
    values[found.stream] = Val::Str(if e.stream_key == 0 { "file" } else { "envelope" }.into());
    // the stream's own identity (its envelope's rank, task, ...) and the value carried
    for col in 0..cat.identity.len() {
        let Some(tc) = found.cols[col] else { continue };
        let id = if col == c { v } else { &e.ids[col] };
        values[tc] = match (id, cat.int_identity[col]) {
            (Id::Int(n), _) => Val::Int(*n),
            (Id::None, _) => Val::Null,
            (other, false) => other.text(&e.raw).map_or(Val::Null, |t| Val::Str(t.to_string())),
            (_, true) => Val::Null,
        };
    }
    Some(FactRow { table: found.table, event: ei, values: values.into() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::NO_BLOCK;
    use crate::compile::Catalog;

    #[test]
    fn same_as_own_compares_as_a_copy_would() {
        // the comparison it replaced: the line's value detached (a span copied), then Int to
        // Int and Text to Text
        let old = |a: &Id, b: &Id, raw: &str| match (a, &b.detached(raw)) {
            (Id::Int(x), Id::Int(y)) => x == y,
            (Id::Text(x), Id::Text(y)) => x == y,
            _ => false,
        };
        let raw = "node7 rank 12 node70";
        let known = [Id::Int(12), Id::Int(7), Id::Text(crate::events::shared("node7")), Id::Text(crate::events::shared("node70")),
                     Id::Text(crate::events::shared("12")), Id::None];
        let own = [Id::Span(0, 5), Id::Span(11, 13), Id::Span(14, 20), Id::Span(0, 0), Id::Int(12), Id::Int(7),
                   Id::Text(crate::events::shared("node7")), Id::Text(crate::events::shared("")), Id::None];
        for a in &known {
            for b in &own {
                assert_eq!(same_as_own(a, b, raw), old(a, b, raw), "{a:?} against {b:?}");
            }
        }
    }

    /// A catalog: envelopes `[rankN]:` and an srun-like label `N: ` (task N, weak rank N; `run_with` only),
    /// pattern `host:pid NCCL` (its host names the stream), a
    /// catch-all; tokens `pid=N` (fills pid), `(G Rank N)` (blocks rank), `[Rank N]`, `@host`
    /// (a link), and pid 0 rejected.
    fn catalog() -> Catalog {
        let spec = r#"{"identity": ["host", "rank", "pid", "program", "task"], "int_identity": ["rank", "pid", "task"],
            "severities": ["debug", "info"],
            "envelopes": [{"name": "r", "regex": "^\\[rank(?P<rank>\\d+)\\]:(?P<rest>.*)$", "scope": "line", "ts": null,
                           "first": null, "literals": null, "split": null},
                          {"name": "label", "regex": "^(?P<task>(?P<rank>\\d+)): (?P<rest>.*)$", "scope": "line", "ts": null,
                           "first": null, "literals": null, "split": null, "weak": ["rank"]}],
            "patterns": [
              {"key": "f.nccl", "format": "f", "regex": "^(?P<host>[a-z]+\\d):(?P<pid>\\d+) NCCL (?P<message>.*)$", "first": null,
               "literals": null, "ts": null, "kind": null, "program": null, "split": null, "stream": ["host"]},
              {"key": "f.any", "format": "f", "regex": "^(?P<message>.*)$", "first": null, "literals": null, "ts": null,
               "kind": null, "program": null, "split": null}],
            "blocks": [], "rules": [], "facts": [],
            "fact_tables": {"found": [["token", "str"], ["stream", "str"], ["host", "str"], ["rank", "int"], ["pid", "int"]]},
            "kinds": {}, "levels": {},
            "tokens": [
              {"id": "pid", "regex": "pid=(?P<pid>\\d+)", "literals": ["pid="]},
              {"id": "group", "regex": "\\(G Rank \\d+\\)", "blocks": ["rank"], "literals": ["(G Rank "]},
              {"id": "rank", "regex": "\\[Rank (?P<rank>\\d+)\\]", "literals": ["[Rank "]},
              {"id": "at", "regex": "@(?P<host>[a-z]+\\d) (?P<pid>\\d+)", "links": ["host"], "literals": null}],
            "rejects": [["pid", "^0+$"]], "found_table": "found"}"#;
        Catalog::compile(&crate::CatalogSpec::from_json(spec).unwrap()).unwrap()
    }

    /// The lines as one file's parts (split at `cut`), read, classified (tokens applied), carried.
    fn run<'a>(cat: &Catalog, lines: &[&'a str], cut: usize, head_end: i64) -> (Vec<Event<'a>>, Vec<FactRow>) {
        run_with(cat, &[0], lines, cut, head_end)
    }

    /// `run` with envelopes `envs` of the catalog.
    fn run_with<'a>(cat: &Catalog, envs: &[usize], lines: &[&'a str], cut: usize, head_end: i64) -> (Vec<Event<'a>>, Vec<FactRow>) {
        let tz = crate::timefmt::Zoner::new("UTC").unwrap();
        let mut r = crate::shape::Reader::new(cat, envs, &tz, true);
        let mut memo = crate::shape::Memo::default();
        let mut parts = Vec::new();
        let mut rows = Vec::new();
        for (k, chunk) in [&lines[..cut], &lines[cut..]].iter().enumerate() {
            let mut peeled: Vec<_> =
                chunk.iter().enumerate().map(|(i, l)| r.read(&mut memo, (k * cut + i + 1) as i64, 0, l, &mut [0])).collect();
            let n = peeled.len();
            let mut evs = crate::events::build(cat, &mut peeled, &vec![NO_BLOCK; n], &vec![usize::MAX; n],
                                               &vec![Id::None; cat.identity.len()], &tz);
            let (_, found, _) = crate::classify::read(cat, &mut evs, true);
            parts.push(evs);
            rows.push(found);
        }
        let mut st = Streams { head_end, ..Default::default() };
        carry(cat, &mut parts, &mut rows, &mut st);
        (parts.into_iter().flatten().collect(), rows.into_iter().flatten().collect())
    }

    fn col(e: &Event, c: usize) -> Option<String> {
        match &e.ids[c] {
            Id::Int(n) => Some(n.to_string()),
            other => other.text(&e.raw).map(str::to_string),
        }
    }

    /// Tokens fill what the line left empty, first token first; a group's rank blocks the bare
    /// rank after it; a rejected value and a link are not put on the line; the found rows say so.
    #[test]
    fn tokens_fill_what_the_line_left_empty() {
        let cat = catalog();
        let lines = ["a pid=7 [Rank 3] pid=9", "[rank5]:b [Rank 3]", "c (G Rank 1) [Rank 1]", "d pid=0", "e @gpu2 44", "f @gpu3 0"];
        let (evs, rows) = run(&cat, &lines, 2, 0);
        let got: Vec<(Option<String>, Option<String>, Option<String>)> = evs.iter().map(|e| (col(e, 0), col(e, 1), col(e, 2))).collect();
        let s = |v: &str| Some(v.to_string());
        assert_eq!(got, vec![(None, s("3"), s("7")), (None, s("5"), None), (None, None, None), (None, None, None), (None, None, s("44")), (None, None, None)]);
        let found: Vec<(usize, String)> = rows.iter().map(|r| (r.event, format!("{:?}", r.values))).collect();
        assert_eq!(found.len(), 4, "{found:?}"); // line a: pid and rank; line e: its pid with the link's host
        assert!(found[2].1.contains("gpu2") && found[2].1.contains("44"), "{found:?}");
        // line f: the link's host without the pid that names nobody
        assert!(found[3].1.contains("gpu3") && !found[3].1.contains("Int(0)"), "{found:?}");
    }

    /// A stream's host reaches its other lines, the head's earlier ones too, across parts; another
    /// stream keeps its own; a stream that names two hosts stops carrying.
    #[test]
    fn a_streams_value_is_carried() {
        let cat = catalog();
        let lines = [
            "[rank0]:step 1", "[rank1]:step 1", "[rank0]:node1:10 NCCL init", "[rank1]:node2:20 NCCL init",
            "[rank0]:step 2", "[rank1]:step 2", "plain", "node3:30 NCCL x", "node4:40 NCCL y", "plain again",
        ];
        for cut in [1, 5, 9] {
            let (evs, rows) = run(&cat, &lines, cut, 2);
            let hosts: Vec<Option<String>> = evs.iter().map(|e| col(e, 0)).collect();
            let s = |v: &str| Some(v.to_string());
            assert_eq!(
                hosts,
                vec![s("node1"), s("node2"), s("node1"), s("node2"), s("node1"), s("node2"), None, s("node3"), s("node4"), None],
                "cut at {cut}"
            );
            // the basis: one row per stream that named its host (the file's own stream too)
            assert_eq!(rows.iter().filter(|r| format!("{:?}", r.values).contains("stream:f.nccl")).count(), 3, "cut at {cut}");
        }
    }

    /// One envelope's stream that names another host past the head has moved (a requeue on other nodes):
    /// its lines take the new host from there on, the head's waiting lines the host named first; the
    /// file's own stream (no envelope) that names two still stops carrying; a stream that moves more than
    /// MAX_MOVES times stops too.
    #[test]
    fn an_envelopes_stream_moves_to_its_new_host() {
        let cat = catalog();
        let s = |v: &str| Some(v.to_string());
        let lines = [
            "[rank0]:spawned", "[rank0]:node1:10 NCCL init", "[rank0]:step 1", "[rank0]:requeued", "[rank0]:node2:10 NCCL init",
            "[rank0]:step 1 again", "node3:30 NCCL x", "node4:40 NCCL y", "plain",
        ];
        for cut in [1, 3, 5, 8] {
            let (evs, rows) = run(&cat, &lines, cut, 2);
            let hosts: Vec<Option<String>> = evs.iter().map(|e| col(e, 0)).collect();
            assert_eq!(
                hosts,
                vec![s("node1"), s("node1"), s("node1"), s("node1"), s("node2"), s("node2"), s("node3"), s("node4"), None],
                "cut at {cut}"
            );
            // the basis of each value: rank 0's two hosts and the file's first
            assert_eq!(rows.iter().filter(|r| format!("{:?}", r.values).contains("stream:f.nccl")).count(), 3, "cut at {cut}");
        }
        let mut flips: Vec<String> = (0..=MAX_MOVES + 1).map(|k| format!("[rank0]:node{}:10 NCCL x", k % 2 + 1)).collect();
        flips.push("[rank0]:after".into());
        let flips: Vec<&str> = flips.iter().map(String::as_str).collect();
        let (evs, _) = run(&cat, &flips, 3, 0);
        assert_eq!(col(evs.last().unwrap(), 0), None);
    }

    /// A nested prefix's stream (`5: [rank5]:`, a watchdog line of task 5's rank) that names no host takes
    /// its outer envelope's (task 5's, named by its NCCL lines), as it moves (a requeue onto another node),
    /// in the head and past it; one that names a host of its own keeps it; a task whose own lines never
    /// named one names nothing, whatever its nested streams said.
    #[test]
    fn a_nested_prefix_takes_its_outer_envelopes_host() {
        let cat = catalog();
        let s = |v: &str| Some(v.to_string());
        let lines = [
            "5: [rank5]:c10d up", "5: node1:10 NCCL init", "5: [rank5]:watchdog timeout", "6: [rank6]:watchdog timeout",
            "5: requeued", "5: node2:10 NCCL init", "5: [rank5]:watchdog again",
            "7: [rank7]:node3:30 NCCL init", "7: [rank7]:watchdog", "7: plain",
        ];
        for (cut, head_end) in [(1, 1), (3, 2), (5, 3), (9, 0)] {
            let (evs, _) = run_with(&cat, &[1, 0], &lines, cut, head_end);
            let hosts: Vec<Option<String>> = evs.iter().map(|e| col(e, 0)).collect();
            // (past the head, a line before the first value named is named by nothing)
            let first = if head_end >= 1 { s("node1") } else { None };
            assert_eq!(
                hosts,
                vec![first, s("node1"), s("node1"), None, s("node1"), s("node2"), s("node2"), s("node3"), s("node3"), None],
                "cut at {cut}, head to {head_end}"
            );
        }
    }

    /// ... nor on the lines between the first host named and the second: until the whole head is read, a
    /// console of several hosts looks like one host's. A head of one host names every line, before and after.
    #[test]
    fn a_head_of_two_hosts_names_nothing_between_them() {
        let cat = catalog();
        let s = |v: &str| Some(v.to_string());
        let lines = ["node2:20 NCCL init", "c10d connected", "node1:10 NCCL init", "past the head"];
        for cut in [1, 2, 4] {
            let (evs, _) = run(&cat, &lines, cut, 3);
            let hosts: Vec<Option<String>> = evs.iter().map(|e| col(e, 0)).collect();
            assert_eq!(hosts, vec![s("node2"), None, s("node1"), None], "cut at {cut}");
        }
        let one = ["spawned", "node2:20 NCCL init", "c10d connected", "past the head"];
        for cut in [1, 3, 4] {
            let (evs, _) = run(&cat, &one, cut, 3);
            let hosts: Vec<Option<String>> = evs.iter().map(|e| col(e, 0)).collect();
            assert_eq!(hosts, vec![s("node2"); 4], "cut at {cut}");
        }
    }

    /// A head that names two hosts in one stream (a console every host writes to, untagged) names neither
    /// on its other lines: the launcher's lines before the first NCCL line are not that host's.
    #[test]
    fn a_head_of_two_hosts_names_neither() {
        let cat = catalog();
        let lines = ["spawned pid 20", "spawned pid 10", "node2:20 NCCL init", "node1:10 NCCL init", "after"];
        for cut in [1, 3, 5] {
            let (evs, _) = run(&cat, &lines, cut, 5);
            let hosts: Vec<Option<String>> = evs.iter().map(|e| col(e, 0)).collect();
            let s = |v: &str| Some(v.to_string());
            assert_eq!(hosts, vec![None, None, s("node2"), s("node1"), None], "cut at {cut}");
        }
    }
}
