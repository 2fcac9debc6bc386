import re

import pytest

from ranktrace.ingest.dispatch import NON_ASCII, first_chars


@pytest.mark.parametrize("rx,expect", [
    (r"^NCCL (?P<x>\w+)", {"N"}),
    (r"^(?:srun|slurmstepd)(?:-\w+)?: ", {"s"}),
    (r"^.*foo", None),
    (r"^(?i)abc", None),
    (r"^x?", None),                                                  # can match empty
])
def test_first_chars(rx, expect):
    got = first_chars(rx)
    assert got == (None if expect is None else frozenset(expect))


def test_optional_prefix_and_classes():
    got = first_chars(r"^(?:\[(?P<ts>\d+)\] )?(?P<host>[\w.-]+):")
    assert {"[", ".", "-", "a", "Z", "0", "_"} <= got and NON_ASCII in got
    assert "/" not in got and " " not in got
    got = first_chars(r"^\s*(?P<rank>\d+): ")
    assert {" ", "\t", "0", "9"} <= got and "a" not in got


def pattern_samples(catalog):
    """(pattern, sample text) for every line sample of a pattern."""
    for f in catalog.formats:
        for s in f.samples:
            p = next((p for p in f.patterns if p.id == s.pattern), None)
            if p is not None and not s.envelope:
                yield p, s.text


def test_every_pattern_agrees_with_its_samples(catalog):
    """A sample's first character must be in its pattern's first-char set."""
    for p, text in pattern_samples(catalog):
        fc = first_chars(p.regex)
        c = text[:1] if text[:1].isascii() else NON_ASCII
        assert fc is None or c in fc, (p.key, text[:40])


@pytest.mark.parametrize("rx,lit", [
    (r"^(?P<host>[\w.-]+):(?P<pid>\d+) \[(?P<gpu>\d+)\] NCCL (?P<level>INFO|WARN) (?P<message>.*)$", "] NCCL "),
    (r"^srun: error: (?P<node>\S+): tasks? ", "srun: error: "),
    (r"^(?:foo|bar)baz", "baz"),
    (r"^(?:foo|bar)ba", None),
    (r"^(?:optional text)?x", None),
])
def test_required_literal(rx, lit):
    from ranktrace.ingest.dispatch import required_literal
    assert required_literal(rx) == lit


def test_required_literals_any_of_an_alternation():
    from ranktrace.ingest.dispatch import required_literals
    # The parser factors the common "s" out of the alternation; any of the
    # rest still has to be there.
    lits = required_literals(r"^(?P<program>srun|salloc|sbatch): (?P<m>.*)$")
    assert lits == ("alloc", "batch", "run")
    assert required_literals(r"^(?:CUDA kernel errors.*|For debugging consider.*)$") == (
        "CUDA kernel errors", "For debugging consider")
    assert required_literals(r"^(?:ab|abcdef)x") is None


def test_required_literals_are_in_every_sample(catalog):
    from ranktrace.ingest.dispatch import required_literals
    for p, text in pattern_samples(catalog):
        lits = required_literals(p.regex)
        assert lits is None or any(x in text for x in lits), (p.key, lits, text[:60])


@pytest.mark.parametrize("rx,expect", [
    (r"^x(?P<m>.*)$", (r"(?P<__pre>^x)", "m")),
    (r"^\[(?P<u>\d+\.\d+)\]\s+\S.*$", (r"(?P<__pre>^\[(?P<u>\d+\.\d+)\]\s+\S)", None)),
    (r"^(?:a|b.*)$", None),       # the .* is inside a group
    (r"^a\.*$", None),            # an escaped dot
    (r"^x.*?$", None),
    (r"x(?P<m>.*)$", None),       # not anchored
])
def test_split_tail(rx, expect):
    from ranktrace.ingest.dispatch import split_tail
    assert split_tail(rx) == expect


def test_split_prefix_decides_the_match_like_the_whole_regex(catalog):
    """For every pattern that splits, its prefix matches a sample exactly when
    the whole regex does, with the same captures."""
    from ranktrace.ingest.dispatch import split_tail
    lines = [s.text for f in catalog.formats for s in f.samples if "\n" not in s.text]
    for p in catalog.patterns:
        split = split_tail(p.regex)
        if split is None:
            continue
        whole, pre = re.compile(p.regex), re.compile(split[0])
        for text in lines:
            m, n = whole.search(text), pre.search(text)
            assert (m is None) == (n is None), (p.key, text)
            if m:
                groups = {k: v for k, v in m.groupdict().items() if k != split[1]}
                assert groups == {k: v for k, v in n.groupdict().items() if k != "__pre"}, (p.key, text)
                if split[1]:
                    assert m.group(split[1]) == text[n.end():], (p.key, text)
