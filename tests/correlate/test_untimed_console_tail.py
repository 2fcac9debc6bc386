"""A console of several hosts whose lines carry no time of their own (mpirun --tag-output without
--timestamp-output: the ranks' step lines) holds each host's last lines at its last timed line's time, a lower
bound. A host that wrote nothing timed after its ranks' first lines, while its ranks stepped on to the end with
everyone's, did not stop early: the detector of half-dead nodes reads its end at the latest its untimed lines
can have been written (the console's next timed line), and names no frozen node; the crash mpirun and the
kernel report is the cause."""

from __future__ import annotations

from .fixtures import diagnose_files

NODES = {"node18": range(0, 4), "node19": range(4, 8), "node20": range(8, 12)}
PIDS = {r: 40000 + 7 * r for r in range(12)}
_BANNER = "-" * 74


def _host(rank: int) -> str:
    return next(h for h, ranks in NODES.items() if rank in ranks)


def _console() -> str:
    out = ["[1,0]<stdout>:2026-03-02 01:11:56,937 - INFO - train - SLURM_JOB_ID=865001 SLURM_RESTART_COUNT=0 "
           "SLURM_JOB_NODELIST=node[18-20]"]
    for r in range(12):   # each rank's own timed line, then NCCL's (untimed) line that names its node and pid
        out.append(f"[1,{r}]<stderr>:[rank{r}]:[I302 01:11:{58 + r // 6:02d}.{r:03d}000000 ProcessGroupNCCL.cpp:1011] "
                   f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] ProcessGroupNCCL initialization options: size: 12, "
                   f"global rank: {r}")
        out.append(f"[1,{r}]<stdout>:{_host(r)}:{PIDS[r]}:{PIDS[r] + 7} [{r % 4}] NCCL INFO ncclCommInitRank comm "
                   f"0x55d0c000{r:x}001 rank {r} nranks 12 cudaDev {r % 4} nvmlDev {r % 4} busId 18000 commId "
                   "0x56bb48623c028de9 - Init COMPLETE")
    for step in range(1, 31):   # 30 steps at ~3.8 s each: two minutes that no line of the console dates
        out += [f"[1,{r}]<stdout>:step {step} loss 2.3{step % 10}45 step_time 3.80s" for r in range(12)]
        if step == 3:   # a retried socket of rank 8's the job trained past (a symptom of node20's)
            out.append(f"[1,8]<stdout>:node20:{PIDS[8]}:{PIDS[8] + 40} [0] misc/socket.cc:573 NCCL WARN "
                       "socketProgressOpt: Call to recv from node18<43000> failed : Connection reset by peer")
    out += [_BANNER, "Primary job  terminated normally, but 1 process returned",
            "a non-zero exit code. Per user-direction, the job has been aborted.", _BANNER, _BANNER,
            f"mpirun noticed that process rank 8 with PID {PIDS[8]} on node node20 exited on signal 11 "
            "(Segmentation fault).", _BANNER,
            "slurmstepd: error: *** JOB 865001 ON node18 CANCELLED AT 2026-03-02T01:14:02 DUE TO JOB REQUEUE ***"]
    return "\n".join(out) + "\n"


def test_a_host_whose_untimed_console_lines_went_on_to_the_end_is_not_a_frozen_node(tmp_path, monkeypatch, catalog):
    files = {
        "slurm-865001.out": _console(),
        # node20's kernel: the segfault of rank 8's process (node18 and node19 wrote nothing of their own)
        "dmesg/node20.txt": f"[Mon Mar  2 01:13:58 2026] python[{PIDS[8]}]: segfault at 18 ip 00007f3a2c1d4e5f sp "
                            "00007ffd1a2b3c40 error 4 in libnccl.so.2[7f3a2c000000+12000000]\n",
    }
    v = diagnose_files(tmp_path, monkeypatch, catalog, files)["verdict"]
    assert v["kind"] == "crash", v
    assert (v["rank"], v["host"]) == (8, "node20"), v
