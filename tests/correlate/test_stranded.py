"""Stranded GPUs: k of n pods placed, the placed pods' GPUs idle while they wait for the rest."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from ranktrace.correlate import diagnose
from ranktrace.ingest.pipeline import ingest

from .fixtures import ev, store
from ranktrace.store import connect as store_connect

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "sample_logs" / "k8s_volcano_stranded_gpus"


def _pods(blocker: str, placed=("w-0", "w-1", "w-2")):
    evs = [ev(0.0, "      nvidia.com/gpu:  4", pod="w-3"), ev(0.0, "      PET_NNODES:          4", pod="w-3")]
    for i, p in enumerate(placed):
        evs.append(ev(None, f"110s  Normal  Scheduled  pod/{p}  Successfully assigned ml/{p} to node-{i}"))
        for t in (1.0, 61.0):
            evs.append(ev(t + i, f"[rank{2 * i}] waiting for rendezvous", pod=p, rank=2 * i, host=f"node-{i}",
                          file=f"var/log/pods/ml_{p}_0c8f9a1e-1111/pytorch/0.log"))
    evs.append(ev(62.0, "RendezvousTimeoutError", kind="rdzv_timeout", pod="w-0", rank=0, host="node-0",
                  file="var/log/pods/ml_w-0_0c8f9a1e-1111/pytorch/0.log"))
    evs.append(ev(None, "w-3   0/1   Pending   0   112s   <none>   <none>"))
    evs.append(ev(None, blocker))
    return evs


def test_failed_scheduling_with_partial_placement():
    d = diagnose(store(_pods("100s  Warning  FailedScheduling  pod/w-3  0/12 nodes are available: 12 Insufficient "
                             "nvidia.com/gpu.")))
    s = d["stranded"]
    assert (s["pods_running"], s["pods_total"]) == (3, 4) and s["running_pods"] == ["w-0", "w-1", "w-2"]
    assert s["nodes_holding_gpus"] == ["node-0", "node-1", "node-2"] and s["gpus_idle"] == 12
    assert [b["pod"] for b in s["blocked"]] == ["w-3"] and s["seconds"] == 62.0
    assert s["gpu_hours"] == round(12 * 62 / 3600, 4)
    v = d["verdict"]   # the rendezvous timeout is the consequence: the pod never placed is the cause
    assert v["kind"] == "scheduling" and v["pod"] == "w-3" and v["host"] is None
    assert d["impact"]["gpus"] == 12 and d["impact"]["basis"].startswith("GPUs held by the 3 placed of 4 pods")


def test_volcano_gang_count_and_kueue_eviction():
    d = diagnose(store(_pods("98s  Warning  Unschedulable  podgroup/pg-1  1/4 tasks in gang unschedulable: pod group "
                             "is not ready, 3 Running, 4 minAvailable; Pending: 1 Unschedulable")))
    assert (d["stranded"]["pods_running"], d["stranded"]["pods_total"]) == (3, 4)
    d = diagnose(store(_pods("45s  Warning  EvictedDueToPodsReadyTimeout  workload/wl-1  Exceeded the PodsReady timeout "
                             "ml/wl-1") + [ev(None, "100s  Warning  FailedScheduling  pod/w-3  0/12 nodes are available")]))
    assert d["stranded"]["pods_running"] == 3 and d["verdict"]["pod"] == "w-3"


def test_everything_placed_or_nothing_placed_is_not_stranded():
    full = _pods("100s  Warning  FailedScheduling  pod/w-9  0/12 nodes are available", placed=("w-0", "w-1", "w-2", "w-3"))
    full = [e for e in full if "Pending" not in e["message"]]
    assert diagnose(store(full))["stranded"] is None
    assert diagnose(store([ev(None, "100s  Warning  FailedScheduling  pod/w-3  0/12 nodes are available")]))["stranded"] is None


def test_sample_bundle(tmp_path, catalog, monkeypatch):
    want = json.loads((BUNDLE / "expected_verdict.json").read_text())
    monkeypatch.chdir(BUNDLE.parent)
    files = sorted(str(p.relative_to(BUNDLE.parent)) for p in BUNDLE.rglob("*")
                   if p.is_file() and p.name not in ("README.md", "expected_verdict.json"))
    ingest(files, str(tmp_path / "s.duckdb"), catalog)
    con = store_connect(str(tmp_path / "s.duckdb"))
    try:
        d = diagnose(con)
    finally:
        con.close()
    v, w = d["verdict"], want["verdict"]
    assert (v["kind"], v["pod"], v["host"], v["time"]) == (w["kind"], w["pod"], w["host"], w["time"])
    s, ws = d["stranded"], want["stranded"]
    assert (s["pods_total"], s["pods_running"], s["gpus_idle"]) == (ws["pods_total"], ws["pods_running"], ws["gpus_idle"])
    assert s["nodes_holding_gpus"] == ws["nodes_holding_gpus"] and [b["pod"] for b in s["blocked"]] == ws["blocked"]
