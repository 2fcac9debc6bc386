"""Generate a realistic multi-rank incident corpus for the ingest benchmark.

64 ranks on 8 nodes (8 GPUs each): per-node torchrun logs with [rankN]:
prefixes, NCCL INFO-heavy debug output, training progress, a watchdog
cascade at the end; per-node kubelet klog, journald syslog and dmesg files;
slurmctld/slurmd logs. Line shapes follow shared/real_log_shapes.

    python benchmarks/gen_corpus.py OUT_DIR [--mb 1000]

Every line is generated (no block is repeated): times advance through the
run, progress steps go on, NCCL channels and ports are drawn at random, so the
store compresses like a real one would (about 1 GB/min).
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta
from pathlib import Path

NODES = [f"trn-node{i:02d}" for i in range(1, 9)]
RANKS_PER_NODE = 8
T0 = datetime(2026, 3, 2, 3, 0, 0)   # the job starts; the node booted 1000 s before


def torch_block(node_idx: int, host: str, t0: datetime, rng: random.Random, steps: range) -> list[str]:
    out = []
    for step in steps:
        t = t0 + timedelta(seconds=step * 0.8)
        for lr in range(RANKS_PER_NODE):
            rank = node_idx * RANKS_PER_NODE + lr
            pid = 40000 + rank
            glog = f"{t.month}{t:%d %H:%M:%S}.{t.microsecond:06d}"  # c10 leaves the month unpadded
            for k in range(6):
                chan = rng.randrange(32)
                out.append(f"[rank{rank}]:{host}:{pid}:{pid + 100 + k} [{lr}] NCCL INFO Channel {chan:02d}/0 : "
                           f"{rank} -> {(rank + 1) % 64} via P2P/IPC/read")
            out.append(f"[rank{rank}]:{host}:{pid}:{pid + 7} [{lr}] NCCL INFO comm 0x{0x55d0000 + rank:x} rank {rank} "
                       f"nranks 64 cudaDev {lr} busId {lr + 1:x}000 commId 0x9f3c2e11a0b4 - Init COMPLETE")
            out.append(f"[rank{rank}]:step {step} loss {rng.uniform(0.5, 3):.4f} lr 3.0e-04 tokens/s {rng.randint(9000, 12000)}")
            if step % 5 == 0:
                out.append(f"[rank{rank}]:[I{glog}000 ProcessGroupNCCL.cpp:1011] [PG ID 0 PG GUID 0(default_pg) "
                           f"Rank {rank}] ProcessGroupNCCL initialization options: size: 64, global rank: {rank}")
    return out


def cascade(node_idx: int, host: str, t: datetime) -> list[str]:
    out = []
    for lr in range(RANKS_PER_NODE):
        rank = node_idx * RANKS_PER_NODE + lr
        glog = f"{t.month}{t:%d %H:%M:%S}.{t.microsecond:06d}"  # c10 leaves the month unpadded
        out.append(f"[rank{rank}]:[E{glog}123 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective "
                   "operation timeout: WorkNCCL(SeqNum=90211, OpType=ALLREDUCE, NumelIn=9801523, "
                   "NumelOut=9801523, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.")
        out.append(f"[rank{rank}]:{host}:{40000 + rank}:{40001 + rank} [{lr}] NCCL INFO [Service thread] "
                   "Connection closed by localRank 3")
    return out


def klog_block(host: str, t0: datetime, n: int, rng: random.Random) -> list[str]:
    out = []
    for i in range(n):
        t = t0 + timedelta(seconds=i * 2)
        out.append(f"I{t:%m%d %H:%M:%S}.{rng.randrange(10**6):06d}    3709 kubelet.go:2155] \"SyncLoop (PLEG): "
                   f"event for pod\" pod=\"ml/trainer-{rng.randrange(8)}\" event={{Type:ContainerStarted}}")
        out.append(f"W{t:%m%d %H:%M:%S}.{rng.randrange(10**6):06d}    3709 helpers.go:808] eviction manager: "
                   "no observation found for eviction signal allocatableMemory.available")
    return out


def syslog_block(host: str, t0: datetime, n: int, rng: random.Random) -> list[str]:
    out = []
    for i in range(n):
        t = t0 + timedelta(seconds=i)
        out.append(f"{t:%b %d %H:%M:%S} {host} slurmd[2199]: launch task StepId=4242.0 request from UID:1000 "
                   f"GID:1000 HOST:10.0.0.{rng.randrange(255)} PORT:{rng.randrange(65535)}")
        uptime = 1000 + int((t - T0).total_seconds())
        out.append(f"{t:%b %d %H:%M:%S} {host} kernel: [{uptime}.{rng.randrange(10**6):06d}] NVRM: GPU at "
                   f"PCI:0000:{rng.randrange(256):02x}:00: GPU-680c9403-43d1-6cfc-9afd-7eabddb8b338")
    return out


def write_until(path: Path, target: int, lines_of) -> int:
    """Write the lines of lines_of(k) for k = 0, 1, ... until target bytes."""
    written, k = 0, 0
    with open(path, "w") as fh:
        while written < target:
            chunk = "\n".join(lines_of(k)) + "\n"
            fh.write(chunk)
            written += len(chunk)
            k += 1
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=1000, help="total size in MB (default 1000)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    total = int(args.mb * 1e6)
    t0 = T0
    per_node = total * 0.85 / len(NODES)
    per_aux = total * 0.15 / (len(NODES) * 2 + 1)
    written = 0
    steps_per_chunk = 10
    for i, host in enumerate(NODES):
        path = out / f"{host}.log"
        steps = []

        def chunk(k: int) -> list[str]:
            steps.append((k + 1) * steps_per_chunk)
            return torch_block(i, host, t0, rng, range(k * steps_per_chunk, (k + 1) * steps_per_chunk))
        written += write_until(path, int(per_node), chunk)
        # The watchdogs fire 10 minutes after the last step.
        with open(path, "a") as fh:
            fh.write("\n".join(cascade(i, host, t0 + timedelta(seconds=steps[-1] * 0.8 + 600))) + "\n")
        d = out / host
        d.mkdir(exist_ok=True)
        written += write_until(d / "kubelet.log", int(per_aux),
                               lambda k: klog_block(host, t0 + timedelta(seconds=200 * k), 100, rng))
        written += write_until(d / "syslog", int(per_aux),
                               lambda k: syslog_block(host, t0 + timedelta(seconds=100 * k), 100, rng))
    written += write_until(out / "slurmctld.log", int(per_aux), lambda k: [
        f"[{t0 + timedelta(seconds=5 * (k * 100 + j), milliseconds=rng.randrange(1000)):%Y-%m-%dT%H:%M:%S.%f}"[:-3]
        + "] sched: Allocate JobId=4242 NodeList=trn-node[01-08] #CPUs=512 Partition=gpu" for j in range(100)])
    print(f"wrote {written / 1e6:.0f} MB to {out}")


if __name__ == "__main__":
    main()
