"""Fuzz the line parser (the engine, as ingest drives it: core.file_parser,
feed, next_batch) with real log lines, mutated, and random bytes.

Properties that can fail:
- no exception;
- every line is accounted for: events' [line, end_line] ranges are disjoint,
  inside 1..N (N the lines framed), and every line not in one is blank
  (or an envelope around nothing);
- raw text round-trips: for valid UTF-8 input without NUL, an event's raw is
  its lines joined by \\n (a line over max_line: its head);
- a time is NULL or inside the plausible range (1990..2100);
- where the input is cut into chunks does not change the events (envelopes
  named, see ALL_ENVELOPES).
"""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fuzzlib import CORPUS, corpus, expected_lines, fuzz_settings, mutated_text, save_failure
from ranktrace.formats import load_catalog
from ranktrace.ingest import core

CATALOG = load_catalog(check_samples=False)   # not a fixture: hypothesis would print it with every example

MAX_LINE = 4096                 # small, so that the over-long path is fuzzed too
PLAUSIBLE = (pl.datetime(1990, 1, 1), pl.datetime(2100, 1, 1))


# The engine picks a file's file-scoped envelopes (srun labels, CRI, rank
# prefixes) from its first batch (crates/engine/src/peel.rs, 200 non-blank
# lines); ingest's first feed is 4 MB. Chunked parses name every envelope,
# so that the comparison is about framing, blocks and carried state.
ALL_ENVELOPES = [e.name for e in CATALOG.envelopes]




def peels_to_blank(line: bytes) -> bool:
    """An envelope with nothing inside ('TS stdout F ', a bare srun label)
    is a blank line of the program inside, dropped like one."""
    text = line.decode("utf-8", "replace")
    for _ in range(4):
        for e in CATALOG.envelopes:
            m = e.compiled.match(text) if hasattr(e.compiled, "match") else None
            if m and "rest" in m.groupdict():
                text = m.group("rest") or ""
                if not text.strip():
                    return True
                break
        else:
            return False
    return False


def parse(data: bytes, cuts: list[int], envelopes: list[str] | None = None) -> tuple[pl.DataFrame | None, dict]:
    fp = core.file_parser(CATALOG, 7, "fuzz.log", {}, "UTC", envelopes, max_line=MAX_LINE)
    bounds = [0] + sorted({c for c in cuts if 0 < c < len(data)}) + [len(data)]
    outs = []
    for i in range(len(bounds) - 1):
        fp.feed(data[bounds[i]:bounds[i + 1]], i == len(bounds) - 2)
        outs += core.batches(fp)
    if len(bounds) == 1 or len(data) == 0:
        fp.feed(b"", True)
        outs += core.batches(fp)
    ev = core.events_table(outs)
    return (pl.from_arrow(ev).sort("line") if ev is not None else None), fp.stats()


def check(data: bytes, cuts: list[int]) -> None:
    try:
        whole, stats = parse(data, [])
        n = stats["lines"]
        lines = expected_lines(data, stats["cr_only"])
        assert n == len(lines), (n, len(lines))
        spans = [] if whole is None else whole.select("line", "end_line", "raw").rows()
        covered = [False] * (n + 1)
        singles: set[int] = set()
        for a, b, _ in spans:
            assert 1 <= a <= b <= n, (a, b, n)
            covered[a:b + 1] = [True] * (b - a + 1)
            if a == b:
                assert a not in singles, f"two events of line {a}"
                singles.add(a)
        # A block's span may hold another stream's lines (interleaved ranks):
        # spans overlap then, first lines (the event ids) never.
        assert len({a for a, _, _ in spans}) == len(spans), "two events start on one line"
        assert sum(raw.count("\n") + 1 for _, _, raw in spans) <= n
        for k in range(1, n + 1):
            if not covered[k]:
                kept = lines[k - 1][:MAX_LINE]     # an over-long line keeps its head only
                assert not kept.strip() or peels_to_blank(kept), f"line {k} is in no event: {kept[:80]!r}"
        if whole is not None:
            bad = whole.filter(pl.col("ts").is_not_null() & ~pl.col("ts").is_between(*PLAUSIBLE, closed="left"))
            assert bad.is_empty(), bad.select("line", "ts", "ts_text").rows()[:3]
            try:
                text_ok = b"\x00" not in data and (data.decode("utf-8") or True)
            except UnicodeDecodeError:
                text_ok = False
            if text_ok and max(map(len, lines), default=0) <= MAX_LINE:
                for a, b, raw in spans:
                    span = [ln.decode() for ln in lines[a - 1:b]]
                    if a == b:
                        assert raw == span[0], (a, raw[:80], span[0][:80])
                    else:                      # its lines, in order, out of the span
                        it = iter(span)
                        assert all(any(x == y for y in it) for x in raw.split("\n")), (a, b, raw[:200])
        if cuts:
            whole, stats = parse(data, [], ALL_ENVELOPES)
            chunked, cstats = parse(data, cuts, ALL_ENVELOPES)
            assert core.read_stats(cstats) == core.read_stats(stats), (cstats, stats)
            if whole is None:
                assert chunked is None
            else:
                assert chunked is not None and chunked.equals(whole), "chunk boundaries changed the events"
    except BaseException:
        save_failure("lines", data)
        raise


@pytest.mark.parametrize("path", corpus("lines"), ids=lambda p: p.name)
def test_corpus_lines(path):
    data = path.read_bytes()
    check(data, list(range(1, len(data), max(1, len(data) // 7))))


@fuzz_settings(500)
@given(data=mutated_text(), at=st.lists(st.floats(0, 1), max_size=6))
@example(data=b"a\rb\rc\r", at=[0.3])
@example(data=b"x" * 10_000 + b"\n" + b"y" * 5000, at=[0.27, 0.2731, 0.55])
def test_fuzz_line_parser(data, at):
    check(data, [int(f * len(data)) for f in at])


# Found by the fuzzing above, in the engine's framing and batching, and fixed
# (crates/engine/src/lines.rs, blocks.rs, events.rs): each failed before.
def test_an_overlong_line_is_cut_the_same_whole_or_in_chunks():
    data = b"x" * (MAX_LINE - 1) + b"\r" + b"y" * 100 + b"\nafter\n"
    a, _ = parse(data, [], ALL_ENVELOPES)
    b, _ = parse(data, [MAX_LINE + 10], ALL_ENVELOPES)
    assert a["raw"].to_list() == b["raw"].to_list()


def test_an_overlong_lines_bad_bytes_count_the_same_whole_or_in_chunks():
    data = b"x" * (MAX_LINE + 10) + b"\x00\xff" + b"\nafter\n"
    _, a = parse(data, [], ALL_ENVELOPES)
    _, b = parse(data, [MAX_LINE + 5], ALL_ENVELOPES)
    assert a == b


def test_cr_only_is_decided_the_same_whatever_the_first_chunk():
    data = b"a\rb\rc\nd\n"
    _, a = parse(data, [], ALL_ENVELOPES)
    _, b = parse(data, [2], ALL_ENVELOPES)
    assert a == b


def test_carried_identity_runs_across_a_batch_boundary():
    data = b"Namespace:      ml\nLabels: a\nLabels: b\n"
    a, _ = parse(data, [], ALL_ENVELOPES)
    b, _ = parse(data, [19], ALL_ENVELOPES)
    assert a["namespace"].to_list() == b["namespace"].to_list()


def test_an_interleaved_block_is_whole_across_a_batch_boundary():
    """Found by the fuzzing: a traceback frame, another rank's frame, the
    first one's caret line; a batch ending after the caret line splits
    the first traceback in two events."""
    data = (CORPUS / "known" / "interleaved_block_at_batch_boundary.log").read_bytes()
    a, _ = parse(data, [], ALL_ENVELOPES)
    b, _ = parse(data, [302], ALL_ENVELOPES)
    assert a.select("line", "end_line").rows() == b.select("line", "end_line").rows()
