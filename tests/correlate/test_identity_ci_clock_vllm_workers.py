"""A CI agent's clock before each line, and vLLM's worker prefix when TP is its only parallel dimension.

buildkite/agent agent/job_runner.go (--timestamp-lines): '[%s] %s' with time.Now().UTC().Format(time.RFC3339) before
every line of a job's output. vllm/v1/executor/multiproc_executor.py setup_proc_title_and_log_prefix: the worker's
log prefix '(Worker[_DPd][_PPp][_PCPc][_TPt][_DCPk][_EPe] pid=P) ', each part only when that group has more than one
member: a name of TP alone says every other group has size 1, so the TP rank is the worker's rank."""

from __future__ import annotations

import pytest

from .fixtures import diagnose_files


def _worker_log(name: str, pid: int, clock: bool) -> str:
    p = f"({name} pid={pid}) ERROR 03-02 07:41:19 [multiproc_executor.py:826]"
    body = [f"{p} WorkerProc hit an exception.",
            f"{p} Traceback (most recent call last):",
            f'{p}   File "/usr/local/lib/python3.12/dist-packages/torch/cuda/graphs.py", line 130, in capture_end',
            f"{p}     super().capture_end()",
            f"{p} torch.AcceleratorError: CUDA error: operation failed due to a previous error during capture",
            f"{p} CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
            "might be incorrect."]
    return "".join((f"[2026-03-02T15:41:{19 + i // 3:02d}Z] " if clock else "") + b + "\n" for i, b in enumerate(body))


@pytest.mark.parametrize("clock", [True, False])
@pytest.mark.parametrize("name, rank", [("Worker_TP3", 3), ("VllmWorker TP3", 3)])
def test_a_tp_only_worker_prefix_names_its_rank_behind_a_ci_clock(tmp_path, monkeypatch, catalog, clock, name, rank):
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"ci.log": _worker_log(name, 5120, clock)})["verdict"]
    assert v["kind"] == "cuda_error", v
    assert (v["rank"], v["pid"]) == (rank, 5120), v


@pytest.mark.parametrize("name", ["Worker_DP1_TP0", "Worker_PP1_TP2", "Worker_TP1_EP1"])
def test_a_worker_of_several_parallel_dimensions_names_no_rank(tmp_path, monkeypatch, catalog, name):
    # the TP rank is a rank in its group, not the worker's: the worker is named by its pid only
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"ci.log": _worker_log(name, 5120, True)})["verdict"]
    assert v["kind"] == "cuda_error", v
    assert v["rank"] is None and v["pid"] == 5120, v
