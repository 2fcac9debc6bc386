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


def test_an_nccl_paste_github_autolinked_is_read_as_nccl(tmp_path, monkeypatch, catalog):
    # GitHub renders NCCL's 'file.cc:NN' source location (.cc is a top-level domain) and an IP address as links; a
    # paste copied back from a rendered issue keeps the markdown (NVIDIA/nccl#1710's form). NCCL's debug prefix
    # (src/debug.cc: '%s:%d:%d [%d] %s:%d NCCL WARN ') still names the host and pid; the IB completion error
    # (net_ib/p2p.cc 'Got completion from peer %s with status=%d ...') names its peer's address
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"paste.txt": (
        "gpu-a7:5120:5188 [2] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:[10.9.0.7](http://10.9.0.7/)<0>\n"
        "gpu-a7:5120:5120 [2] [enqueue.cc:1556](http://enqueue.cc:1556/) NCCL WARN Cuda failure 700 'an illegal "
        "memory access was encountered'\n"
        "gpu-a7:5120:5120 [2] NCCL INFO [group.cc:241](http://group.cc:241/) -> 1\n"
        "gpu-a7:5120:5120 [2] NCCL INFO [enqueue.cc:2299](http://enqueue.cc:2299/) -> 1\n")})
    v = d["verdict"]
    assert v["kind"] == "cuda_error", v
    assert (v["host"], v["pid"]) == ("gpu-a7", 5120), v


def test_older_nccls_queue_pair_access_violation_event_is_the_hosts_network_error(tmp_path, monkeypatch, catalog):
    # older NCCL (net_ib.cc) printed every IB async event as 'NET/IB : Got async event : %s' (ibv_event_type_str:
    # IBV_EVENT_QP_ACCESS_ERR is 'local access violation work queue error'); current NCCL calls it a fatal QP event
    # (net_ib/common.cc: 'async fatal event on QP', ncclIbQpFatalError). The peer whose queue pair broke then
    # reports a completion error naming this host's address
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"paste.txt": (
        "ib-n3:7001:7066 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async event : local access "
        "violation work queue error\n"
        "\n"
        "ib-n9:3302:3390 [0] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from peer 10.9.0.3<35121> "
        "with status=9 opcode=0 len=0 vendor err 138 (Send)\n"
        "ib-n9:3302:3390 [0] NCCL INFO transport/net.cc:1137 -> 6\n")})
    v = d["verdict"]
    assert v["kind"] == "network_error", v
    assert v["host"] == "ib-n3", v


def test_flux_lost_contact_with_a_job_shell_names_the_brokers_node(tmp_path, monkeypatch, catalog):
    # flux-core src/modules/job-exec/bulkexec.c: a job shell whose broker is unreachable (EHOSTUNREACH) raises the
    # job's fatal exception "%s on broker %s (rank %d)" with "lost contact with job shell" (flux-job prints it as
    # 'job.exception type=exec severity=0 ...'); the line is the instance's, the node it names is the lost one
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"flux_run.out": (
        "epoch 2 step 1400 loss 2.31\n"
        "1843.120s: job.exception type=exec severity=0 lost contact with job shell on broker tioga27 (rank 3)\n"
        "flux-job: task(s) exited with exit code 143\n")})
    v = d["verdict"]
    assert v["kind"] == "node_failure", v
    assert v["host"] == "tioga27", v
