"""Launcher prefixes are peeled like srun's or pdsh's: docker compose's ('<container>  | <line>',
cmd/formatter/logs.go; parsers/envelopes/compose_prefix.toml), the container kept; SageMaker's MPI tag
(parsers/envelopes/mpirun_tag.toml). The line under each is its emitter's."""

from .fixtures import diagnose_files

TIMEOUT = ("[rank{r}]:[E305 08:14:{s}.120000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran "
           "for 600021 milliseconds before timing out.")


def test_a_compose_run_names_the_rank_and_container_under_the_prefix(tmp_path, monkeypatch, catalog):
    lines = [
        "trainer-a-1  | [rank0]:[W305 08:03:00.100000000 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 0] "
        "using GPU 0 to perform barrier as devices used by this process are currently unknown.",
        "trainer-b-1  | [rank5]:[W305 08:03:00.200000000 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 5] "
        "using GPU 1 to perform barrier as devices used by this process are currently unknown.",
        "trainer-b-1  | [rank5]: Traceback (most recent call last):",
        'trainer-b-1  | [rank5]:   File "/workspace/train.py", line 88, in <module>',
        "trainer-b-1  | [rank5]:     loss.backward()",
        "trainer-b-1  | [rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has "
        "a total capacity of 79.15 GiB of which 1.02 GiB is free.",
        "trainer-a-1  | " + TIMEOUT.format(r=0, s="02"),
        "trainer-a-1  | " + TIMEOUT.format(r=1, s="02"),
    ]
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"compose.log": "\n".join(lines) + "\n"})["verdict"]
    assert (v["kind"], v["rank"]) == ("gpu_oom", 5), v


def test_sagemakers_mpi_tag_names_the_rank_and_host_of_each_line(tmp_path, monkeypatch, catalog):
    """Open MPI's --tag-output as SageMaker's MPI jobs print it, '[job,mpirank:R,HOST]<stream>:' (real pastes:
    '[1,mpirank:0,algo-1]<stdout>:algo-1:79:1300 [0] NCCL INFO ...'): parsers/envelopes/mpirun_tag.toml."""
    lines = [
        "[1,mpirank:0,algo-1]<stdout>:algo-1:79:1300 [0] NCCL INFO Launch mode Parallel",
        "[1,mpirank:5,algo-2]<stdout>:algo-2:81:1302 [1] NCCL INFO Launch mode Parallel",
        "[1,mpirank:5,algo-2]<stderr>:Traceback (most recent call last):",
        '[1,mpirank:5,algo-2]<stderr>:  File "train.py", line 88, in <module>',
        "[1,mpirank:5,algo-2]<stderr>:RuntimeError: CUDA error: an illegal memory access was encountered",
        "[1,mpirank:0,algo-1]<stderr>:algo-1:79:1310 [0] NCCL WARN Net : Connection closed by remote peer "
        "algo-2<57810>",
    ]
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"mpi.log": "\n".join(lines) + "\n"})["verdict"]
    assert (v["rank"], v["host"]) == (5, "algo-2"), v
