"""A launcher that could not reach a node names it: ssh's resolve_host() (openssh-portable ssh.c) prints
'%s: Could not resolve hostname %.100s: %s' (__progname, the name as given, gai_strerror) when pdsh or Open MPI's
rsh launcher (plm_rsh) starts a node's process; a Kubernetes MPIJob's workers are '<pod>.<service>[.<ns>.svc]'.
The node never joined: the job never assembled (rendezvous.sql 'unreached', detectors/rendezvous.py)."""

from __future__ import annotations

import pytest

from .fixtures import diagnose_files

# Open MPI's help-plm-base.txt [no-local-orted] box as mpirun prints it after the ssh line
_ORTE_BOX = """--------------------------------------------------------------------------
ORTE was unable to reliably start one or more daemons.
This usually is caused by:

* not finding the required libraries and/or binaries on
  one or more nodes. Please check your PATH and LD_LIBRARY_PATH
  settings, or configure OMPI with --enable-orterun-prefix-by-default
--------------------------------------------------------------------------
"""


@pytest.mark.parametrize("name, error, node", [
    ("bench-worker-2.bench.default.svc", "Name or service not known", "bench-worker-2"),
    ("bench-worker-2.bench", "Temporary failure in name resolution", "bench-worker-2"),
    ("gpu17", "nodename nor servname provided, or not known", "gpu17"),
])
def test_the_node_ssh_could_not_resolve_is_named(tmp_path, monkeypatch, catalog, name, error, node):
    text = f"+ mpirun -np 16 -bind-to none ./all_reduce_perf\nssh: Could not resolve hostname {name}: {error}\n" + _ORTE_BOX
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"launcher.log": text})["verdict"]
    assert v["kind"] == "rendezvous_timeout", v
    assert v["host"] == node, v


def test_two_unresolved_nodes_name_one_of_them_unsure(tmp_path, monkeypatch, catalog):
    text = ("ssh: Could not resolve hostname w-0.w.default.svc: Name or service not known\n"
            "ssh: Could not resolve hostname w-1.w.default.svc: Name or service not known\n" + _ORTE_BOX)
    out = diagnose_files(tmp_path, monkeypatch, catalog, {"launcher.log": text})
    assert out["verdict"]["kind"] == "rendezvous_timeout", out["verdict"]
    assert out["verdict"]["host"] in ("w-0", "w-1"), out["verdict"]
    assert out["verdict"]["confidence"] < 0.8, out["verdict"]


def test_a_host_slots_pair_given_as_a_name_names_no_node(tmp_path, monkeypatch, catalog):
    # horovodrun -H localhost:4 handed 'localhost:4' to ssh as the host: no node of that name
    text = "ssh: Could not resolve hostname localhost:4: Name or service not known\n" + _ORTE_BOX
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"launcher.log": text})["verdict"]
    assert v["host"] is None, v
