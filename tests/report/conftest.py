"""Fixtures for the report / export tests: REAL stores built by ingesting
real logs (helpers and the rationale in report_helpers.py)."""
from __future__ import annotations

import pytest

from report_helpers import SHAPES
from rt_testlib import ingest_sample


@pytest.fixture(scope="session")
def catalog():
    from ranktrace.formats import load_catalog
    # "drop": a format whose samples fail is left out (its own tests say so); the
    # report tests need a working catalogue, not a perfect one
    return load_catalog(check_samples="drop")


@pytest.fixture(scope="session")
def shapes_store(tmp_path_factory, catalog):
    if not SHAPES.is_dir() or not any(SHAPES.glob("*.log")):
        pytest.skip(f"{SHAPES} not present")
    d = tmp_path_factory.mktemp("shapes")
    return ingest_sample(SHAPES, d / "shapes.duckdb", catalog)


@pytest.fixture(scope="session")
def verdict_factory(sample_diagnosis, tmp_path_factory):
    """bundle dir -> (store, verdict dict, verdict JSON file): the run's one diagnosis of the bundle
    (sample_diagnosis), its echoes folded as `ranktrace report` folds them (report.verdict.get_verdict)."""
    import json

    from ranktrace.report.verdict import fold_echoes

    from report_helpers import open_ro
    cache: dict = {}

    def get(bundle):
        if bundle not in cache:
            db, doc = sample_diagnosis(bundle)
            con = open_ro(db)
            try:
                v = fold_echoes(con, doc)
            finally:
                con.close()
            path = tmp_path_factory.mktemp("verdict") / f"{bundle.name}.json"
            path.write_text(json.dumps(v, default=str))
            cache[bundle] = (db, v, path)
        return cache[bundle]
    return get
