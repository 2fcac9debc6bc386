"""Real captured incidents (sample_logs/) ingest as cleanly as the shapes:
no file fails, >= 95% of lines claimed per bundle, rank-prefixed lines carry
their rank, lines that begin with a time have one."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUNDLES = sorted(p for p in (REPO / "sample_logs").iterdir() if p.is_dir()) if (REPO / "sample_logs").is_dir() else []


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.name for b in BUNDLES])
def test_bundle_ingests_cleanly(bundle, ingest_to):
    from ranktrace.commands.demo import ANSWER_FILES
    s, con = ingest_to([bundle], exclude=ANSWER_FILES)
    assert con.execute("SELECT count(*) FROM files WHERE path LIKE '%truth.json' OR path LIKE '%README.md'"
                       ).fetchone()[0] == 0
    assert [(f.path, f.status, f.problems) for f in s.files if f.status not in ("ingested", "empty")] == []
    total, raw = con.execute("""
        SELECT sum(end_line - line + 1), count(*) FILTER (WHERE format = 'raw') FROM events
    """).fetchone()
    unclaimed = con.execute("""
        SELECT file, line, raw FROM events WHERE format = 'raw' LIMIT 5""").fetchall()
    assert (total - raw) / total >= 0.95, f"{raw}/{total} unclaimed, e.g. {unclaimed}"
    rows = con.execute(r"SELECT rank, raw FROM events WHERE regexp_matches(raw, '^\[rank\d+\]:') "
                       "AND end_line = line").fetchall()
    assert [(r, raw[:60]) for r, raw in rows if r != int(re.match(r"\[rank(\d+)\]:", raw).group(1))] == []
