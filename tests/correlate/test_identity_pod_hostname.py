"""A pod's hostname is the pod, not a node: the rule written once, as the DuckDB macro is_pod_hostname
(correlate/identity.py define_macros, made known to a connection as marks.define does has_mark), and read by
worker_exits.sql (its two summary SELECTs) and by identity.py's root_cause links.

A torchrun agent writes its own socket.getfqdn() as each failure entry's host (torch/distributed/elastic/
multiprocessing/errors/__init__.py, ChildFailedError._format_failure): inside a pod, the pod's name or
'<name>.<subdomain>.<ns>.svc...'."""

from __future__ import annotations

import duckdb
import pytest

from ranktrace.correlate import identity

from .fixtures import bundle_store
from .test_identity_summary_behind_prefix_pod_hostname import _POD_LOG, _summary


@pytest.mark.parametrize("host, pod, want", [
    ("trainer-worker-1", "ml/trainer-worker-1", True),                                   # the pod's name
    ("trainer-worker-1.trainer.ml.svc.cluster.local", "ml/trainer-worker-1", True),      # '<name>.<subdomain>...'
    ("Trainer-Worker-1", "trainer-worker-1", True),                                      # a pod without namespace
    ("trainer-worker-10", "ml/trainer-worker-1", False),                                 # another pod's name
    ("gpu-node-7", "ml/trainer-worker-1", False),                                        # a node (hostNetwork)
    ("trainer-worker-1", None, False),                                                   # a line of no pod
])
def test_is_pod_hostname(host, pod, want):
    con = duckdb.connect()
    identity.define_macros(con)
    assert bool(con.execute("SELECT is_pod_hostname(?, ?)", [host, pod]).fetchone()[0]) is want


def _store(tmp_path, monkeypatch, catalog, files):
    from ranktrace.correlate.clock import align
    con = bundle_store(tmp_path, monkeypatch, catalog, files)
    align(con)
    return con


def _readers(con) -> tuple[set, set]:
    from ranktrace.correlate.detectors.base import query
    exits = {r["host"] for r in query(con, "worker_exits") if r["source"] in ("root_cause", "failures")}
    links = {h for (h,) in con.execute("SELECT DISTINCT host FROM identity WHERE source = 'root_cause'").fetchall()}
    return exits, links


def test_both_readers_take_the_rule_from_the_one_macro(tmp_path, monkeypatch, catalog):
    files = {_POD_LOG: _summary("", "trainer-worker-1.trainer.ml.svc.cluster.local")}
    con = _store(tmp_path / "a", monkeypatch, catalog, files)
    try:
        exits, links = _readers(con)
    finally:
        con.close()
    # the rule as written: the summary's host is the pod's own hostname, a node of that name nowhere
    assert exits and not any(h and h.startswith("trainer-worker-1") for h in exits | links), (exits, links)
    # the macro's body made false: both readers take the host as written, so both read the one macro
    monkeypatch.setattr(identity, "POD_HOSTNAME_MACRO",
                        "CREATE OR REPLACE TEMP MACRO is_pod_hostname(h, pod) AS false")
    con = _store(tmp_path / "b", monkeypatch, catalog, files)
    try:
        exits, links = _readers(con)
    finally:
        con.close()
    assert exits == {"trainer-worker-1.trainer.ml.svc.cluster.local"}, exits
    assert "trainer-worker-1.trainer.ml.svc.cluster.local" in links, links


@pytest.mark.parametrize("host", ["trainer-worker-1", "trainer-worker-1.trainer.ml.svc.cluster.local"])
def test_a_summary_in_a_pods_own_log_names_the_pod_in_the_verdict(tmp_path, monkeypatch, catalog, host):
    # the summary's rank is linked to the pod (its host is the pod's own hostname) and to no node: the verdict
    # that names the rank names its pod (a global rank is one process, in one pod)
    from .fixtures import diagnose_files
    v = diagnose_files(tmp_path, monkeypatch, catalog, {_POD_LOG: _summary("", host)})["verdict"]
    assert (v["rank"], v["pid"]) == (12, 7101), v
    assert v["pod"] == "trainer-worker-1", v
