"""The README's query of the attempts' outcomes filters the cause lines before it joins them with the
attempts (a join of every line with `attempts`, grouped, read 15 M rows of a long run for a few hundred
cause lines): it gives the rows of the one-pass definition, every line joined and the causes counted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ranktrace.ingest.pipeline import ingest
from ranktrace.query import run_query

from rt_testlib import sample_files as _files
from .test_sample_bundles import BUNDLES

REPO = Path(__file__).resolve().parents[2]
DEFINITION = """SELECT a.attempt, a.outcome, a.max_step, count(e.event_id) FILTER (WHERE e.role = 'cause') AS causes
FROM attempts a LEFT JOIN events_aligned e USING (attempt)
GROUP BY ALL ORDER BY a.attempt"""


def _readme_query() -> str:
    text = (REPO / "README.md").read_text()
    found = [q for q in re.findall(r'ranktrace sql "(SELECT .*?)" --db', text, re.S) if "FROM attempts a" in q]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("name", ["torchrun_restart_resume", "torchrun_restart_recurring_crash",
                                  "slurm_requeue_node_failure"])
def test_the_readme_attempts_query_gives_the_definitions_rows(tmp_path, monkeypatch, catalog, name):
    bundle = next(b for b in BUNDLES if b.name == name)
    db = str(tmp_path / "s.store")
    monkeypatch.chdir(bundle.parent)
    ingest(_files(bundle), db, catalog)
    _, want = run_query(db, DEFINITION)
    _, got = run_query(db, _readme_query())
    assert len(want) > 1 and sum(r[3] for r in want) > 0, want   # attempts, and cause lines to count
    assert got == want
