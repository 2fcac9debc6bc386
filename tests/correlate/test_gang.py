"""A broken gang: one pod restarted alone while the other ranks wait (ranktrace.correlate.gang)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from ranktrace.correlate import diagnose
from ranktrace.ingest.pipeline import ingest

from .fixtures import ev, steps, store
from ranktrace.store import connect as store_connect

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "sample_logs" / "k8s_gang_partial_restart"
PODS = {"w-0": [0, 1], "w-1": [2, 3]}


def _job(peer_next: float, restart_log: bool = True, backoff: bool = True):
    evs = []
    for e in steps({"n1": [0, 1], "n2": [2, 3]}, 10):
        e["pod"] = "w-0" if e["rank"] in (0, 1) else "w-1"
        evs.append(e)
    evs.append(ev(5.2, "RuntimeError: boom", kind="python_exception", host="n2", rank=3, pod="w-1",
                  file="pods/ml_w-1_e66d30ff-b92e/pytorch/0.log"))
    if restart_log:
        for r in (2, 3):
            evs.append(ev(20.0 + r, f"[rank{r}] worker started", host="n2", rank=r, pod="w-1",
                          file="pods/ml_w-1_e66d30ff-b92e/pytorch/1.log"))
    if backoff:
        evs.append(ev(15.0, "Back-off restarting failed container pytorch in pod w-1_ml(e66d30ff-b92e)", pod="w-1",
                      file="events.txt"))
    for r in (0, 1):
        evs.append(ev(peer_next, f"[Rank {r}] Watchdog caught collective operation timeout", kind="collective_timeout",
                      host="n1", rank=r, pod="w-0"))
    return evs


def test_restarted_pod_and_silent_peers_give_idle_ranks_nodes_and_window():
    d = diagnose(store(_job(peer_next=605.2)))
    assert d["verdict"]["kind"] == "exception" and d["verdict"]["rank"] == 3   # the first failure stays the cause
    g = d["gang"]
    assert [p["pod"] for p in g["restarted_pods"]] == ["w-1"] and g["restarted_pods"][0]["ranks"] == [2, 3]
    assert g["restarted_pods"][0]["restart_at"] == "2026-03-02T03:00:22.000Z"   # the new container's first line
    assert g["waiting_ranks"] == [0, 1] and g["waiting_nodes"] == ["n1"] and g["idle_ranks"] == 4
    assert g["from"] == "2026-03-02T03:00:05.200Z" and g["to"] == "2026-03-02T03:10:05.200Z" and g["idle_s"] == 600.0


def test_peers_that_fail_at_once_or_no_restart_are_not_a_broken_gang():
    assert diagnose(store(_job(peer_next=23.0)))["gang"] is None          # they noticed within seconds
    assert diagnose(store(_job(peer_next=605.2, restart_log=False, backoff=False)))["gang"] is None


def test_backoff_alone_names_the_pod_without_a_restart_time():
    g = diagnose(store(_job(peer_next=605.2, restart_log=False)))["gang"]
    assert g["restarted_pods"][0]["pod"] == "w-1" and g["restarted_pods"][0]["restart_at"] is None
    assert g["waiting_ranks"] == [0, 1]


def test_sample_bundle(tmp_path, catalog, monkeypatch):
    want = json.loads((BUNDLE / "expected_verdict.json").read_text())
    monkeypatch.chdir(BUNDLE.parent)   # relative paths, as a user ingests
    files = sorted(str(p.relative_to(BUNDLE.parent)) for p in BUNDLE.rglob("*")
                   if p.is_file() and p.name not in ("README.md", "expected_verdict.json"))
    ingest(files, str(tmp_path / "g.duckdb"), catalog)
    con = store_connect(str(tmp_path / "g.duckdb"))
    try:
        d = diagnose(con)
    finally:
        con.close()
    g, wg = d["gang"], want["gang"]
    assert [p["pod"] for p in g["restarted_pods"]] == wg["restarted_pods"]
    assert g["restarted_ranks"] == wg["restarted_ranks"] and g["waiting_ranks"] == wg["waiting_ranks"]
    assert g["waiting_nodes"] == wg["waiting_nodes"] and g["idle_ranks"] == wg["idle_ranks"]
    assert g["restarted_pods"][0]["restart_at"] == wg["restart_at"]
    assert abs((_t(g["to"]) - _t(wg["idle_to"]))) < 1.0     # the first watchdog line, on the aligned clock
    assert d["impact"]["gpus"] == want["impact"]["gpus"]
    assert abs(d["impact"]["gpu_hours"] - want["impact"]["gpu_hours_about"]) < 0.05


def _t(s: str) -> float:
    import datetime as dt
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
