"""Whom a paste names when no line of it reads like a failure (issue 28, session 31; clean_end.no_failure_verdict,
naming.text_names).

A store with no failure line and no normal end is `unknown` at low confidence; it named nobody even when the whole
text names one machine or one pod: Open MPI's opal_output prefix '[host:%05d] ' before a BTL error
('Read -1, expected N, errno = 1'), kubectl logs answering with the kubelet's 'container "c" in pod "p" is waiting
to start'. The one host (and, for `unknown`, the one pod) every line's identity and every host word of the text
agree on is named, as for failure-like lines; two name none. Salloc's 'Nodes X are ready for job' is a host word."""

from __future__ import annotations

import pytest

from ranktrace.correlate.naming import words_named

from .fixtures import diagnose_files


@pytest.mark.parametrize("text,want", [
    ("salloc: Nodes gpu-a07 are ready for job", {"host": "gpu-a07"}),
    ("srun: Nodes dgx-b12.cluster are ready for job", {"host": "dgx-b12.cluster"}),
    ("salloc: Nodes gpu[1-2] are ready for job", {}),     # a hostlist: two nodes, none named
    ("salloc: Nodes gpu1,gpu2 are ready for job", {}),
])
def test_salloc_names_the_node_of_a_one_node_allocation(text, want):
    assert words_named([text], ("host",)) == want


def test_no_failure_line_still_names_the_one_host_the_text_names(tmp_path, monkeypatch, catalog):
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"paste.log": (
        "root@4b1e0c9d2f31:/workspace# mpirun --allow-run-as-root -np 2 python3 check.py\n"
        "[gpu-c11:05512] Read -1, expected 131072, errno = 1\n"
        "[gpu-c11:05512] Read -1, expected 131072, errno = 1\n")})
    v = d["verdict"]
    assert (v["kind"], v["host"]) == ("unknown", "gpu-c11"), v
    assert v["confidence"] <= 0.3
    assert any("host gpu-c11 the only one the text names" in m for m in d["missing"]), d["missing"]


def test_no_failure_line_and_two_hosts_name_none(tmp_path, monkeypatch, catalog):
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"paste.log": (
        "[gpu-c11:05512] Read -1, expected 131072, errno = 1\n"
        "[gpu-c12:07730] Read -1, expected 131072, errno = 1\n")})
    assert d["verdict"]["host"] is None, d["verdict"]


def test_kubectl_logs_of_a_pod_waiting_to_start_names_the_pod(tmp_path, monkeypatch, catalog):
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"paste.log": (
        "$ kubectl logs -f bert-ft-worker-2\n"
        "Error from server (BadRequest): container \"trainer\" in pod \"bert-ft-worker-2\" is waiting to start: "
        "image can't be pulled\n")})
    v = d["verdict"]
    assert (v["kind"], v["pod"]) == ("unknown", "bert-ft-worker-2"), v
    assert v["confidence"] <= 0.3
