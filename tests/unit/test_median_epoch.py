"""store.median_epoch gives what DuckDB's median gives (year inference's reference), in bounded memory."""

from __future__ import annotations

import random

import duckdb
import pytest

from ranktrace.store import median_epoch


@pytest.mark.parametrize("n", [1, 2, 3, 4, 11, 1000, 4097])
def test_median_epoch_is_duckdbs_median(n):
    rng = random.Random(n)
    con = duckdb.connect()
    # times within a few seconds, many in the same second, some equal: the middle values share a second
    vals = [1.77e9 + rng.choice([0, 1, 1, 7]) + rng.choice([0.0, 0.25, rng.random()]) for _ in range(n)]
    con.execute("CREATE TABLE t AS SELECT unnest(?::DOUBLE[]) AS e", [vals])
    assert median_epoch(con, "SELECT e FROM t") == con.execute("SELECT median(e) FROM t").fetchone()[0]


def test_median_epoch_of_nothing_is_none():
    con = duckdb.connect()
    assert median_epoch(con, "SELECT 1.0::DOUBLE AS e WHERE false") is None
