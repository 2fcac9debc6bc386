"""Real captured incidents (sample_logs/) ingest as cleanly as the shapes:
no file fails, >= 95% of lines claimed per bundle, rank-prefixed lines carry
their rank, lines that begin with a time have one."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUNDLES = sorted(p for p in (REPO / "sample_logs").iterdir() if p.is_dir()) if (REPO / "sample_logs").is_dir() else []


@pytest.fixture(scope="module")
def all_bundles(tmp_path_factory, catalog):
    """(summary, connection) of one store of every bundle: what this file checks is each file's and each
    line's own (its claim, its rank prefix), so one ingest of them all holds what one per bundle would,
    at one ingest's fixed cost instead of ~28."""
    from ranktrace.commands.demo import ANSWER_FILES
    from ranktrace.ingest.pipeline import ingest
    from ranktrace.store import connect as store_connect
    db = str(tmp_path_factory.mktemp("bundles") / "store")
    s = ingest([str(b) for b in BUNDLES], db, catalog, exclude=ANSWER_FILES)
    con = store_connect(db)
    yield s, con
    con.close()


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.name for b in BUNDLES])
def test_bundle_ingests_cleanly(bundle, all_bundles):
    s, con = all_bundles
    mine = f"{bundle.name}/%"
    assert con.execute("SELECT count(*) FROM files WHERE path LIKE ?", [mine]).fetchone()[0] > 0
    assert con.execute("SELECT count(*) FROM files WHERE path LIKE ? AND (path LIKE '%truth.json' "
                       "OR path LIKE '%README.md')", [mine]).fetchone()[0] == 0
    assert [(f.path, f.status, f.problems) for f in s.files
            if f.path.startswith(f"{bundle.name}/") and f.status not in ("ingested", "empty")] == []
    total, raw = con.execute("""
        SELECT sum(end_line - line + 1), count(*) FILTER (WHERE format = 'raw') FROM events WHERE file LIKE ?
    """, [mine]).fetchone()
    unclaimed = con.execute("""
        SELECT file, line, raw FROM events WHERE format = 'raw' AND file LIKE ? LIMIT 5""", [mine]).fetchall()
    assert (total - raw) / total >= 0.95, f"{raw}/{total} unclaimed, e.g. {unclaimed}"
    rows = con.execute(r"SELECT rank, raw FROM events WHERE regexp_matches(raw, '^\[rank\d+\]:') "
                       "AND end_line = line AND file LIKE ?", [mine]).fetchall()
    assert [(r, raw[:60]) for r, raw in rows if r != int(re.match(r"\[rank(\d+)\]:", raw).group(1))] == []
