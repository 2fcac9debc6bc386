"""An exception whose class name says nothing of an error is still the failure: CPython prints a non-builtin
class as '{module}.{qualname}: {str}' (jax's UnfilteredStackTrace wrapping a remote task's error, a process
pool's BrokenProcessPool); after the frames of Ray's driver, 'RayTaskError(Cause)' ends them, and the subject
of Ray's message, '(pid=P, ip=A)', is the process the verdict names. Old Ray Tune's status rows name a failed trial's
process as '[host pid=P]' after its error file."""

from __future__ import annotations

import pytest

from .fixtures import diagnose_files

_FRAMES = ('  File "/opt/conda/lib/python3.9/site-packages/ray/_private/worker.py", line 2289, in get\n'
           "    raise value.as_instanceof_cause()\n")


@pytest.mark.parametrize("head", [
    "jax._src.traceback_util.UnfilteredStackTrace: ray.exceptions.RayTaskError(NcclError): ",
    "ray.exceptions.RayTaskError(NcclError): ",
])
def test_a_wrapped_task_error_names_the_actor(tmp_path, monkeypatch, catalog, head):
    text = (_FRAMES + head + "ray::MeshWorker.init_comm() (pid=30211, ip=10.4.0.12, repr=<w.MeshWorker object>)\n"
            '  File "/opt/conda/lib/python3.9/site-packages/alpa/collective/nccl_util.py", line 115, in create\n'
            "    comm = NcclCommunicator(world_size, nccl_unique_id, rank)\n")
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"driver.log": text})["verdict"]
    assert (v["kind"], v["pid"], v["host"]) == ("exception", 30211, "10.4.0.12"), v


def test_a_broken_process_pool_is_an_exception(tmp_path, monkeypatch, catalog):
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/concurrent/futures/process.py", line 451, in wait_result\n'
            "    result_item = result_reader.recv()\n"
            "concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated abruptly\n")
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"prep.log": text})["verdict"]
    assert v["kind"] == "exception", v


def test_a_logger_name_is_no_exception(tmp_path, monkeypatch, catalog):
    text = "torch.distributed.elastic.agent.server.api: local_rank 0 finished\n"
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"agent.log": text})["verdict"]
    assert v["kind"] != "exception", v


def test_a_tune_status_row_names_the_failed_trial_host(tmp_path, monkeypatch, catalog):
    text = ("ray.worker.RayTaskError: Invalid return value: likely worker died or was killed while executing "
            "the task; check previous logs or dmesg for errors.\n"
            "== Status ==\n"
            "Using FIFO scheduling algorithm.\n"
            "PENDING trials:\n"
            " - Trainable_2_lr=0.1:\tPENDING, 1 failures: /home/u/ray_results/exp/Trainable_2_lr=0.1_2019-02-01/"
            "error_2019-02-01_10-11-12.txt [gpu-box-4 pid=7719], 12 s, 3 iter\n"
            " - Trainable_3_lr=0.2:\tPENDING\n")
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"tune.log": text})["verdict"]
    assert (v["kind"], v["host"]) == ("exception", "gpu-box-4"), v
