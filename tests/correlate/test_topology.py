"""Topology: each host's leaf and spine; leaves spanned; failing nodes under one leaf switch."""

from __future__ import annotations

from pathlib import Path

from ranktrace.correlate import diagnose

from .fixtures import ev as _ev
from .fixtures import steps, store
from ranktrace.store import connect as store_connect

REAL = Path(__file__).resolve().parents[1] / "formats" / "data" / "slurm" / "topology" / "scontrol_show_topology.txt"


def ev(*a, format=None, **kw):
    e = _ev(*a, **kw)
    if format:
        e["format"] = format
    return e


def _topo():
    # the real `scontrol show topology` of the capture cluster (TopologyPlugin=topology/tree)
    lines = [ln for ln in REAL.read_text().splitlines() if ln.startswith("SwitchName=")]
    assert len(lines) == 3
    return [ev(0.0, ln, format="slurm_topology", file="scontrol_show_topology.txt", line=i + 2)
            for i, ln in enumerate(lines)]


HOSTS = {"n1": [0], "n2": [1], "n3": [2], "n4": [3]}


def test_two_failing_nodes_under_one_leaf_name_the_switch():
    evs = _topo() + steps(HOSTS, 6) + [
        ev(3.5, "n3 not responding, setting DOWN", kind="node_failure", host="n3"),
        ev(3.6, "n4 not responding, setting DOWN", kind="node_failure", host="n4")]
    d = diagnose(store(evs))
    t = d["topology"]
    assert t["nodes"]["n1"] == {"leaf": "leaf1", "spine": "spine1"} and t["nodes"]["n4"]["leaf"] == "leaf2"
    assert t["spanned"] == 2 and t["leaf_switches"] == ["leaf1", "leaf2"]
    assert t["failing_nodes"] == ["n3", "n4"] and t["shared_leaf"] == "leaf2"
    assert "all sit under leaf switch leaf2 (spine spine1)" in t["summary"]


def test_one_failing_node_no_shared_leaf_and_topology_conf_syntax():
    conf = [ev(0.0, "SwitchName=s0 Nodes=n[1-2]", format="slurm_topology"),
            ev(0.0, "SwitchName=s1 Nodes=n[3-4]", format="slurm_topology"),
            ev(0.0, "SwitchName=s2 Switches=s[0-1]", format="slurm_topology")]
    d = diagnose(store(conf + steps(HOSTS, 6) + [ev(3.5, "RuntimeError: x", kind="python_exception", host="n2", rank=1)]))
    t = d["topology"]
    assert t["nodes"]["n3"] == {"leaf": "s1", "spine": "s2"} and t["shared_leaf"] is None and t["spanned"] == 2


def test_kubernetes_labels_and_no_topology():
    labels = [ev(0.0, f"topology.k8s.aws/network-node-layer-3=nn-leaf{1 if h in ('n1', 'n2') else 2}", host=h)
              for h in HOSTS] + [ev(0.0, "topology.k8s.aws/network-node-layer-2=nn-spine1", host=h) for h in HOSTS]
    d = diagnose(store(labels + steps(HOSTS, 6) + [ev(3.5, "RuntimeError: x", kind="python_exception", host="n2", rank=1)]))
    assert d["topology"]["nodes"]["n2"] == {"leaf": "nn-leaf1", "spine": "nn-spine1"} and d["topology"]["spanned"] == 2
    assert diagnose(store(steps(HOSTS, 6) + [ev(3.5, "RuntimeError: x", kind="python_exception", host="n2",
                                                rank=1)]))["topology"] is None


def test_sample_bundle(tmp_path, catalog, monkeypatch):
    import json

    import duckdb

    from ranktrace.ingest.pipeline import ingest
    bundle = Path(__file__).resolve().parents[2] / "sample_logs" / "slurm_node_failure_topology"
    want = json.loads((bundle / "expected_verdict.json").read_text())
    monkeypatch.chdir(bundle.parent)
    files = sorted(str(p.relative_to(bundle.parent)) for p in bundle.rglob("*")
                   if p.is_file() and p.name not in ("README.md", "expected_verdict.json", "truth.json"))
    ingest(files, str(tmp_path / "t.duckdb"), catalog)
    con = store_connect(str(tmp_path / "t.duckdb"))
    try:
        d = diagnose(con)
    finally:
        con.close()
    assert (d["verdict"]["kind"], d["verdict"]["host"]) == (want["verdict"]["kind"], want["verdict"]["host"])
    for k, x in want["topology"].items():
        assert d["topology"][k] == x, k
