"""A long, noisy, 64-rank training run with one real failure near its end (issue 13: noise in long runs).

    python benchmarks/gen_noisy.py OUT_DIR [--hours 5] [--nodes 8] [--gpus 8] [--noise 300] [--seed 1]

Writes one incident directory (like sample_logs/*): per node `nodeNN/train.log` (torchrun's per-rank
`[rankN]:` prefixes over Python logging '%(asctime)s - %(levelname)s - %(name)s - %(message)s' progress
lines, NCCL_DEBUG=WARN lines, glog c10d/watchdog lines, the elastic agent's lines) and `nodeNN/dmesg.txt`
(ctime dmesg), plus `truth.json`.

The run carries warnings it survives, spread over the whole run, of every kind real long runs show: IB
port flaps (NCCL 'NET/IB : Got async event : port error' and the current 'Got non-fatal async event: port
error(10)'), retried socket errors (NCCL 'Call to recv ... failed : Connection reset by peer'), c10d store
reconnect warnings ('The client socket has failed to connect to [host]:29500 ... Connection refused'), NCCL
WARN noise, a rank that goes slow for a while and recovers, harmless UserWarnings. Near the end one GPU
falls off the bus (dmesg Xid 79 on one node), its rank gets a CUDA error and stops, the other ranks'
watchdogs fire `timeout_s` later and the agents tear the job down: that GPU fault is the root cause.

Message texts are those of the emitters (see queries/data/messages.csv, and benchmarks/emit/, which this shares
with gen_longrun.py). Times are UTC; the output depends only on the arguments (random.Random(seed)).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from emit import nccl as N  # noqa: E402
from emit import timefmt as TF  # noqa: E402
from emit import torch as T  # noqa: E402

T0 = dt.datetime(2026, 3, 2, 1, 0, 0)
_py = TF.py
_glog = TF.c10_padded_zero_ns
_ctime = TF.ctime


def generate(out: str | Path, *, hours: float = 5.0, nodes: int = 8, gpus: int = 8, step_s: float = 60.0,
             noise: int = 300, seed: int = 1, timeout_s: int = 600, progress: bool = True) -> dict:
    """Write the incident under `out`; return its truth (also written to truth.json). progress=False leaves the
    progress lines out (a job logging NCCL/c10d output only): the cascade alone must tell the failure."""
    rnd = random.Random(seed)
    out = Path(out)
    hosts = [f"node{i + 1:02d}" for i in range(nodes)]
    world = nodes * gpus
    pid = {r: 40000 + 100 * (r // gpus) + r % gpus for r in range(world)}
    end = T0 + dt.timedelta(hours=hours)
    t_fail = end - dt.timedelta(minutes=25)
    bad_host = hosts[min(4, nodes - 1)]
    bad_local = 3 % gpus
    bad_rank = hosts.index(bad_host) * gpus + bad_local
    bus = f"0000:{0x18 + 0x10 * bad_local:02x}:00"
    lines: dict[str, list[tuple[dt.datetime, str]]] = {h: [] for h in hosts}
    dmesg: dict[str, list[tuple[dt.datetime, str]]] = {h: [] for h in hosts}

    def emit(rank: int, t: dt.datetime, text: str) -> None:
        lines[hosts[rank // gpus]].append((t, f"[rank{rank}]:{text}"))

    # start: agent + NCCL init
    for h in hosts:
        lines[h].append((T0, f"I{T0.strftime('%m%d %H:%M:%S')}.000000 {39000 + hosts.index(h)} "
                             "torch/distributed/elastic/agent/server/api.py:715] [default] Starting worker group"))
    for r in range(world):
        h = hosts[r // gpus]
        emit(r, T0 + dt.timedelta(seconds=20), N.init_complete(h, pid[r], pid[r] + 7, r % gpus, 0x55d0c00000 + r, r,
                                                               world, r % gpus, 0x18 + 0x10 * (r % gpus),
                                                               0x8e1f2a3b4c5d6e7f))

    # a slow rank that recovers: no progress for 20 minutes in the second hour, then on again
    slow_rank = (bad_rank + 9) % world
    slow_from = T0 + dt.timedelta(minutes=70)
    slow_to = slow_from + dt.timedelta(minutes=20)

    # progress: every rank, every step, until the failure (the bad rank) / the watchdog (the others)
    step = 0
    t = T0 + dt.timedelta(seconds=60)
    last_step_t = t
    while t < t_fail:
        step += 1
        for r in range(world):
            if r == slow_rank and slow_from <= t < slow_to:
                continue
            jitter = dt.timedelta(milliseconds=rnd.randint(0, 900) + 17 * (r % gpus))
            if not progress:
                continue
            emit(r, t + jitter, f"{_py(t + jitter)} - INFO - train - step {step} | loss {2.5 / (1 + step / 200):.4f}"
                                f" | lr 3.0e-04 | step_time {step_s:.2f}s")
        last_step_t = t
        t += dt.timedelta(seconds=step_s)
    if progress:
        emit(slow_rank, slow_to + dt.timedelta(seconds=3),
             f"{_py(slow_to + dt.timedelta(seconds=3))} - WARNING - train - step "
             f"{int((slow_to - T0).total_seconds() // step_s)} took 1203.4s, 20x the median: dataloader stall")

    # survivable noise, spread over the run before the failure
    kinds = ("ib_flap_old", "ib_flap_new", "socket_retry", "store_retry", "nccl_warn", "user_warning")
    span = (t_fail - T0 - dt.timedelta(minutes=40)).total_seconds()
    noise_log = []
    for i in range(noise):
        k = kinds[i % len(kinds)]
        tn = T0 + dt.timedelta(minutes=5, seconds=rnd.uniform(0, span))
        r = rnd.randrange(world)
        h, lr = hosts[r // gpus], r % gpus
        if k == "ib_flap_old":
            text = N.ib_async_old(h, pid[r], pid[r] + 31, lr)
        elif k == "ib_flap_new":
            text = N.ib_async(h, pid[r], pid[r] + 31, lr, f"mlx5_{lr}", 1, "port error", 10)
        elif k == "socket_retry":
            peer = hosts[(hosts.index(h) + 1) % nodes]
            text = N.socket_reset(h, pid[r], pid[r] + 40, lr, peer, 43000 + lr)
        elif k == "store_retry":
            text = T.store_connect_retry(tn, hosts[0], 29500, header=_glog("W", tn))
        elif k == "nccl_warn":
            text = N.plugin_missing(h, pid[r], pid[r] + 31, lr)
        else:
            text = T.user_warning(tn, "/opt/venv/lib/python3.11/site-packages")
        emit(r, tn, text)
        noise_log.append({"time": tn.isoformat(), "rank": r, "kind": k})

    # the failure: GPU off the bus, the rank's CUDA error, then the cascade
    dmesg[bad_host].append((t_fail, f"[{_ctime(t_fail)}] NVRM: Xid (PCI:{bus}): 79, pid={pid[bad_rank]}, "
                                    "name=python, GPU has fallen off the bus."))
    dmesg[bad_host].append((t_fail, f"[{_ctime(t_fail)}] NVRM: GPU {bus}.0: GPU has fallen off the bus."))
    te = t_fail + dt.timedelta(seconds=2, milliseconds=310)
    emit(bad_rank, te, f"{_py(te)} - ERROR - train - RuntimeError: CUDA error: unspecified launch failure")
    tw = last_step_t + dt.timedelta(seconds=timeout_s)
    seq = 100 + 3 * step
    for r in range(world):
        if r == bad_rank:
            continue
        tr = tw + dt.timedelta(milliseconds=rnd.randint(0, 400))
        emit(r, tr, f"[{_glog('E', tr)} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation "
                    f"timeout: {T.work(seq, 'ALLREDUCE', 1048576, timeout_s * 1000)} ran for "
                    f"{timeout_s * 1000 + rnd.randint(1, 90)} milliseconds before timing out.")
    tk = tw + dt.timedelta(seconds=5)
    for h in hosts:
        a = 39000 + hosts.index(h)
        for lr in range(gpus):
            r = hosts.index(h) * gpus + lr
            lines[h].append((tk, f"W{tk.strftime('%m%d %H:%M:%S')}.{lr:06d} {a} torch/distributed/elastic/"
                                 f"multiprocessing/api.py:897] Sending process {pid[r]} closing signal SIGTERM"))

    out.mkdir(parents=True, exist_ok=True)
    for h in hosts:
        d = out / h
        d.mkdir(exist_ok=True)
        (d / "train.log").write_text("\n".join(x for _, x in sorted(lines[h], key=lambda p: p[0])) + "\n")
        if dmesg[h]:
            (d / "dmesg.txt").write_text("\n".join(x for _, x in dmesg[h]) + "\n")
    truth = {"verdict": {"kind": "gpu_fault", "rank": bad_rank, "host": bad_host,
                         "time": t_fail.isoformat() + "Z",
                         "summary": f"Xid 79 (GPU {bus} fell off the bus) on {bad_host}; rank {bad_rank} got a CUDA "
                                    f"error, the other ranks' watchdogs fired {timeout_s}s later"},
             "noise": {"count": noise, "slow_rank": slow_rank, "first": min(n["time"] for n in noise_log) if noise_log
                       else None},
             "world_size": world, "hours": hours, "steps": step}
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--hours", type=float, default=5.0)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--step-s", type=float, default=60.0)
    ap.add_argument("--noise", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-progress", action="store_true", help="leave the progress lines out")
    a = ap.parse_args(argv)
    t = generate(a.out, hours=a.hours, nodes=a.nodes, gpus=a.gpus, step_s=a.step_s, noise=a.noise, seed=a.seed,
                 progress=not a.no_progress)
    print(json.dumps(t["verdict"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
