"""The drain that follows a GPU fault, on the REAL Slurm cluster of tools/capture.

A 2-node job runs; on one node it writes a (simulated) NVIDIA Xid 79 into the kernel log the
epilog reads, on the other a healthy kernel log that also holds an OLD Xid 79 (from before the
job: already handled, must not drain again). The Epilog set in the cluster's slurm.conf for
this test is scripts/slurm_epilog_ranktrace.sh (ranktrace ingest + `ranktrace action --node
$SLURMD_NODENAME --since <job start> --platform slurm --execute`). The faulty node must end
up DRAIN with the Xid as the reason; the healthy node must stay schedulable.

The cluster's slurm.conf is restored (and reconfigured) afterwards, and a node this test
drained is resumed. Hold `flock /tmp/rt-slurm.lock` around the pytest run (one cluster a host).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from e2e_support import ROOT

pytestmark = pytest.mark.e2e

CONF = Path("/etc/ranktrace-capture/slurm.conf")
WRAPPER = Path("/etc/ranktrace-capture/epilog-ranktrace-test.sh")
EPILOG = ROOT / "scripts" / "slurm_epilog_ranktrace.sh"
RANKTRACE = Path(sys.executable).with_name("ranktrace")
ENV = dict(os.environ, SLURM_CONF=str(CONF))


def sh(*argv, check=True, timeout=60) -> str:
    r = subprocess.run(list(argv), capture_output=True, text=True, env=ENV, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} -> {r.returncode}: {r.stdout}{r.stderr}")
    return r.stdout


def node_info(node: str) -> dict:
    out = sh("scontrol", "-o", "show", "node", node)
    state = re.search(r"\bState=(\S+)", out).group(1)
    reason = re.search(r"\bReason=(.*?)(?: \w+=|$)", out)
    return {"state": state, "reason": reason.group(1) if reason else None}


def wait(what: str, pred, seconds: float):
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        got = pred()
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError(f"timed out after {seconds}s waiting for {what}")


JOB = r"""#!/bin/bash
# one task per node: the node given FAULTY_NODEID prints a GPU-fall-off-the-bus Xid into its kernel log
D=$LOGROOT/$SLURM_JOB_ID/$SLURMD_NODENAME
mkdir -p "$D"
now() { date -u '+%a %b %e %H:%M:%S %Y'; }
old() { date -u -d '-1 day' '+%a %b %e %H:%M:%S %Y'; }
if [ "$SLURM_NODEID" = "$FAULTY_NODEID" ]; then
  echo "[$(now)] NVRM: GPU at PCI:0000:3b:00: GPU-efbdfde9-5798-a6e7-4c46-12518fa15375" >> "$D/kern.log"
  echo "[$(now)] NVRM: Xid (PCI:0000:3b:00): 79, pid=$$, name=python, GPU has fallen off the bus." >> "$D/kern.log"
  echo "[$(now)] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus." >> "$D/kern.log"
  echo "step 10 loss 1.23 step_time 0.5s"
else
  echo "[$(old)] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus." >> "$D/kern.log"
  echo "[$(now)] nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing" >> "$D/kern.log"
  echo "step 10 loss 1.23 step_time 0.5s"
fi
"""


@pytest.fixture
def epilog_cluster(slurm_cluster, tmp_path):
    """The running cluster with Epilog= this test's wrapper; slurm.conf restored afterwards."""
    logroot = tmp_path / "nodelogs"
    logroot.mkdir()
    log = tmp_path / "epilog.log"
    WRAPPER.write_text(f"""#!/bin/sh
# written by tests/e2e/test_drain_epilog.py; does nothing for any job but that test's
D={logroot}/$SLURM_JOB_ID/$SLURMD_NODENAME
[ -d "$D" ] || exit 0
export SLURM_CONF={CONF} RANKTRACE={RANKTRACE} RANKTRACE_NODE_LOGS=$D RANKTRACE_EPILOG_LOG={log}
exec sh {EPILOG}
""")
    WRAPPER.chmod(0o755)
    original = CONF.read_text()
    CONF.write_text(original + f"\n# test_drain_epilog.py (removed after the test)\nEpilog={WRAPPER}\n")
    drained: list[str] = []
    try:
        sh("scontrol", "reconfigure")
        wait("Epilog in the running config", lambda: str(WRAPPER) in sh("scontrol", "show", "config"), 20)
        yield logroot, log, drained
    finally:
        CONF.write_text(original)
        sh("scontrol", "reconfigure", check=False)
        for n in drained:
            sh("scontrol", "update", f"NodeName={n}", "State=RESUME", check=False)
        WRAPPER.unlink(missing_ok=True)


def test_epilog_drains_the_xid_node_and_leaves_the_healthy_one(epilog_cluster, tmp_path):
    logroot, log, drained = epilog_cluster
    script = tmp_path / "job.sh"
    script.write_text(JOB)
    script.chmod(0o755)
    out = sh("sbatch", "--parsable", "-N2", "--ntasks-per-node=1", "--gres=gpu:4", "--mem=100", "-t", "2",
             "-J", "pretrain", "-o", str(tmp_path / "slurm-%j.out"),
             f"--export=ALL,LOGROOT={logroot},FAULTY_NODEID=1", "--wrap", f"srun {script}")
    job = out.strip().split(";")[0]
    wait("the job to end", lambda: sh("squeue", "-h", "-j", job, check=False).strip() == "", 60)
    # both nodes' epilogs ran ranktrace and reported (the healthy one too: it had logs to read)
    text = wait("both epilogs", lambda: log.exists() and log.read_text().count("ranktrace epilog: exit") >= 2
                and log.read_text(), 60)
    nodes = sorted(p.name for p in (logroot / job).iterdir())
    assert len(nodes) == 2, nodes
    faulty = next(n for n in nodes if "NVRM: Xid" in (logroot / job / n / "kern.log").read_text()
                  and "nvidia-peermem" not in (logroot / job / n / "kern.log").read_text())
    healthy = next(n for n in nodes if n != faulty)
    info = wait(f"{faulty} drained", lambda: (i := node_info(faulty)) and "DRAIN" in i["state"] and i, 20)
    drained.append(faulty)
    assert info["reason"] and info["reason"].startswith("ranktrace: Xid 79 GPU has fallen off the bus"), (info, text)
    assert "GPU 0000:3b:00" in info["reason"], info
    h = node_info(healthy)
    if "DRAIN" in h["state"]:
        drained.append(healthy)
    assert "DRAIN" not in h["state"] and "DOWN" not in h["state"], (h, text)
    # the healthy node's old Xid was seen and deliberately left alone
    assert "(--since)" in text and f"drain {faulty}: Xid 79" in text, text
