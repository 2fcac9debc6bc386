"""Shared fixtures: a catalog, an ingest helper that builds a real DuckDB store."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from ranktrace.formats import load_catalog
from ranktrace.ingest.pipeline import ingest

from rt_testlib import REPO, SHAPES, diagnosed_sample, run_dir, write  # noqa: F401  (re-exported for fixtures)
from ranktrace.store import connect as store_connect


# tryfirst: xdist's own hook reads the xdist_group marks in this same hook;
# without it, pluggy's order let xdist read them before they were added and
# the groups were silently ignored (two workers each started Slurm in CI).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # scripts/test.sh runs the suite on every core (pytest-xdist, --dist
    # loadgroup). A module's tests stay on one worker so its module fixtures
    # (stores ingested once) are built once; every e2e test shares one worker
    # because the host has one Slurm cluster, started and stopped by the
    # session fixture of whichever process runs them.
    for item in items:
        group = "e2e" if item.get_closest_marker("e2e") else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def catalog():
    # Samples are checked by tests/formats/test_samples.py, one failure per
    # sample, rather than by every test that needs a catalog.
    return load_catalog(check_samples=False)


@pytest.fixture(scope="session")
def sample_diagnosis(tmp_path_factory, catalog):
    """bundle dir of sample_logs/ -> (its store, its diagnosis): made once a run, by whichever worker
    asks first (rt_testlib.diagnosed_sample). The store is to be read, never written."""
    root = run_dir(tmp_path_factory)
    made: dict[Path, tuple[Path, dict]] = {}

    def get(bundle: Path) -> tuple[Path, dict]:
        if bundle not in made:
            made[bundle] = diagnosed_sample(bundle, root, catalog)
        return made[bundle]
    return get


@pytest.fixture
def ingest_to(tmp_path, catalog):
    """ingest_to(paths) -> (summary, read-only connection) on a fresh store."""
    cons = []

    def run(paths, db=None, **kw):
        db = db or str(tmp_path / "store.duckdb")
        summary = ingest([str(p) for p in paths], db, catalog, **kw)
        con = store_connect(db)
        cons.append(con)
        return summary, con

    yield run
    for c in cons:
        c.close()
