"""A rank that died of its own segmentation fault is no victim, whatever it complained of before.

FRESH run gpu_fault/mpirun_slurm/39 attempt 2 (session 25): rank 3 logged an NCCL socket reset (noise the
job trained 116 s past: under the survival window's 120 s floor, so still a complaint), then, 2 minutes
later, 'Fatal Python error: Segmentation fault' and mpirun's 'noticed that process rank 3 ... exited on
signal 11 (Segmentation fault)'. The complaint made rank 3 a `victim` (it waited on someone else), its own
crash a consequence, and the verdict a `hang` of a silent rank at 0.20. The crash lines themselves name a
memory fault: a process that dies of that died of its own fault (choose.py's `victim`)."""

from __future__ import annotations

from .fixtures import generated_diagnosis


def test_a_segfault_after_a_survived_socket_reset_is_the_crash(tmp_path, catalog):
    truth, doc = generated_diagnosis(tmp_path, "gpu_fault", 39, "mpirun_slurm", catalog)
    want = next(a for a in truth["attempts"] if a["id"] == 2)["verdict"]
    assert (want["kind"], want["rank"], want["host"]) == ("crash", 3, "cn0032")
    got = next(a for a in doc["attempts"] if a["id"] == 2)["verdict"]
    assert (got["kind"], got["rank"], got["host"]) == ("crash", 3, "cn0032"), got
