"""torchrun --tee with --log-dir writes every line of a rank twice (console
and attempt_N/R/stdout.log): table `echoes` marks the copies and readers show
each line once (issue 15)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from ranktrace.cli import main
from ranktrace.store import connect as store_connect

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "sample_logs" / "slurm_torchrun_sigkill_skew"
ANSWERS = ["README.md", "truth.json", "expected_verdict.json"]


def _ingest(db: Path, paths: list[str]) -> str:
    from ranktrace.formats import load_catalog
    from ranktrace.ingest.pipeline import ingest
    ingest(paths, str(db), load_catalog(check_samples=False), warn=lambda m: None, exclude=ANSWERS)
    return str(db)


@pytest.fixture(scope="module")
def tee_store(tmp_path_factory):
    return _ingest(tmp_path_factory.mktemp("tee") / "tee.duckdb", [str(BUNDLE)])


def test_echoes_are_the_console_copies_of_per_rank_lines(tee_store):
    con = store_connect(tee_store)
    rows = con.execute("""
        SELECT e.rank, k.rank, e.message, k.message, e.file, k.file, abs(epoch(e.ts) - epoch(k.ts))
        FROM echoes x JOIN events e ON e.event_id = x.event_id JOIN events k ON k.event_id = x.of_event_id
    """).fetchall()
    con.close()
    assert len(rows) >= 80
    for er, kr, em, km, ef, kf, dt in rows:
        assert er == kr and em == km and ef != kf and (dt is None or dt <= 2.0)
        assert ef.endswith("slurm-1.out") and "/attempt_0/" in kf   # the per-rank file is kept
    assert len({(r[5], r[2]) for r in rows}) == len(rows)           # one echo per kept line here


def test_echoes_do_not_depend_on_file_order(tee_store, tmp_path):
    files = sorted(str(p) for p in BUNDLE.rglob("*") if p.is_file() and p.name not in ANSWERS)
    other = _ingest(tmp_path / "rev.duckdb", files[::-1])
    q = "SELECT event_id, of_event_id FROM echoes ORDER BY 1"
    a = store_connect(tee_store)
    b = store_connect(other)
    # event ids hang on the path as given: compare by (file suffix, line)
    key = ("SELECT regexp_extract(e.file, 'slurm_torchrun_sigkill_skew/.*'), e.line, "
           "regexp_extract(k.file, 'slurm_torchrun_sigkill_skew/.*'), k.line FROM echoes x "
           "JOIN events e ON e.event_id = x.event_id JOIN events k ON k.event_id = x.of_event_id ORDER BY 1, 2")
    assert a.execute(key).fetchall() == b.execute(key).fetchall()
    assert a.execute(q).fetchall()
    a.close()
    b.close()


def test_tui_lists_each_line_once(tee_store):
    from ranktrace.tui.data import StoreData
    s = StoreData(tee_store, verdict_fn=lambda con: None)
    try:
        rows = s.events_page(None, None, limit=2000)
        seen = Counter((r.rank, r.message, round(r.orig or 0, 1)) for r in rows if r.rank is not None)
        dup = {k: n for k, n in seen.items() if n > 1}
        assert not dup, list(dup.items())[:3]
        total = s._cur().execute("SELECT count(*) FROM events").fetchone()[0]
        echoes = s._cur().execute("SELECT count(*) FROM echoes").fetchone()[0]
        assert s.count_events() == total - echoes
        assert sum(ln.events for ln in s.lanes()) == total - echoes
    finally:
        s.close()


def test_evidence_and_cascade_cite_no_echo(tee_store, capsys):
    assert main(["diagnose", "--db", tee_store, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    con = store_connect(tee_store)
    echo_lines = set(con.execute("SELECT e.file, e.line FROM echoes x JOIN events e USING (event_id)").fetchall())
    con.close()
    cited = [(x["file"], x["line"]) for sec in ("evidence", "cascade") for x in d[sec]]
    assert cited and not (set(cited) & echo_lines)
    assert any("/attempt_0/" in f for f, _ in cited)     # a folded entry points at the per-rank file
    assert main(["report", "--db", tee_store, "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    tl = [(t["file"], t["line"]) for t in rep["report"]["timeline"] if t.get("file")]
    assert len(tl) == len(set(tl)) and not ({(f, ln) for f, ln in tl} & echo_lines)
