"""A log collector's time before the lines NCCL, srun and slurmstepd wrote ('2024-05-01 10:05:00.223 node-3:1234:5678
[2] enqueue.cc:1530 NCCL WARN Cuda failure ...'): the time is peeled (parsers/envelopes/ts_launcher_prefix.toml) so
each line keeps its own format's kind and identity, not a generic timestamped line's."""

from __future__ import annotations

from .fixtures import diagnose_files


def test_nccls_cuda_failure_behind_a_collectors_time_keeps_its_kind_and_process(tmp_path, monkeypatch, catalog):
    text = "\n".join([
        "2024-05-01 10:00:00.101 gpu-b07:51234:51290 [2] NCCL INFO comm 0x5581a0 rank 6 nranks 8 cudaDev 2 busId 3b000 "
        "- Init COMPLETE",
        "2024-05-01 10:05:00.223 gpu-b07:51234:51301 [2] enqueue.cc:1530 NCCL WARN Cuda failure 'an illegal memory "
        "access was encountered'",
        "2024-05-01 10:05:00.301 gpu-b05:40211:40260 [0] NCCL INFO [Service thread] Connection closed by localRank 2",
        "2024-05-01 10:05:02.000 srun: error: gpu-b07: task 6: Aborted (core dumped)",
        "2024-05-01 10:05:02.100 srun: error: gpu-b05: tasks 0-3: Terminated"]) + "\n"
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"job-4471.out": text})["verdict"]
    assert v["kind"] == "cuda_error", v
    assert (v["host"], v["pid"]) == ("gpu-b07", 51234), v
