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


def test_presence_rules_out_only_what_the_batch_lacks(catalog):
    import polars as pl

    from ranktrace.ingest.dispatch import Presence, required_literals
    rx_nccl = r"^(?P<host>\S+):\d+:\d+ \[\d+\] NCCL WARN (?P<m>.*)$"
    rx_oom = r"CUDA out of memory\. (?P<m>.*)$"
    rx_multi = r'^\S+\n  File "'
    tested = ((rx_nccl, None), (rx_oom, None), (rx_multi, None), (r"^x", "never-there"))
    batch = pl.Series(["n1:1:2 [0] NCCL WARN NET/IB : Got completion with error 12", "plain"])
    pr = Presence(batch, tested)
    assert not pr.absent(rx_nccl)
    assert pr.absent(rx_oom)
    assert pr.absent(r"^x", "never-there")
    # A literal across lines is never ruled out (block lines need not be neighbours).
    assert "\n" in "".join(required_literals(rx_multi) or ("\n",))
    assert not pr.absent(rx_multi)
    # A regex with no literal at all cannot be ruled out.
    assert not pr.absent(r"^(?P<a>\w+)$")
    pr2 = Presence(pl.Series(["RuntimeError: CUDA out of memory. Tried to allocate 2 GiB"]), tested)
    assert pr2.absent(rx_nccl)
    assert not pr2.absent(rx_oom)
    # Literals are looked for in a sample of the lines first: one on a line
    # the sample skips is still found, one in the sample too.
    lines = ["plain"] * (Presence.SAMPLE_LINES * 5)
    lines[7] = "n1:1:2 [0] NCCL WARN NET/IB : Got completion with error 12"
    lines[0] = "CUDA out of memory. Tried to allocate 2 GiB"
    pr3 = Presence(pl.Series(lines), tested)
    assert not pr3.absent(rx_nccl) and not pr3.absent(rx_oom)
    assert pr3.absent(r"^x", "never-there")


def test_presence_agrees_with_a_scan_on_the_samples(catalog):
    """Every pattern, rule and fact a sample line matches is present for a
    batch made of the sample lines."""
    import polars as pl

    from ranktrace.ingest.dispatch import Presence
    texts = [s.text for f in catalog.formats for s in f.samples]
    pr = Presence(pl.Series(texts), catalog.line_tests + catalog.message_tests)
    for regex, prefilter in catalog.line_tests + catalog.message_tests:
        rx = re.compile(regex)
        if any(rx.search(t) for t in texts):
            assert not pr.absent(regex, prefilter), regex[:80]


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
