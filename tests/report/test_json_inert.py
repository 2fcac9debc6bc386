"""json_inert escapes exactly the characters of its table, wherever they are."""
from ranktrace.report import _JSON_INERT, json_inert


def test_every_listed_character_is_escaped_and_nothing_else():
    text = "".join(chr(c) for c in range(0x20, 0x2100)) + "".join(chr(c) + "ab" for c in _JSON_INERT)
    got = json_inert(text)
    assert got == text.translate(_JSON_INERT)
    assert not set(got) & {chr(c) for c in _JSON_INERT}
    assert json_inert("plain \u00e9 text") == "plain \u00e9 text"
