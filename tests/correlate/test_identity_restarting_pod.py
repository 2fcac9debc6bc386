"""A pod whose container keeps restarting is named, in `kubectl get pods` with or without -A's NAMESPACE column.

kubernetes pkg/printers/internalversion/printers.go printPod: NAME READY STATUS RESTARTS AGE (-A: NAMESPACE first);
READY counts ready containers, STATUS is the Waiting reason (CrashLoopBackOff) or the phase (Running between two
back-offs), RESTARTS '%d (%s ago)' when a container has a last termination. kubectl_get.toml: a CrashLoopBackOff row,
or a not-ready Running row after three or more restarts, is crash_loop; first_symptom.sql names its pod when nothing
better does; gang.sql reads the RESTARTS column behind the NAMESPACE column too."""

from __future__ import annotations

import pytest

from .fixtures import bundle_store, diagnose_files

_A = """$ kubectl get pods -A
NAMESPACE     NAME                                      READY   STATUS      RESTARTS         AGE
kube-system   coredns-5d78c9869d-7xk2p                  1/1     Running     0                3d
default       serve-llm-70b-6c8d4f9b7-tq2wz             0/1     Running     12 (6m40s ago)   146m
default       tokenizer-7f9c8d6b45-m4p8s                1/1     Running     1 (2d ago)       3d
"""

_N = """kubectl get pods -n gpu-operator
NAME                                       READY   STATUS             RESTARTS         AGE
gpu-feature-discovery-4kq7d                1/1     Running            1 (71m ago)      12h
gpu-operator-6b9d4c7f85-m2kqz              0/1     CrashLoopBackOff   12 (4m24s ago)   67m
nvidia-dcgm-exporter-8kz2d                 1/1     Running            0                12h
"""


@pytest.mark.parametrize("text, pod", [(_A, "serve-llm-70b-6c8d4f9b7-tq2wz"), (_N, "gpu-operator-6b9d4c7f85-m2kqz")])
def test_the_restarting_pod_is_named(tmp_path, monkeypatch, catalog, text, pod):
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"pods.txt": text})["verdict"]
    assert v["pod"] == pod, v
    assert v["confidence"] < 0.8, v   # a crash loop says a container failed, not why


def test_a_ready_pod_restarted_once_is_no_crash_loop(tmp_path, monkeypatch, catalog):
    text = """NAME                          READY   STATUS    RESTARTS      AGE
gpu-feature-discovery-4kq7d   1/1     Running   1 (71m ago)   12h
"""
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"pods.txt": text})["verdict"]
    assert v["pod"] is None, v


_A_LOOP = """NAMESPACE   NAME                         READY   STATUS             RESTARTS       AGE
training    trainer-worker-1             0/1     CrashLoopBackOff   7 (2m ago)     40m
training    trainer-worker-0             1/1     Running            0              40m
"""


@pytest.mark.parametrize("text, pod, n", [(_A, "serve-llm-70b-6c8d4f9b7-tq2wz", 12), (_A_LOOP, "trainer-worker-1", 7)])
def test_gang_reads_restarts_behind_the_namespace_column(tmp_path, monkeypatch, catalog, text, pod, n):
    from ranktrace.correlate.clock import align
    from ranktrace.correlate.detectors.base import query
    con = bundle_store(tmp_path, monkeypatch, catalog, {"pods.txt": text})
    try:
        align(con)
        got = {(r["pod"], r["value"]) for r in query(con, "gang") if r["what"] == "get_restarts"}
    finally:
        con.close()
    assert (pod, n) in got, got
    assert not any(p in ("default", "training", "kube-system", "") for p, _ in got), got
