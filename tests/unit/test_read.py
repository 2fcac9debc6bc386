import io

import pytest

from ranktrace.ingest.read import ReadStats, iter_batches


def batches(data: bytes, **kw):
    stats = ReadStats()
    out = list(iter_batches(io.BytesIO(data), stats, **kw))
    return out, stats


def test_lines_numbers_and_offsets_across_small_batches():
    data = b"".join(f"line {i}\n".encode() for i in range(1, 1001))
    out, stats = batches(data, batch_bytes=100)
    assert len(out) > 5, "small batches must split the input"
    rows = [r for b in out for r in b.iter_rows(named=True)]
    assert [r["line"] for r in rows] == list(range(1, 1001))
    assert all(data[r["offset"]:].startswith(r["raw"].encode()) for r in rows)
    assert stats.lines == 1000 and stats.bytes == len(data)


def test_last_line_without_newline_and_crlf():
    out, stats = batches(b"a\r\nb\r\nc")
    assert [r for b in out for r in b["raw"]] == ["a", "b", "c"]
    assert stats.crlf


def test_invalid_utf8_and_nul_are_replaced_and_counted():
    out, stats = batches(b"ok\n\xff\xfe bad\nnul\x00here\n")
    raws = [r for b in out for r in b["raw"]]
    assert raws[0] == "ok" and "\ufffd" in raws[1] and raws[2] == "nul\ufffdhere"
    assert stats.invalid_utf8 == 1 and stats.nul_bytes == 1


def test_overlong_line_is_truncated_and_reading_goes_on():
    data = b"first\n" + b"x" * 5000 + b"\nafter\n"
    out, stats = batches(data, batch_bytes=512, max_line=1000)
    raws = [r for b in out for r in b["raw"]]
    assert raws[0] == "first" and raws[1] == "x" * 1000 and raws[2] == "after"
    assert stats.truncated_lines == 1
    lines = [r for b in out for r in b["line"]]
    assert lines == [1, 2, 3]


@pytest.mark.parametrize("data", [b"", b"\n"])
def test_empty_inputs(data):
    out, stats = batches(data)
    assert sum(len(b) for b in out) == data.count(b"\n")
