"""Samples are tests: every sample of every format, through the whole pipeline."""

import pytest

from ranktrace.formats import load_catalog
from ranktrace.samples import check_catalog, check_sample

CAT = load_catalog(check_samples=False)
SAMPLES = [s for f in CAT.formats for s in f.samples]


@pytest.mark.parametrize("sample", SAMPLES, ids=[f"{s.format}-{i}" for i, s in enumerate(SAMPLES)])
def test_sample(sample):
    assert check_sample(CAT, sample) == []


def test_every_rule_is_exercised_and_catalog_loads():
    problems = [p for p in check_catalog(CAT) if "exercised by no sample" in p]
    assert problems == []
    load_catalog()  # the strict loader agrees


def test_every_format_says_where_its_samples_come_from():
    assert [f.name for f in CAT.formats if not f.provenance.strip()] == []
