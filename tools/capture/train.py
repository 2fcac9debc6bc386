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

  RT_FAULTS       comma-separated "who:step:kind[:arg][@once]"; who is a global
                  rank or "<host>/<local_rank>" (a device of one node, whatever
                  rank it gets in this attempt); step is a training step, or
                  "+N" = the N-th step this process runs (after a resume too);
                  "@once": fire in the first attempt that reaches it only (a
                  marker in RT_PIDDIR), else in every attempt; kind is one of
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
  RT_CKPT_DIR, RT_CKPT_EVERY  checkpointing with torch.distributed.checkpoint
                  (DCP, every rank writes its part): save every N steps into
                  RT_CKPT_DIR/step-<N>, and on start load the newest complete
                  one (a `.metadata` file) and resume after it. The log lines
                  are torchtitan's CheckpointManager's ("Loading the checkpoint
                  at step N.", "Finished loading the checkpoint in X seconds.",
                  "Saving the checkpoint (or staging if async is enabled).",
                  "Training starts at step N"), as a real trainer writes them.

The attempt a process belongs to is the launcher's restart count
(TORCHELASTIC_RESTART_COUNT under torchrun, SLURM_RESTART_COUNT after a Slurm
requeue); the pid and fault notes record it for the harness.
"""
import datetime
import faulthandler
import glob
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
import torch.distributed.checkpoint as dcp
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
# the launcher's restart count: torchrun's per agent, Slurm's per requeue
ATTEMPT = int(os.environ.get("TORCHELASTIC_RESTART_COUNT") or os.environ.get("SLURM_RESTART_COUNT") or 0)

log = logging.getLogger("train")


def setup_logging():
    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s [rank{RANK}] %(message)s"))
    log.addHandler(h)
    log.setLevel(logging.INFO)
    log.propagate = False


def parse_faults():
    """{step: (kind, arg, marker)} of the faults meant for this process;
    step is a number, or "+N" for the N-th step this process runs."""
    faults = {}
    items = filter(None, os.environ.get("RT_FAULTS", "").replace(" ", "").split(","))
    for i, item in enumerate(items):
        item, once = (item[:-5], True) if item.endswith("@once") else (item, False)
        parts = item.split(":")
        who = parts[0]
        mine = who == str(RANK) if "/" not in who else who == f"{HOST}/{LOCAL_RANK}"
        if not mine:
            continue
        marker = f"fired_{i}" if once else None
        d = os.environ.get("RT_PIDDIR")
        if marker and d and os.path.exists(os.path.join(d, marker)):
            continue  # fired in an earlier attempt
        faults[parts[1]] = (parts[2], parts[3] if len(parts) > 3 else None, marker)
    return faults


def fault_at(faults, step, nth):
    return faults.get(str(step)) or faults.get(f"+{nth}") or (None, None, None)


def note(name, payload):
    d = os.environ.get("RT_PIDDIR")
    if d:
        tmp = os.path.join(d, f".{name}.tmp")
        with open(tmp, "w") as f:
            json.dump(payload, f)
        os.replace(tmp, os.path.join(d, name))


def note_fault(kind, step, marker=None):
    # time.time() is this process's clock (shifted under libfaketime); the
    # harness subtracts the node's known offset to get the true time
    payload = {"rank": RANK, "local_rank": LOCAL_RANK, "kind": kind, "step": step,
               "time": time.time(), "pid": os.getpid(), "host": HOST, "attempt": ATTEMPT}
    note(f"fault_rank{RANK}.json", payload)
    note(f"fault_pid{os.getpid()}.json", payload)  # every attempt's, for the harness
    if marker:
        note(marker, payload)


def vm_size():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def load_batch(step, nth, x_all, y_all, faults):
    """Fetch this step's batch. Faults live here so that tracebacks look like
    ordinary data-pipeline failures."""
    kind, arg, marker = fault_at(faults, step, nth)
    if kind == "slowexc":
        time.sleep(float(arg or 3))
    if kind:
        note_fault(kind, step, marker)
    if kind in ("exception", "slowexc"):
        raise RuntimeError(
            f"corrupted input batch at step {step}: found 7 non-finite values in shard {RANK:03d}")
    if kind == "hang":
        threading.Event().wait()  # a stuck input pipeline: never returns
    if kind == "segfault":
        import ctypes
        ctypes.string_at(0)
    if kind == "oom_rlimit":
        resource.setrlimit(resource.RLIMIT_AS, (vm_size() + (1 << 30), resource.RLIM_INFINITY))
        nbytes = int(float(arg or 4) * (1 << 30))
        prefetch = torch.empty(nbytes // 4, dtype=torch.float32)
        prefetch.fill_(0)
    if kind == "grow":
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


class Checkpointer:
    """Periodic checkpoints with torch.distributed.checkpoint, logged the way
    torchtitan's CheckpointManager logs them (the wording of its save/load
    messages is the emitter's own; this class only reuses the wording)."""

    def __init__(self, folder, interval):
        self.folder, self.interval = folder, interval
        if folder:
            log.info("Checkpointing active. Checkpoints will be loaded from and saved to %s", folder)

    def _find_load_step(self):
        steps = []
        for d in glob.glob(os.path.join(self.folder, "step-*")):
            tail = os.path.basename(d)[len("step-"):]
            if tail.isdigit() and os.path.isfile(os.path.join(d, ".metadata")):
                steps.append(int(tail))  # complete checkpoints only
        return max(steps, default=-1)

    def load(self, states):
        """The step of the newest complete checkpoint, loaded into `states`
        in place, or 0 when there is none (a fresh start)."""
        if not self.folder:
            return 0
        step = self._find_load_step()
        if step < 0:
            return 0
        log.info("Loading the checkpoint at step %d.", step)
        begin = time.monotonic()
        dcp.load(states, checkpoint_id=os.path.join(self.folder, f"step-{step}"))
        log.info("Finished loading the checkpoint in %.2f seconds.", time.monotonic() - begin)
        return int(states["train_state"]["step"])

    def save(self, step, states):
        if not self.folder or self.interval <= 0 or step % self.interval:
            return
        begin = time.monotonic()
        log.info("Saving the checkpoint (or staging if async is enabled).")
        states["train_state"]["step"].fill_(step)
        dcp.save(states, checkpoint_id=os.path.join(self.folder, f"step-{step}"))
        log.info("Finished saving the checkpoint (or staging if async is enabled) in %.2f seconds.",
                 time.monotonic() - begin)


def main():
    setup_logging()
    torch.set_num_threads(1)
    steps = int(os.environ.get("RT_STEPS", "40"))
    step_sleep = float(os.environ.get("RT_STEP_SLEEP", "0.3"))
    pg_timeout = float(os.environ.get("RT_PG_TIMEOUT", "20"))
    phase_at = int(os.environ.get("RT_PHASE_AT", "-1"))
    phase_secs = float(os.environ.get("RT_PHASE_SECS", "0"))
    faults = parse_faults()
    me = {"rank": RANK, "pid": os.getpid(), "host": HOST, "local_rank": LOCAL_RANK,
          "world_size": WORLD, "attempt": ATTEMPT, "started": time.time()}
    note(f"rank{RANK}.pid", me)                # the newest process of each rank
    note(f"worker_pid{os.getpid()}.json", me)  # every process of every attempt

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
    ckpt = Checkpointer(os.environ.get("RT_CKPT_DIR"), int(os.environ.get("RT_CKPT_EVERY", "0")))
    states = {"model": model.state_dict(), "train_state": {"step": torch.tensor(0)}}
    done = ckpt.load(states)
    if ckpt.folder:
        log.info("Training starts at step %d", done + 1)

    for step in range(done + 1, steps + 1):
        t0 = time.time()
        nth = step - done
        if step == phase_at and phase_secs > 0:
            log.info("step %d reloading data shard", step)
            x, y = load_batch(step, nth, x_all, y_all, faults)
            time.sleep(phase_secs)
        else:
            x, y = load_batch(step, nth, x_all, y_all, faults)
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
        ckpt.save(step, states)

    dist.barrier()
    log.info("training finished steps=%d", steps)
    dist.destroy_process_group()


if __name__ == "__main__":
    record(main)()
