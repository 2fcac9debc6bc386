"""Two hosts whose IB completion errors name each other: the link that went down is the host whose own port
error failed its next work request, not one whose port blinked minutes before while the job trained on. In a
torchrun console NCCL's lines and a progress bar carry no time: each takes its file's last timed line's, which
can be minutes before it was written. A port event counts against the first completion error at the latest
that error can have been written (its file's next timed line), not at the inherited time (a lower bound)."""

from __future__ import annotations

import pytest

from .fixtures import diagnose_files

IP = {"gpu-a018": "10.160.0.10", "gpu-a019": "10.53.0.11"}
PID = {"gpu-a018": 72400, "gpu-a019": 82370}
ALLGATHER = ("Collective WorkNCCL(SeqNum=1152, OpType=_ALLGATHER_BASE, NumelIn=25690112, NumelOut=25690112, "
             "Timeout(ms)=300000) raised the following async exception: NCCL error: remote process exited or there "
             "was a network error, NCCL version 2.21.5")


def _agent(host: str, first: int, hhmmss: str) -> list[str]:
    pid = PID[host] - 200
    at = f"I0302 {hhmmss}.540000 {pid} torch/distributed/elastic/agent/server/api.py"
    return [f"{at}:553] [default] Rendezvous complete for workers. Result:",
            f"{at}:553]   restart_count=0", f"{at}:553]   group_rank={first // 4}",
            f"{at}:553]   global_ranks={list(range(first, first + 4))}",
            f"{at}:715] [default] Starting worker group"]


def _nccl(host: str, lr: int, text: str) -> str:
    return f"[default{lr}]:{host}:{PID[host] + lr}:{PID[host] + lr + 31} [{lr}] {text}"


def _oob(host: str) -> list[str]:
    return [_nccl(host, lr, "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB "
                            f"[RO]; OOB ibp12s0:{IP[host]}<0>") for lr in range(4)]


def _completion(host: str, peer: str) -> list[str]:
    return [_nccl(host, 2, f"transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer {IP[peer]}<38306> "
                           "with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  localGid "
                           f"::ffff:{IP[host]} remoteGids::ffff:{IP[peer]} hca mlx5_2"),
            _nccl(host, 2, "NCCL INFO transport/net.cc:1320 -> 6")]


def _watchdog(rank: int, hhmmss: str) -> list[str]:
    return [f"[default{rank % 4}]:[rank{rank}]:[E302 {hhmmss}.848141987 ProcessGroupNCCL.cpp:542] [Rank {rank}] "
            + ALLGATHER,
            f"[default{rank % 4}]:[rank{rank}]:[E302 {hhmmss}.851141987 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID "
            f"0(default_pg) Rank {rank}] Process group watchdog thread terminated with exception: NCCL error: remote "
            "process exited or there was a network error, NCCL version 2.21.5"]


def _bar(step: int, elapsed: int) -> str:
    return (f"[default0]:Epoch 0:   {step // 10}%|          | {step}/1000 [{elapsed // 60:02d}:{elapsed % 60:02d}<61:00, "
            f"0.26it/s, v_num=0, train_loss=2.3{step % 10}]")


@pytest.mark.parametrize("timed_after", [True, False], ids=["bounded", "unbounded"])
def test_a_port_that_blinked_while_the_job_trained_on_is_not_the_link_that_went_down(tmp_path, monkeypatch, catalog,
                                                                                     timed_after):
    # gpu-a018 (ranks 0-3): its last timed line is at 10:00:55; rank 2's port blinks (old NCCL's form, no
    # device) at step 30 and the job trains 37 more steps; then its completion error names gpu-a019, and
    # its watchdog (timed) says when: 10:06:05 (unbounded: its log ends there, nothing says when)
    a018 = (_agent("gpu-a018", 0, "10:00:55") + _oob("gpu-a018") + [_bar(s, 4 * s) for s in range(1, 31)]
            + [_nccl("gpu-a018", 2, "transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error")]
            + [_bar(s, 4 * s) for s in range(31, 68)] + _completion("gpu-a018", "gpu-a019")
            + (_watchdog(2, "10:06:05") if timed_after else []))
    # gpu-a019 (ranks 4-7): a timed line at 10:04:30, then its port goes down for good: rank 6's next work
    # request fails at once, naming gpu-a018
    a019 = (_agent("gpu-a019", 4, "10:00:57") + _oob("gpu-a019")
            + ["[default1]:2026-03-02 10:04:30,792 - WARNING - py.warnings - /usr/lib/python3.10/site-packages/torch/"
               "utils/data/dataloader.py:617: UserWarning: This DataLoader will create 12 worker processes in total."]
            + [_nccl("gpu-a019", lr, "transport/net_ib/common.cc:179 NCCL WARN NET/IB : mlx5_2:1 Got non-fatal async "
                                     "event: port error(10)") for lr in (0, 2)]
            + _completion("gpu-a019", "gpu-a018") + _watchdog(6, "10:06:10"))
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"gpu-a018.log": "\n".join(a018) + "\n",
                                                        "gpu-a019.log": "\n".join(a019) + "\n"})["verdict"]
    assert v["kind"] == "network_error", v
    assert v["host"] == "gpu-a019", v
