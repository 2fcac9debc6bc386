"""torch's DistBackendError carries NCCL's result code (torch/csrc/distributed/c10d/NCCLUtils getNcclErrorDetailStr):
'unhandled cuda error' / ncclUnhandledCudaError ("Call to CUDA function failed.") is the raising process's own CUDA call
failing, a cause of its own, not the echo of a peer's exit (ncclRemoteError, ncclSystemError): parsers/formats/
python_traceback.toml's rule."""

from __future__ import annotations

from .fixtures import diagnose_files


def test_an_unhandled_cuda_error_is_the_raising_ranks_own(tmp_path, monkeypatch, catalog):
    text = "\n".join([
        "Initializing distributed: GLOBAL_RANK: 5, MEMBER: 6/8",
        "[rank5]: Traceback (most recent call last):",
        '[rank5]:   File "/home/u/ddp/train.py", line 30, in <module>',
        "[rank5]:     trainer.fit(model, datamodule)",
        '[rank5]:   File "/home/u/.venv/lib/python3.11/site-packages/torch/distributed/utils.py", line 288, in '
        "_verify_param_shape_across_processes",
        "[rank5]:     return dist._verify_params_across_processes(process_group, tensors, logger)",
        "[rank5]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
        "1970, unhandled cuda error, NCCL version 2.19.3",
        "[rank5]: ncclUnhandledCudaError: Call to CUDA function failed.",
        "[rank5]: Last error:",
        "[rank5]: Cuda failure 'invalid device pointer'"]) + "\n"
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"slurm-812.out": text})["verdict"]
    assert v["kind"] == "cuda_error", v
    assert v["rank"] == 5, v
