"""Whom the text names (issue 28, session 19).

Batch 14's dev excerpts at first sight missed where (1) a process's own environment print tied its global rank
to its local rank ('RANK=3 -- LOCAL_RANK=1', torch's env:// variables) with no host in the text: the identity
layer had the link, but a rank's local rank was joined only through links that also named a host. Each case is
written here from the emitter's source form, not from the excerpt."""

from __future__ import annotations

from .fixtures import diagnose_files


def test_a_ranks_local_rank_from_its_environment_print_without_a_host(tmp_path, monkeypatch, catalog):
    # torch.distributed's env:// rendezvous reads RANK / LOCAL_RANK (torch/distributed/rendezvous.py
    # _env_rendezvous_handler; torchrun sets both per worker, elastic/agent/server/local_elastic_agent.py
    # worker_env); a script that prints them ties the global rank to the local one; the failure is then
    # reported behind torchrun's '[rank{N}]:' prefix (--tee)
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"run.txt": (
        "RANK=5 LOCAL_RANK=1 WORLD_SIZE=8\n"
        "RANK=4 LOCAL_RANK=0 WORLD_SIZE=8\n"
        "[rank5]: Traceback (most recent call last):\n"
        "[rank5]:   File \"/work/train.py\", line 12, in <module>\n"
        "[rank5]:     torch.cuda.set_device(local_rank)\n"
        "[rank5]: RuntimeError: CUDA error: invalid device ordinal\n")})
    v = d["verdict"]
    assert (v["rank"], v["local_rank"]) == (5, 1), v


def test_a_rank_whose_prints_disagree_gets_no_local_rank(tmp_path, monkeypatch, catalog):
    # two runs in one paste print different local ranks for rank 5: the links disagree, neither is taken
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"run.txt": (
        "RANK=5 LOCAL_RANK=1 WORLD_SIZE=8\n"
        "RANK=5 LOCAL_RANK=3 WORLD_SIZE=8\n"
        "[rank5]: Traceback (most recent call last):\n"
        "[rank5]:   File \"/work/train.py\", line 12, in <module>\n"
        "[rank5]:     torch.cuda.set_device(local_rank)\n"
        "[rank5]: RuntimeError: CUDA error: invalid device ordinal\n")})
    v = d["verdict"]
    assert v["rank"] == 5 and v["local_rank"] is None, v
