"""Aligned time in the store (issue 15): every ingest writes clock_offsets
(ranktrace.correlate.clock's estimate) and view events_aligned, so the
README's "who went silent first" query and the TUI console's default query
agree with the verdict under clock skew."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest

from ranktrace.query import run_query
from ranktrace.store import connect as store_connect

REPO = Path(__file__).resolve().parents[2]
ANSWERS = ["README.md", "truth.json", "expected_verdict.json"]


def _readme_silent_query() -> str:
    text = (REPO / "README.md").read_text()
    q = next(q for q in re.findall(r"```sql\n(.*?)```", text, re.S) if "went silent" in text and "progress" in q)
    return q


@pytest.fixture(scope="module")
def skewed(tmp_path_factory, catalog_mod):
    from ranktrace.ingest.pipeline import ingest
    out = {}
    for name in ("torchrun_hang_skew", "torchrun_exception_skew", "slurm_torchrun_sigkill_skew"):
        bundle = REPO / "sample_logs" / name
        db = str(tmp_path_factory.mktemp("clock") / f"{name}.duckdb")
        ingest([str(bundle)], db, catalog_mod, warn=lambda m: None, exclude=ANSWERS)
        out[name] = (db, json.loads((bundle / "truth.json").read_text()))
    return out


@pytest.fixture(scope="module")
def catalog_mod():
    from ranktrace.formats import load_catalog
    return load_catalog(check_samples=False)


@pytest.mark.parametrize("name", ["torchrun_hang_skew", "torchrun_exception_skew", "slurm_torchrun_sigkill_skew"])
def test_stored_offsets_match_the_injected_skew(skewed, name):
    db, truth = skewed[name]
    cols, rows = run_query(db, "SELECT host, offset_s, uncertainty_s, basis FROM clock_offsets ORDER BY host")
    got = {h: (o, u) for h, o, u, _ in rows}
    for host, want in truth["clock_offsets_s"].items():
        assert host in got, (host, got)
        off, unc = got[host]
        assert abs(off - want) <= max(unc or 0.0, 0.5), (host, off, want)
    # events_aligned: ats = ts - offset_s for every timed event of a sane year
    cols, rows = run_query(db, "SELECT count(*) FILTER (WHERE ats IS DISTINCT FROM ts - to_microseconds("
                               "CAST(round(offset_s * 1e6) AS BIGINT))), count(*) FROM events_aligned "
                               "WHERE ts IS NOT NULL")
    assert rows[0][0] == 0 and rows[0][1] > 0


def test_readme_silent_query_is_not_fooled_by_a_clock_running_behind(skewed):
    """node-c12 runs 23 s behind: on logged time its ranks seem to go silent 23 s
    before everyone else. On the aligned clock they do not."""
    db, truth = skewed["torchrun_hang_skew"]
    behind = [h for h, o in truth["clock_offsets_s"].items() if o < 0][0]
    q = _readme_silent_query()
    assert "ats" in q and "events_aligned" in q
    _, aligned = run_query(db, q)
    _, logged = run_query(db, q.replace("max(ats)", "max(ts)").replace("events_aligned", "events"))
    assert logged[0][0] == behind                    # the trap the README query used to fall in
    assert aligned[0][0] != behind
    spread = (aligned[-1][2] - aligned[0][2]).total_seconds()
    assert spread < 1.0                              # all ranks stopped together on the aligned clock


def test_diagnose_offsets_agree_with_the_store_and_pins_still_override(skewed, capsys):
    from ranktrace.cli import main
    db, truth = skewed["torchrun_exception_skew"]
    assert main(["diagnose", "--db", db, "--format", "json", "--offset", "gpu-b03=30"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {c["host"]: c["offset_s"] for c in d["clock"]}["gpu-b03"] == 30.0
    con = store_connect(db)
    assert con.execute("SELECT offset_s FROM clock_offsets WHERE host = 'gpu-b03'").fetchone()[0] == \
        pytest.approx(37.0, abs=0.5)                 # the pin is for that run only
    con.close()


def test_tui_console_default_query_uses_aligned_time(skewed):
    from ranktrace.tui.data import StoreData
    db, truth = skewed["torchrun_exception_skew"]
    s = StoreData(db, verdict_fn=lambda con: None)
    try:
        q = s.default_query()
        assert "ats" in q and "events_aligned" in q
        r = s.run_sql(q)
        assert r.error is None and r.rows
        assert s.offsets.get("gpu-b03") == pytest.approx(37.0, abs=0.5)   # aligned before any diagnosis
    finally:
        s.close()


def test_canned_last_words_names_the_hung_rank_first(skewed):
    """queries/canned read aligned time: the rank that went quiet first is the hung one,
    not the ranks of the host whose clock runs 23 s behind."""
    db, truth = skewed["torchrun_hang_skew"]
    sql = (REPO / "queries" / "canned" / "last_words_per_rank.sql").read_text()
    cols, rows = run_query(db, sql)
    first = dict(zip(cols, rows[0]))
    assert (first["host"], first["rank"]) == (truth["host"], truth["rank"])
