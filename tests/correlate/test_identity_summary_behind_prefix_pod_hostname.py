"""Whom the text names (issue 28, session 21).

torchrun's failure summary read behind a per-line launcher prefix (redone after ce1a230 backed out 74662f3): the
agent writes its own socket.getfqdn() as each entry's 'host' (torch/distributed/elastic/multiprocessing/errors/
__init__.py, ChildFailedError._format_failure), which inside a pod is the POD's hostname, not a node."""

from __future__ import annotations

import pytest

from .fixtures import diagnose_files


def _summary(prefix: str, host: str = "trn-b14.cluster.internal") -> str:
    # ChildFailedError.format_msg: the summary block, every line of it written behind the prefix of whatever relays
    # the agent's stderr
    body = ["train.py FAILED", "-" * 60, "Failures:", "[1]:", "  time      : 2025-02-11_04:19:33",
            f"  host      : {host}", "  rank      : 13 (local_rank: 1)", "  exitcode  : 1 (pid: 7102)",
            "  error_file: <N/A>", "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
            "-" * 60, "Root Cause (first observed failure):", "[0]:", "  time      : 2025-02-11_04:19:31",
            f"  host      : {host}", "  rank      : 12 (local_rank: 0)", "  exitcode  : -6 (pid: 7101)",
            "  error_file: <N/A>", "  traceback : Signal 6 (SIGABRT) received by PID 7101", "=" * 60]
    return "".join(f"{prefix}{b}\n" for b in body)


@pytest.mark.parametrize("prefix", [
    "trn-b14: ",                                        # pdsh (src/pdsh/dsh.c: '%s: %s'), the DeepSpeed multi-node runner
    "(worker1, rank=1, pid=6990, ip=10.31.4.18) ",      # a node launcher's process prefix (SkyPilot's, Ray's form)
])
def test_a_torchrun_summary_behind_a_per_line_launcher_prefix_names_its_root_cause(tmp_path, monkeypatch, catalog,
                                                                                   prefix):
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"run.out": _summary(prefix)})
    v = d["verdict"]
    assert v["kind"] == "crash", v
    assert (v["rank"], v["local_rank"], v["pid"]) == (12, 0, 7101), v
    assert v["host"] == "trn-b14.cluster.internal", v


_POD_LOG = "var/log/pods/ml_trainer-worker-1_0c8f9a1e-1111-2222-3333-444455556666/pytorch/0.log"


def _hosts(d: dict) -> set:
    return ({d["verdict"].get("host")} | {h.get("host") for h in d["hypotheses"]}
            | {c.get("host") for c in d["cascade"]} | {c.get("host") for c in d["clock"]})


@pytest.mark.parametrize("host", ["trainer-worker-1", "trainer-worker-1.trainer.ml.svc.cluster.local"])
def test_a_summary_in_a_pods_own_log_names_no_node_of_the_pods_hostname(tmp_path, monkeypatch, catalog, host):
    # the pod's log as the kubelet keeps it, its lines without a runtime prefix: the summary's host is the pod's own
    # hostname (its name, or '<name>.<subdomain>.<ns>.svc...'), never a node beside the pod's
    d = diagnose_files(tmp_path, monkeypatch, catalog, {_POD_LOG: _summary("", host)})
    assert host not in _hosts(d), d["verdict"]
    assert d["verdict"]["rank"] == 12, d["verdict"]


def test_a_summary_in_a_cri_pod_log_names_no_node_of_the_pods_hostname(tmp_path, monkeypatch, catalog):
    # the same behind CRI's '<RFC3339Nano> <stream> <tag> ' prefix on every line (kubelet's pod log format)
    d = diagnose_files(tmp_path, monkeypatch, catalog,
                       {_POD_LOG: _summary("2025-02-11T04:19:33.412000000Z stderr F ", "trainer-worker-1")})
    assert "trainer-worker-1" not in _hosts(d), d["verdict"]

