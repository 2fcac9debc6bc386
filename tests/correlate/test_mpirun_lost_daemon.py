"""Open MPI's launcher reports a node whose daemon it lost: 'ORTE has lost communication with a remote daemon.',
the HNP's node and the remote daemon's ('  Remote daemon: [[J,0],V] on node N'), then why it terminates the job
(PRRTE: 'PRTE has lost ...', daemons named '[prterun-<host>-<pid>@0,V]'). mpirun writes it on its own node; the
lost node is the one named after 'Remote daemon'."""

from __future__ import annotations

import pytest

from .fixtures import diagnose_files

_BANNER = "-" * 74 + "\n"


@pytest.mark.parametrize("prefix,hnp,remote", [
    ("ORTE", "[[16919,0],0]", "[[16919,0],3]"),
    ("PRTE", "[prterun-gpu-n031-34@0,0]", "[prterun-gpu-n031-34@0,3]"),
])
def test_the_node_whose_daemon_mpirun_lost_is_the_failed_node(tmp_path, monkeypatch, catalog, prefix, hnp, remote):
    out = ("[1,0]<stderr>:2026-05-01 10:00:01,000 - INFO - train - step 120 loss 2.113\n"
           "[1,12]<stderr>:2026-05-01 10:00:01,020 - INFO - train - step 120 loss 2.108\n"
           + _BANNER + f"{prefix} has lost communication with a remote daemon.\n\n"
           f"  HNP daemon   : {hnp} on node gpu-n031\n"
           f"  Remote daemon: {remote} on node gpu-n127\n\n"
           "This is usually due to either a failure of the TCP network\n"
           "connection to the node, or possibly an internal failure of\n"
           "the daemon itself. We cannot recover from this failure, and\n"
           "therefore will terminate the job.\n" + _BANNER)
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"slurm-8812.out": out})["verdict"]
    assert v["kind"] == "node_failure", v
    assert v["host"] == "gpu-n127", v
