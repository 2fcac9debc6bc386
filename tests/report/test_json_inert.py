"""json_inert escapes exactly the characters of its table, wherever they are."""
from ranktrace.report import _JSON_INERT, json_inert


def test_every_listed_character_is_escaped_and_nothing_else():
    text = "".join(chr(c) for c in range(0x20, 0x2100)) + "".join(chr(c) + "ab" for c in _JSON_INERT)
    got = json_inert(text)
    assert got == text.translate(_JSON_INERT)
    assert not set(got) & {chr(c) for c in _JSON_INERT}
    assert json_inert("plain \u00e9 text") == "plain \u00e9 text"


def test_the_trace_is_written_in_pieces_as_one_dump_would_write_it(tmp_path, monkeypatch, capsysbinary):
    """export perfetto writes its events a few at a time: the bytes of one json.dumps, made inert."""
    import gzip
    import json

    from ranktrace.export import perfetto as P
    monkeypatch.setattr(P, "WRITE_EVENTS", 2)   # several pieces, the last one short
    events = [{"ph": "i", "name": f"e{i}", "args": {"raw": "x\u202ey\x85]["}} for i in range(5)]
    for trace in ({"traceEvents": events, "displayTimeUnit": "ms", "metadata": {"v": "\x9b"}},
                  {"traceEvents": [], "metadata": {}}):
        want = json_inert(json.dumps(trace, separators=(",", ":"), ensure_ascii=False)).encode()
        assert P.write_trace(trace, str(tmp_path / "t.json")) == len(want)
        assert (tmp_path / "t.json").read_bytes() == want
        P.write_trace(trace, str(tmp_path / "t.json.gz"))
        assert gzip.decompress((tmp_path / "t.json.gz").read_bytes()) == want
        assert P.write_trace(trace, "-") == len(want)
        assert capsysbinary.readouterr().out == want
