"""queries/data/messages.csv: every catalogued message (pattern -> kind -> role, with the emitter's source
file) has a format sample that contains it and that the pipeline classifies to that kind; the role is the
kind's role in kinds*.toml. A catalogued message nothing classifies fails here."""

from __future__ import annotations

import csv
import re

import pytest

from ranktrace.formats import load_catalog
from ranktrace.resources import data_dir
from ranktrace.samples import run_text

CAT = load_catalog(check_samples=False)
SAMPLES = [s for f in CAT.formats for s in f.samples]
ROWS = list(csv.DictReader((data_dir("queries") / "data" / "messages.csv").open()))


def _kind_of(sample) -> set[str]:
    ev = run_text(CAT, sample.text, envelopes=sample.envelope).events
    return {k for k in ev["kind"].to_list() if k}


def test_catalog_is_well_formed():
    assert len(ROWS) >= 50
    for r in ROWS:
        assert set(r) == {"message", "kind", "role", "emitter", "source_repo", "source_file"}, r
        assert all(r[k].strip() for k in r), r
        assert "/" in r["source_repo"] and r["kind"] in CAT.kinds, r
        re.compile(r["message"])


@pytest.mark.parametrize("row", ROWS, ids=[r["message"][:40] for r in ROWS])
def test_catalogued_message_has_a_sample_that_classifies_it(row):
    assert CAT.kinds[row["kind"]].role == row["role"], f"{row['kind']} has role {CAT.kinds[row['kind']].role}"
    rx = re.compile(row["message"])
    matching = [s for s in SAMPLES if rx.search(s.text)]
    assert matching, f"no sample in parsers/ contains {row['message']!r} ({row['emitter']}, {row['source_file']})"
    got = {k for s in matching for k in _kind_of(s)}
    assert row["kind"] in got, f"{row['message']!r}: samples classify it as {sorted(got)}, catalog says {row['kind']}"
