"""`ranktrace action`: which nodes an Xid calls to drain, and the commands (printed by default)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import duckdb

from ranktrace.commands import action
from rt_testlib import write
from ranktrace.store import connect as store_connect

DMESG = """\
[Tue Dec  1 21:40:00 2026] NVRM: GPU at PCI:0000:3b:00: GPU-efbdfde9-5798-a6e7-4c46-12518fa15375
[Tue Dec  1 21:40:01 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python, GPU has fallen off the bus.
[Tue Dec  1 21:40:03 2026] NVRM: Xid (PCI:0000:5e:00): 13, pid=4243, name=python, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address
"""
OTHER = """\
[Tue Dec  1 20:00:00 2026] NVRM: Xid (PCI:0000:86:00): 119, pid=77, name=python, Timeout after 45s of waiting for RPC response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801702 0x4).
"""


def _store(tmp_path, ingest_to, files):
    paths = [write(tmp_path / name, text) for name, text in files.items()]
    return ingest_to(paths)[1]


def test_drain_for_drain_and_reset_xids_not_for_app_xids(tmp_path, ingest_to):
    con = _store(tmp_path, ingest_to, {"gpu-a07/dmesg.txt": DMESG, "gpu-a09/kern.log": OTHER})
    p = action.plan(con)
    by = {a["node"]: a for a in p["actions"]}
    assert sorted(by) == ["gpu-a07", "gpu-a09"]
    a = by["gpu-a07"]
    assert (a["xid"], a["action"], a["gpu"]) == (79, "drain_node", "0000:3b:00")
    assert a["reason"].startswith("ranktrace: Xid 79 GPU has fallen off the bus GPU 0000:3b:00 at 2026-12-01T21:40:01")
    assert by["gpu-a09"]["action"] == "reset_gpu"   # 119: a GPU reset needs the node drained first
    # no Slurm nor K8s evidence in a bare kernel log: both command sets
    assert a["commands"]["slurm"] == [["scontrol", "update", "NodeName=gpu-a07", "State=DRAIN", f"Reason={a['reason']}"]]
    assert a["commands"]["k8s"] == [["kubectl", "cordon", "gpu-a07"],
                                    ["kubectl", "taint", "nodes", "gpu-a07", "ranktrace/xid=79:NoSchedule", "--overwrite"]]
    skipped = {s["xid"]: s for s in p["skipped"]}
    assert 13 in skipped and "check_app" in skipped[13]["why"]


def test_node_and_since_restrict_what_is_acted_on(tmp_path, ingest_to):
    con = _store(tmp_path, ingest_to, {"gpu-a07/dmesg.txt": DMESG, "gpu-a09/kern.log": OTHER})
    p = action.plan(con, node="gpu-a09")
    assert [a["node"] for a in p["actions"]] == ["gpu-a09"]
    assert any("not gpu-a09" in s["why"] and s["xid"] == 79 for s in p["skipped"])
    p = action.plan(con, since=dt.datetime(2026, 12, 1, 21, 0, 0))
    assert [a["node"] for a in p["actions"]] == ["gpu-a07"]
    assert any(s["xid"] == 119 and "--since" in s["why"] for s in p["skipped"])


def test_hostless_log_needs_node_and_hostile_names_are_refused(tmp_path, ingest_to, monkeypatch):
    write(tmp_path / "kernel.txt", DMESG.splitlines()[1] + "\n")
    monkeypatch.chdir(tmp_path)   # a relative path: no host read from the path (tmp dirs look like hosts)
    con = ingest_to(["kernel.txt"])[1]
    p = action.plan(con)
    assert p["actions"] == [] and "--node" in p["skipped"][0]["why"]
    assert [a["node"] for a in action.plan(con, node="n2")["actions"]] == ["n2"]
    # a host name that is not a plain node name never reaches a command (the formats' regexes
    # already keep such names out; the store is edited here to prove the guard itself)
    db = tmp_path / "b.duckdb"
    ingest_to([write(tmp_path / "gpu-a07" / "dmesg.txt", DMESG)], db=str(db))[1].close()
    w = store_connect(str(db), read_only=False)
    w.execute("UPDATE event_classes SET host = 'gpu;rm -rf ~' "
              "WHERE class_id IN (SELECT class_id FROM event_rows WHERE message LIKE '%Xid%')")
    w.close()
    con2 = store_connect(str(db))
    p2 = action.plan(con2)
    con2.close()
    assert p2["actions"] == []
    assert any("not a plain node name" in s["why"] and s["xid"] == 79 for s in p2["skipped"])


def test_execute_runs_only_scontrol_argv(tmp_path, ingest_to):
    con = _store(tmp_path, ingest_to, {"gpu-a07/dmesg.txt": DMESG})
    p = action.plan(con, platform="slurm")
    assert set(p["actions"][0]["commands"]) == {"slurm"}
    calls = []

    def fake_run(argv, **kw):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")
    res = action.execute(p, run=fake_run)
    assert calls == [p["actions"][0]["commands"]["slurm"][0]] and res[0]["returncode"] == 0
    p_k8s = action.plan(con, platform="k8s")
    assert action.execute(p_k8s, run=fake_run) == [] and len(calls) == 1   # kubectl is never run


def test_cli_prints_by_default_and_refuses_execute_on_kubernetes(tmp_path, ingest_to):
    _store(tmp_path, ingest_to, {"gpu-a07/dmesg.txt": DMESG})
    db = str(tmp_path / "store.duckdb")
    r = subprocess.run([sys.executable, "-m", "ranktrace.cli", "action", "--db", db], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "$ scontrol update NodeName=gpu-a07 State=DRAIN 'Reason=ranktrace: Xid 79" in r.stdout
    assert "$ kubectl cordon gpu-a07" in r.stdout and "printed only" in r.stdout
    r = subprocess.run([sys.executable, "-m", "ranktrace.cli", "action", "--db", db, "--platform", "k8s",
                        "--execute", "--format", "json"], capture_output=True, text=True)
    assert r.returncode == 0 and "--execute runs scontrol only" in r.stderr
    out = json.loads(r.stdout)
    assert out["executed"] == [] and out["actions"][0]["commands"]["k8s"][0] == ["kubectl", "cordon", "gpu-a07"]
    r = subprocess.run([sys.executable, "-m", "ranktrace.cli", "action", "--db", db, "--node", "x;y"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "not a plain node name" in r.stderr


def test_clean_keeps_control_characters_out():
    assert action._clean("a\x1b[31mb\nc") == "a?[31mb?c"
