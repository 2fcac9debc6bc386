"""Elastic Horovod names a failed worker by its slot, not its rank: the elastic driver's first-failure report
'Process name: {hostname}[{local_rank}]' with its 'Exit code: {code}' line (horovod/runner/elastic/driver.py,
gloo_run.py), and a shell's job report for a worker whose command starts with the slot's 'HOROVOD_HOSTNAME=...'
assignments (gloo_run.py create_slot_env_vars). Both name the host and the verdict says so."""

from __future__ import annotations

import pytest

from .fixtures import diagnose_files

_DRIVER_TB = (
    "Traceback (most recent call last):\n"
    "  File \"/usr/bin/horovodrun\", line 8, in <module>\n"
    "    sys.exit(run_commandline())\n"
    "  File \"/usr/lib/python3/site-packages/horovod/runner/gloo_run.py\", line 318, in launch_gloo_elastic\n"
    "    .format(name=name, code=exit_code))\n"
    "RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing the job "
    "to be terminated. The first process to do so was:\n")


@pytest.mark.parametrize("code,kind", [("137", "killed"), ("139", "crash")])
def test_the_elastic_first_failure_names_the_slot(tmp_path, monkeypatch, catalog, code, kind):
    text = _DRIVER_TB + f"Process name: trainer-worker-3[1]\nExit code: {code}\n"
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"driver.log": text})["verdict"]
    assert (v["kind"], v["host"], v["local_rank"]) == (kind, "trainer-worker-3", 1), v


def test_a_job_report_names_the_slot_host(tmp_path, monkeypatch, catalog):
    text = ("Mon Jan 11 10:02:03 2021[2]<stdout>:epoch 3 step 120\n"
            "Mon Jan 11 10:02:09 2021[2]<stderr>:bash: line 1:  8812 Aborted                 "
            "HOROVOD_HOSTNAME=gpu-node-17 HOROVOD_RANK=2 HOROVOD_SIZE=4 HOROVOD_LOCAL_RANK=0 python train.py\n")
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"run.log": text})["verdict"]
    assert (v["kind"], v["host"], v["pid"]) == ("crash", "gpu-node-17", 8812), v
