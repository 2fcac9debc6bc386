"""Every pattern gives the same captures in polars (Rust regex), DuckDB (RE2)
and Python `regex` on its own samples."""

import duckdb
import polars as pl
import pytest

from ranktrace.formats import load_catalog

CAT = load_catalog(check_samples=False)
CASES = [(p, s.text.split("\n")[0]) for f in CAT.formats for s in f.samples if not s.envelope
         for p in f.patterns if p.id == s.pattern]
CASES += [(e, text) for e in CAT.envelopes for text, _ in e.samples]


@pytest.mark.parametrize("pattern,text", CASES, ids=[f"{getattr(p, 'key', getattr(p, 'name', ''))}-{i}"
                                                   for i, (p, _) in enumerate(CASES)])
def test_three_engines_agree(pattern, text):
    names = list(pattern.compiled.groupindex)
    m = pattern.compiled.search(text)
    assert m, "the sample must match in Python regex"
    con = duckdb.connect()
    if not names:  # nothing to capture: the three engines must agree it matches
        assert pl.Series([text]).str.contains(pattern.regex)[0]
        assert con.execute("SELECT regexp_matches(?, ?)", [text, pattern.regex]).fetchone()[0]
        return
    py = {n: m.group(n) for n in names}
    pol = pl.DataFrame({"t": [text]}).select(pl.col("t").str.extract_groups(pattern.regex)).unnest("t").row(0, named=True)
    assert {n: pol.get(n) for n in names} == py
    row = con.execute("SELECT regexp_extract(?, ?, ?)", [text, pattern.regex, names]).fetchone()[0]
    got = {n: (row[n] if m.group(n) is not None else None) for n in names}
    # RE2 reports an unmatched group as '' where the others say null.
    assert {n: (v or None) for n, v in got.items()} == {n: (v or None) for n, v in py.items()}
