"""Framing through the engine: line numbers, offsets, CRLF, bad bytes,
over-long lines, as ingest sees them (ranktrace._core.FileParser)."""

import polars as pl
import pytest

from ranktrace.ingest import core


def parse(catalog, data: bytes, chunk: int = 1 << 20, max_line: int = core.MAX_LINE):
    fp = core.file_parser(catalog, 1, "t.log", {}, envelopes=[], max_line=max_line)
    chunks = [data[k:k + chunk] for k in range(0, len(data), chunk)] or [b""]
    outs = []
    for i, c in enumerate(chunks):
        fp.feed(c, i == len(chunks) - 1)
        outs += core.batches(fp)
    ev = core.events_table(outs)
    return (pl.from_arrow(ev).sort("line") if ev is not None else None), fp.stats()


def test_lines_numbers_and_offsets_across_small_chunks(catalog):
    data = b"".join(f"line {i}\n".encode() for i in range(1, 1001))
    ev, stats = parse(catalog, data, chunk=100)
    assert ev["line"].to_list() == list(range(1, 1001))
    assert all(data[o:].startswith(r.encode()) for o, r in zip(ev["byte_offset"], ev["raw"]))
    assert stats["lines"] == 1000 and stats["bytes"] == len(data)


def test_last_line_without_newline_and_crlf(catalog):
    ev, stats = parse(catalog, b"a\r\nb\r\nc")
    assert ev["raw"].to_list() == ["a", "b", "c"]
    assert stats["crlf"]


def test_invalid_utf8_and_nul_are_replaced_and_counted(catalog):
    ev, stats = parse(catalog, b"ok\n\xff\xfe bad\nnul\x00here\n")
    raws = ev["raw"].to_list()
    assert raws[0] == "ok" and "\ufffd" in raws[1] and raws[2] == "nul\ufffdhere"
    assert stats["invalid_utf8"] == 1 and stats["nul_bytes"] == 1


def test_overlong_line_is_truncated_and_reading_goes_on(catalog):
    data = b"first\n" + b"x" * 5000 + b"\nafter\n"
    ev, stats = parse(catalog, data, chunk=512, max_line=1000)
    assert ev["raw"].to_list() == ["first", "x" * 1000, "after"]
    assert stats["truncated_lines"] == 1
    assert ev["line"].to_list() == [1, 2, 3]
    assert data[ev["byte_offset"][2]:].startswith(b"after")


def test_short_lines_are_parsed_in_bounded_batches(catalog):
    fp = core.file_parser(catalog, 1, "t.log", {}, envelopes=[])
    fp.feed(b"x\n" * 200_000, True)   # 400 KB, 200 k lines
    outs = list(core.batches(fp))
    assert len(outs) >= 3 and max(o[0].num_rows for o in outs) <= 65_536
    assert sum(o[0].num_rows for o in outs) == 200_000


@pytest.mark.parametrize("data", [b"", b"\n"])
def test_empty_inputs(catalog, data):
    ev, stats = parse(catalog, data)
    assert ev is None or len(ev) == 0
    assert stats["lines"] == data.count(b"\n")


def _parse_all(catalog, data: bytes, chunk: int):
    """Events (as view `events` shows them, plus their class ids) and facts
    of `data` fed in chunks of `chunk` bytes, as Arrow."""
    import pyarrow as pa
    fp = core.file_parser(catalog, 1, "t.log", {})
    outs = []
    chunks = [data[k:k + chunk] for k in range(0, len(data), chunk)] or [b""]
    for i, c in enumerate(chunks):
        fp.feed(c, i == len(chunks) - 1)
        outs += core.batches(fp)
    rows, classes, facts = core.whole(outs)
    if rows is None:
        return pa.table({}), {}
    # class ids are the file's own numbering (first seen first): the same however it is fed
    events = core.widen(rows, classes).append_column("class_id", rows["class_id"])
    return events, {t: pa.Table.from_batches(v) for t, v in facts.items()}


def _row_key(r: dict) -> tuple:
    return tuple(str(r[k]) for k in sorted(r))


def _sample_files():
    from rt_testlib import REPO
    shapes = REPO.parent / "shared" / "real_log_shapes"
    files = [p for p in sorted((REPO / "sample_logs").rglob("*")) if p.is_file() and p.suffix in (".log", ".txt", ".out")]
    if shapes.is_dir():
        files += [p for p in sorted(shapes.rglob("*")) if p.is_file() and p.stat().st_size < 1 << 20]
    return files


@pytest.mark.parametrize("chunk", [37, 700])
def test_how_a_file_is_chunked_changes_nothing(catalog, chunk):
    """Every sample file parsed from small chunks gives the same events and
    facts, column for column, as parsed whole: blocks, carried identity (a
    `kubectl describe` section across a batch boundary once lost its pod),
    interpolated times and the sniffed envelopes all run across batches."""
    files = _sample_files()
    assert len(files) > 50
    for f in files:
        data = f.read_bytes()
        whole_ev, whole_facts = _parse_all(catalog, data, 1 << 30)
        ev, facts = _parse_all(catalog, data, chunk)
        assert ev.num_rows == whole_ev.num_rows, f
        for col in whole_ev.column_names:
            assert ev[col].to_pylist() == whole_ev[col].to_pylist(), (f, col)
        assert sorted(facts) == sorted(whole_facts), f
        for t in whole_facts:
            got, want = facts[t].to_pylist(), whole_facts[t].to_pylist()
            if t == "identity_found":
                # a stream's basis row is written when the stream's value is settled, which is at a batch
                # boundary when fed in chunks: the same rows, in another order (readers order by event_id)
                got, want = sorted(got, key=_row_key), sorted(want, key=_row_key)
            assert got == want, (f, t)


INTERLEAVED = (  # found by fuzzing: a traceback frame, another rank's frame, the first one's caret line
    b'  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/metrics/api.py", line 134, in wrapper\n'
    b'[rank5]:   File "/srv/train/job/train.py", line 205, in main\n'
    b"                   ^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    b"2026-11-29 16:52:54,844 INFO [rank4] step 8 loss 0.46608 step_time 0.549s\n"
    b"2026-11-29T17:32:34.731400000Z stderr F I1129 17:32:34.721000 13686 torch/distributed/launcher/api.py:254]"
    b"   min_nodes                : 4\n")


@pytest.mark.parametrize("chunk", [60, 120, 230, 302])
def test_an_interleaved_block_is_not_cut_at_a_batch_boundary(catalog, chunk):
    whole, _ = _parse_all(catalog, INTERLEAVED, 1 << 20)
    ev, _ = _parse_all(catalog, INTERLEAVED, chunk)
    spans = list(zip(whole["line"].to_pylist(), whole["end_line"].to_pylist()))
    assert (1, 3) in spans     # the first traceback holds its caret line
    assert list(zip(ev["line"].to_pylist(), ev["end_line"].to_pylist())) == spans


def test_an_open_block_before_a_flood_of_other_lines_stays_bounded():
    """One rank's traceback that never ends, then 2 M lines of another rank:
    each batch used to hand all of them on to the next (memory and time grew
    with the square of the flood: +460 MB for 400 k lines)."""
    import subprocess
    import sys
    code = (
        "import resource\n"
        "from ranktrace.formats import load_catalog\n"
        "from ranktrace.ingest import core\n"
        "cat = load_catalog(check_samples=False)\n"
        "p = core.file_parser(cat, 1, 'f', {})\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "p.feed(b'[rank0]:Traceback (most recent call last):\\n', False)\n"
        "rows, total, n = 0, 0, 2_000_000\n"
        "chunk = b'[rank1]:step 1 loss 0.5 hello world\\n' * 20_000\n"
        "for i in range(n // 20_000):\n"
        "    p.feed(chunk, i == n // 20_000 - 1)\n"
        "    for ev, _, _ in core.batches(p):\n"
        "        rows += ev.num_rows\n"
        "        total += sum(ev.column('line').to_pylist())\n"
        "grow = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024\n"
        "print(rows, total, grow)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    rows, total, grow_mb = map(int, out)
    assert rows == 2_000_001 and total == 2_000_001 * 2_000_002 // 2   # every line once
    print(f"peak RSS grew {grow_mb} MB")
    assert grow_mb < 250, f"{grow_mb} MB"


@pytest.mark.parametrize("threads", ["2", "5"])
def test_a_batch_parsed_on_several_threads_is_the_same(catalog, monkeypatch, threads):
    """A large file's batches are parsed on the cores other files leave
    (crates/engine/src/par.rs): cut where no block spans, the events, facts
    and their order are those of one thread, for every sample and real shape
    (RANKTRACE_ENGINE_THREADS fixes the count; small files are cut too)."""
    files = _sample_files()
    for f in files:
        data = f.read_bytes()
        monkeypatch.setenv("RANKTRACE_ENGINE_THREADS", "1")
        one_ev, one_facts = _parse_all(catalog, data, 4096)
        monkeypatch.setenv("RANKTRACE_ENGINE_THREADS", threads)
        ev, facts = _parse_all(catalog, data, 4096)
        assert ev.to_pylist() == one_ev.to_pylist(), f
        assert {t: v.to_pylist() for t, v in facts.items()} == {t: v.to_pylist() for t, v in one_facts.items()}, f


def _digits_moved(data: bytes, k: int) -> bytes:
    """`data` with every digit d replaced by (d * 7 + k) % 10: the same line
    shapes, other digits (a day 31 becomes 21 or 98)."""
    moved = "".join(str((d * 7 + k) % 10) for d in range(10)).encode()
    return data.translate(bytes.maketrans(b"0123456789", moved))


def test_lines_of_one_shape_read_alike_or_from_their_bytes(catalog, monkeypatch):
    """Lines that differ only in their digits share a shape: the engine
    reads its structure once (peel, claim, block starts: crates/engine/src/
    shape.rs) unless a part of the catalog that tells digits apart is asked
    (a day `[0-3]\\d`, a literal `mlx5`). Every sample and real shape,
    followed by copies with their digits moved, parses to the same events
    and facts with the memo as without it, and the memo is used."""
    hits = 0
    for f in _sample_files():
        data = f.read_bytes()
        data = data + b"\n" + b"\n".join(_digits_moved(data, k) for k in (1, 3, 8))
        monkeypatch.setenv("RANKTRACE_ENGINE_MEMO", "0")
        own_ev, own_facts = _parse_all(catalog, data, 1 << 30)
        monkeypatch.delenv("RANKTRACE_ENGINE_MEMO")
        ev, facts = _parse_all(catalog, data, 1 << 30)
        assert ev.to_pylist() == own_ev.to_pylist(), f
        assert {t: v.to_pylist() for t, v in facts.items()} == {t: v.to_pylist() for t, v in own_facts.items()}, f
        fp = core.file_parser(catalog, 1, "t.log", {})
        fp.feed(data, True)
        list(core.batches(fp))
        hits += fp.stats()["shape_hits"]
    assert hits > 10_000
