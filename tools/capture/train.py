#!/usr/bin/env python3
"""A tiny data-parallel training job (torch, gloo, CPU) for the capture harness.

It is the "user job" of every captured incident: launched by torchrun (one
process per rank) or directly by `srun` (one Slurm task per rank). It trains
a small MLP for a few dozen steps, averaging gradients with one all_reduce
per step, and logs one progress line per step ("step 12 loss 0.53121 ..."),
so the last progress line of each rank means something.

Identity comes from torchrun (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT)
or, when started by srun, from SLURM_PROCID / SLURM_LOCALID / SLURM_NTASKS
with MASTER_ADDR=127.0.0.1 and MASTER_PORT=$RT_MASTER_PORT.

Everything else comes from the environment, and the fault is NEVER printed
(the logs must not give the answer away):

  RT_FAULTS       comma-separated "rank:step:kind[:arg]"; kind is one of
                  exception   raise RuntimeError while loading the batch
                  slowexc     sleep <arg> s (outside any collective), then raise
                  hang        never return from the data loader (no collective)
                  segfault    dereference NULL through ctypes (real SIGSEGV)
                  oom_rlimit  lower RLIMIT_AS to VmSize + 1 GiB, then allocate
                              a <arg> GiB (default 4) prefetch buffer -> ENOMEM
                  grow        allocate and touch <arg> MiB chunks (default 64)
                              until something (a cgroup OOM kill) stops it
  RT_PIDDIR       where rank<R>.pid and fault_rank<R>.json are written (for
                  the harness: outside the log folders)
  RT_STEPS        steps to train (default 40)
  RT_STEP_SLEEP   seconds of simulated compute per step (default 0.3)
  RT_PG_TIMEOUT   process-group timeout in seconds (default 20)
  RT_PHASE_AT, RT_PHASE_SECS  at that step every rank spends that many
                  seconds in a collective-free "reloading data shard" phase
                  (lets two independent failures happen seconds apart)
  RT_MODE         allreduce (default) or ddp (DistributedDataParallel; never
                  with TORCH_DISTRIBUTED_DEBUG=DETAIL: segfaults in 2.13 CPU)
"""
import datetime
import faulthandler
import json
import logging
import os
import resource
import socket
import sys
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record

faulthandler.enable()  # "Fatal Python error: Segmentation fault" like real jobs

if "RANK" not in os.environ and "SLURM_PROCID" in os.environ:  # srun launch
    os.environ["RANK"] = os.environ["SLURM_PROCID"]
    os.environ["LOCAL_RANK"] = os.environ.get("SLURM_LOCALID", "0")
    os.environ["WORLD_SIZE"] = os.environ["SLURM_NTASKS"]
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", os.environ.get("RT_MASTER_PORT", "29500"))

RANK = int(os.environ.get("RANK", "0"))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))
HOST = socket.gethostname()

log = logging.getLogger("train")


def setup_logging():
    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s [rank{RANK}] %(message)s"))
    log.addHandler(h)
    log.setLevel(logging.INFO)
    log.propagate = False


def parse_faults():
    faults = {}
    for item in filter(None, os.environ.get("RT_FAULTS", "").replace(" ", "").split(",")):
        parts = item.split(":")
        faults[(int(parts[0]), int(parts[1]))] = (parts[2], parts[3] if len(parts) > 3 else None)
    return faults


def note(name, payload):
    d = os.environ.get("RT_PIDDIR")
    if d:
        tmp = os.path.join(d, f".{name}.tmp")
        with open(tmp, "w") as f:
            json.dump(payload, f)
        os.replace(tmp, os.path.join(d, name))


def note_fault(kind, step):
    # time.time() is this process's clock (shifted under libfaketime); the
    # harness subtracts the node's known offset to get the true time
    note(f"fault_rank{RANK}.json", {"rank": RANK, "kind": kind, "step": step,
                                    "time": time.time(), "pid": os.getpid(), "host": HOST})


def vm_size():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def load_batch(step, x_all, y_all, faults):
    """Fetch this step's batch. Faults live here so that tracebacks look like
    ordinary data-pipeline failures."""
    kind, arg = faults.get((RANK, step), (None, None))
    if kind == "slowexc":
        time.sleep(float(arg or 3))
    if kind in ("exception", "slowexc"):
        note_fault(kind, step)
        raise RuntimeError(
            f"corrupted input batch at step {step}: found 7 non-finite values in shard {RANK:03d}")
    if kind == "hang":
        note_fault(kind, step)
        threading.Event().wait()  # a stuck input pipeline: never returns
    if kind == "segfault":
        note_fault(kind, step)
        import ctypes
        ctypes.string_at(0)
    if kind == "oom_rlimit":
        note_fault(kind, step)
        resource.setrlimit(resource.RLIMIT_AS, (vm_size() + (1 << 30), resource.RLIM_INFINITY))
        nbytes = int(float(arg or 4) * (1 << 30))
        prefetch = torch.empty(nbytes // 4, dtype=torch.float32)
        prefetch.fill_(0)
    if kind == "grow":
        note_fault(kind, step)
        hold, chunk = [], int(arg or 64) << 20
        while True:  # a runaway prefetch cache
            b = bytearray(chunk)
            for i in range(0, chunk, 4096):
                b[i] = 1
            hold.append(b)
            time.sleep(0.02)
    idx = torch.randint(0, x_all.shape[0], (32,))
    return x_all[idx], y_all[idx]


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                                 nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x)


def main():
    setup_logging()
    torch.set_num_threads(1)
    steps = int(os.environ.get("RT_STEPS", "40"))
    step_sleep = float(os.environ.get("RT_STEP_SLEEP", "0.3"))
    pg_timeout = float(os.environ.get("RT_PG_TIMEOUT", "20"))
    phase_at = int(os.environ.get("RT_PHASE_AT", "-1"))
    phase_secs = float(os.environ.get("RT_PHASE_SECS", "0"))
    faults = parse_faults()
    note(f"rank{RANK}.pid", {"rank": RANK, "pid": os.getpid(), "host": HOST,
                             "local_rank": LOCAL_RANK, "world_size": WORLD})

    log.info("worker started host=%s pid=%d local_rank=%d world_size=%d master=%s:%s torch=%s",
             HOST, os.getpid(), LOCAL_RANK, WORLD, os.environ.get("MASTER_ADDR"),
             os.environ.get("MASTER_PORT"), torch.__version__)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=pg_timeout))
    log.info("process group ready backend=%s world_size=%d timeout=%ss",
             dist.get_backend(), dist.get_world_size(), int(pg_timeout))

    torch.manual_seed(1234)
    use_ddp = os.environ.get("RT_MODE", "allreduce") == "ddp"
    model = TinyNet()
    if use_ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model)
    else:
        for p in model.parameters():  # identical start on every rank
            dist.broadcast(p.data, src=0)
    torch.manual_seed(1234 + RANK)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x_all = torch.randn(256, 64)
    y_all = x_all.sum(dim=1, keepdim=True) * 0.1
    loss_fn = nn.MSELoss()

    for step in range(1, steps + 1):
        t0 = time.time()
        if step == phase_at and phase_secs > 0:
            log.info("step %d reloading data shard", step)
            x, y = load_batch(step, x_all, y_all, faults)
            time.sleep(phase_secs)
        else:
            x, y = load_batch(step, x_all, y_all, faults)
        time.sleep(step_sleep)  # simulated compute
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()  # DDP all_reduces the gradients here
        if not use_ddp:
            grads = [p.grad for p in model.parameters()]
            flat = torch.cat([g.reshape(-1) for g in grads])
            dist.all_reduce(flat)  # one gradient all_reduce per step
            flat /= WORLD
            off = 0
            for g in grads:
                g.copy_(flat[off:off + g.numel()].view_as(g))
                off += g.numel()
        opt.step()
        log.info("step %d loss %.5f step_time %.3fs", step, loss.item(), time.time() - t0)

    dist.barrier()
    log.info("training finished steps=%d", steps)
    dist.destroy_process_group()


if __name__ == "__main__":
    record(main)()
