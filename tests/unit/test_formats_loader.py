"""The loader refuses what it must refuse, with a message naming the file."""

import pytest

from ranktrace.formats import FormatError, load_catalog

GOOD = '''
name = "mytool"
description = "test"
[[pattern]]
id = "line"
regex = \'\'\'^MYTOOL (?P<level>ERR|INF) (?P<message>.*)$\'\'\'
[levels]
ERR = "error"
[[rule]]
regex = "exploded"
kind = "python_exception"
[[sample]]
text = "MYTOOL ERR it exploded"
expect = { level = "ERR" }
kind = "python_exception"
'''


def user_dir(tmp_path, text, name="mytool.toml"):
    d = tmp_path / "fmts"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text)
    return d


def test_user_format_directory_is_loaded_and_used(tmp_path):
    cat = load_catalog([user_dir(tmp_path, GOOD)])
    assert "mytool" in [f.name for f in cat.formats]
    from ranktrace.samples import run_text
    ev = run_text(cat, "MYTOOL ERR it exploded").events.row(0, named=True)
    assert (ev["format"], ev["kind"], ev["severity"]) == ("mytool", "python_exception", "error")


def test_format_without_samples_is_refused(tmp_path):
    text = GOOD.split("[[rule]]")[0]
    with pytest.raises(FormatError, match=r"mytool.toml.*must have samples"):
        load_catalog([user_dir(tmp_path, text)])


def test_sample_that_does_not_match_is_refused(tmp_path):
    text = GOOD.replace('text = "MYTOOL ERR it exploded"', 'text = "OTHER ERR it exploded"')
    with pytest.raises(FormatError, match="claimed by nothing"):
        load_catalog([user_dir(tmp_path, text)])


def test_rule_no_sample_exercises_is_refused(tmp_path):
    text = GOOD.replace('[[sample]]', '[[rule]]\nregex = "never seen"\nkind = "gpu_oom"\n[[sample]]')
    with pytest.raises(FormatError, match="exercised by no sample"):
        load_catalog([user_dir(tmp_path, text)])


def test_lookaround_is_refused_as_not_portable(tmp_path):
    text = GOOD.replace("^MYTOOL ", "^(?!x)MYTOOL ")
    with pytest.raises(FormatError, match="portable"):
        load_catalog([user_dir(tmp_path, text)])


def test_unknown_kind_is_refused(tmp_path):
    text = GOOD.replace('kind = "python_exception"\n[[sample]]', 'kind = "no_such_kind"\n[[sample]]')
    with pytest.raises(FormatError, match="no_such_kind"):
        load_catalog([user_dir(tmp_path, text)])


def test_precedence_puts_specific_before_generic(tmp_path):
    generic = '''
name = "generic"
[[pattern]]
id = "any"
regex = \'\'\'^(?P<word>\\w+) (?P<message>.*)$\'\'\'
[[sample]]
text = "hello world"
'''
    user_dir(tmp_path, GOOD)
    cat = load_catalog([user_dir(tmp_path, generic, "generic.toml")])
    keys = [p.key for p in cat.patterns]
    assert keys.index("mytool.line") < keys.index("generic.any")
