"""Held-out excerpts (tests/correlate/heldout/): shapes from public bug reports (heldout.json names each
source; hosts, ids and paths rewritten, messages kept) that no format was built from. Each is ingested
alone, as a new user would. Scored like benchmarks/accuracy.py: located (the culprit fields the truth
gives agree), kind (one of the acceptable kinds), confident-wrong (a miss at confidence >= 0.8: none
allowed). `none` is never acceptable: every excerpt shows a failure."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from ranktrace.correlate import diagnose
from ranktrace.ingest.pipeline import ingest
from ranktrace.store import connect as store_connect

HERE = Path(__file__).resolve().parent / "heldout"
CASES = json.loads((HERE / "heldout.json").read_text())


def located(v: dict, t: dict) -> bool:
    checks = [v.get(k) == t[k] for k in ("rank", "host", "pid") if t.get(k) is not None]
    if t.get("pod"):
        checks.append(t["pod"] in (v.get("pod"), v.get("host")))
    return all(checks) if checks else v.get("rank") is None


def score(case: dict, tmp_path: Path, catalog, monkeypatch) -> dict:
    monkeypatch.chdir(HERE)
    db = str(tmp_path / (case["file"] + ".duckdb"))
    ingest([case["file"]], db, catalog)
    con = store_connect(db)
    try:
        v = diagnose(con)["verdict"]
    finally:
        con.close()
    loc = located(v, case) if case["decidable"] else None
    kind = v["kind"] in case["kinds"]
    return {"file": case["file"], "verdict": v, "located": loc, "kind": kind,
            "confident_wrong": v["confidence"] >= 0.8 and (loc is False or not kind)}


def test_heldout_excerpts(tmp_path, catalog, monkeypatch):
    rs = [score(c, tmp_path, catalog, monkeypatch) for c in CASES]
    table = "\n".join(f"{r['file']}: {r['verdict']['kind']} r{r['verdict']['rank']} {r['verdict']['host']} "
                      f"conf {r['verdict']['confidence']} located={r['located']} kind={r['kind']}" for r in rs)
    assert not [r for r in rs if r["verdict"]["kind"] == "none"], table
    assert not [r for r in rs if r["confident_wrong"]], table
    dec = [r for r in rs if r["located"] is not None]
    assert sum(r["located"] for r in dec) >= 0.8 * len(dec), table
    assert sum(r["kind"] for r in rs) >= 0.85 * len(rs), table
    # what the text does not decide stays below 0.8
    assert all(r["verdict"]["confidence"] < 0.8 for r, c in zip(rs, CASES) if not c["decidable"]), table
