"""Control-plane saturation: a node NotReady while etcd was slow is the control plane's fault."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from ranktrace.correlate import diagnose
from ranktrace.correlate.detectors.base import KINDS
from ranktrace.ingest.pipeline import ingest

from .fixtures import ev, store
from ranktrace.store import connect as store_connect

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "sample_logs" / "k8s_controlplane_etcd_slow"
NODE = "gpu-node-3"


def _etcd(start=0.0):
    out = []
    for i in range(6):
        out.append(ev(start + 2.0 * i, "slow fdatasync", kind="etcd_slow_disk", host="etcd-1",
                      raw='{"level":"warn","msg":"slow fdatasync","took":"1.2%ds","expected-duration":"1s"}' % i))
    out.append(ev(start + 5.0, "apply request took too long", kind="etcd_slow_request", host="etcd-1",
                  raw='{"msg":"apply request took too long","took":"850.1ms"}'))
    out.append(ev(start + 8.0, "raft.node: 85b1 lost leader 85b1 at term 3", kind="etcd_leader_change", host="etcd-0"))
    return out


def _node(t):
    return [ev(t - 6, f'"Error updating node status, will retry" err="error getting node \\"{NODE}\\": etcdserver: '
                      'request timed out"', host=NODE),
            ev(t, f'"Event occurred" object="{NODE}" kind="Node" reason="NodeNotReady" message="Node {NODE} status is '
                  'now: NodeNotReady"', kind="node_failure")]


def test_notready_node_during_etcd_saturation_blames_the_control_plane():
    d = diagnose(store(_etcd() + _node(14.0)))
    v = d["verdict"]
    assert v["kind"] == "control_plane" and v["kind"] in KINDS
    assert v["host"] == "etcd-1" and v["time"] == "2026-03-02T03:00:00.000Z"
    cp = d["control_plane"]
    assert cp["blamed"] and cp["notready_nodes"] == [NODE] and cp["etcd"]["slow_fdatasync"] == 6
    assert cp["etcd"]["max_took_s"] == 1.25
    assert any(h["kind"] == "node_failure" and h["host"] == NODE for h in d["hypotheses"])


def test_a_node_with_its_own_fault_or_outside_the_window_stays_the_culprit():
    xid = ev(13.0, "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.", kind="gpu_xid",
             host=NODE)
    d = diagnose(store(_etcd() + _node(14.0) + [xid]))
    assert d["verdict"]["kind"] != "control_plane" and d["control_plane"]["blamed"] is False
    d = diagnose(store(_etcd() + _node(400.0)))     # NotReady minutes after etcd recovered
    assert d["verdict"]["kind"] == "node_failure" and d["control_plane"]["blamed"] is False


def test_no_etcd_trouble_no_key_and_bootstrap_elections_are_not_trouble():
    assert diagnose(store(_node(14.0)))["control_plane"] is None
    boot = [ev(float(i), f"raft.node: 85b1 elected leader 85b1 at term {1 + i % 2}", kind="etcd_leader_change",
               host="etcd-0") for i in range(5)]
    d = diagnose(store(boot + _node(14.0)))
    assert d["control_plane"] is None and d["verdict"]["kind"] == "node_failure"


def test_sample_bundle(tmp_path, catalog, monkeypatch):
    want = json.loads((BUNDLE / "expected_verdict.json").read_text())
    monkeypatch.chdir(BUNDLE.parent)
    files = sorted(str(p.relative_to(BUNDLE.parent)) for p in BUNDLE.rglob("*")
                   if p.is_file() and p.name not in ("README.md", "expected_verdict.json"))
    ingest(files, str(tmp_path / "c.duckdb"), catalog)
    con = store_connect(str(tmp_path / "c.duckdb"))
    try:
        d = diagnose(con)
    finally:
        con.close()
    v, w = d["verdict"], want["verdict"]
    assert (v["kind"], v["host"], v["time"]) == (w["kind"], w["host"], w["time"])
    for k, x in want["control_plane"].items():
        got = d["control_plane"][k]
        assert ({j: got[j] for j in x} if isinstance(x, dict) else got) == x, k
