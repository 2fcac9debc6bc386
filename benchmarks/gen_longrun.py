"""Long training runs told as a sequence of attempts, each with its ground truth (issue 27, deliverable 5).

    python benchmarks/gen_longrun.py OUT_DIR --story gpu_fault --seed 3 [--layout torchrun_node] [--size small]
    python benchmarks/gen_longrun.py OUT_DIR --family [--size small] [--seeds 1-3] [--heldout]
    python benchmarks/gen_longrun.py --list [--heldout]

One incident is a directory like sample_logs/*: the log files in the launcher's native layout plus
`truth.json` (the contract of sample_logs/README.md, "Attempts in the answers": attempts in time order
with id/start/end/outcome/boundary and, for failed attempts, verdict {kind, rank, host, pod, gpu}; the
top-level verdict is the last failed attempt's; plus the per-host clock offsets, the story, layout, seed
and the way the story was told). `--family` writes one subdirectory per (story, layout, seed).

A run is 1-7 attempts: training from a checkpoint, a failure (or a preemption, or nothing), a restart by
the launcher's own mechanism, training again from the last checkpoint (the step counter goes back), maybe
the same node failing again. Everything is drawn from random.Random(seed): which node, rank and GPU, when,
how the cascade shows, the clock skew of each host (up to minutes), the noise (IB port flaps that recover,
retried sockets, c10d store reconnects, NCCL WARN noise, a straggler, UserWarnings, process groups that a
live process creates and destroys for evaluation: NOT restarts). UTC, deterministic: the same arguments
give the same bytes.

Stories (the failure of the featured attempt; other attempts fail in other ways or are preempted):
  gpu_fault      Xid 79 / 48 / 94 / 48+64 on one GPU; the owning rank (PCI bus id -> GPU -> rank through
                 NCCL's init lines) gets the CUDA error                                   kind gpu_fault
  host_oom       the kernel's OOM killer kills one rank (or its DataLoader worker)         kind oom
  hang           one rank stops before a collective; the others' watchdogs time out        kind hang
  ib_down        one node's IB port goes down for good; NCCL transport errors, timeouts    kind network_error
  ib_flap        an IB port flaps and recovers: that attempt does not fail              (no failure)
  segfault       SIGSEGV in one rank (exitcode -11)                                        kind crash
  exception      a Python exception in one rank (traceback, exitcode 1)                    kind exception
  node_freeze    every rank of one node goes silent at once                                kind node_failure
  rdzv_missing   after a node froze, the restart's rendezvous times out: it never rejoins   kind rendezvous_timeout

Layouts (each with its own restart mechanism):
  torchrun_node     per-node torchrun console (--tee: '[default3]:' or '[11]:' prefixes), dmesg -T per node;
                    restarts: torchrun --max-restarts (elastic) or a resubmitted job (new files)
  torchrun_logdir   the agent's console per node + torchrun --log-dir per-rank files
                    (<run>/attempt_<restart_count>/<local_rank>/{stdout,stderr}.log); restarts: elastic
  slurm_srun        srun --label output (slurm-<job>.out), slurmctld/slurmd logs, dmesg -T per node;
                    restarts: Slurm requeue (same job id, SLURM_RESTART_COUNT; the output appended, or one
                    file per restart with --output=slurm-%j_%r.out) or a resubmitted job (new job id)
  k8s_cri           Kubeflow PyTorchJob: CRI pod logs (<n>.log per container restart) with torchrun inside,
                    kubelet journal per node, kubectl describe / get events / get pods; restarts: the
                    containers restart (restartPolicy OnFailure)
  pdsh_deepspeed    HELD OUT (see below)

HELD OUT FROM TUNING (the hidden judge uses "a generator you do not have, with stories of these kinds
told differently"; tune the correlator on the rest, look at held-out output only to measure):
  - every seed >= 1000, for every story and layout;
  - the whole layout `pdsh_deepspeed` (the DeepSpeed launcher over pdsh: one console with 'host: '
    prefixes, DeepSpeed's logger, journald kernel logs; restarts: resubmitted jobs);
  - the whole progress/resume telling `megatron` (Megatron-LM's iteration lines printed by the last rank,
    its checkpoint load/save lines);
  - the OOM telling `oom_dataloader` (the kernel kills a DataLoader worker process, whose pid is no rank's;
    the rank then dies of "DataLoader worker (pid ...) is killed by signal: Killed.").
They appear only with --heldout, and --heldout only makes seeds >= 1000. HELDOUT below lists them.

Sizes: small (seconds to ingest; CI property tests), medium (8 nodes, about an hour per attempt, tens of
MB), large (64 ranks, about 6 hours of training, about 1 GB: the `diagnose < 10 s` check).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import heapq
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from emit import k8s as K  # noqa: E402
from emit import kernel as KR  # noqa: E402
from emit import nccl as N  # noqa: E402
from emit import progress as P  # noqa: E402
from emit import slurm as S  # noqa: E402
from emit import timefmt as TF  # noqa: E402
from emit import torch as T  # noqa: E402

STORIES = ("gpu_fault", "host_oom", "hang", "ib_down", "ib_flap", "segfault", "exception", "node_freeze",
           "rdzv_missing")
KIND = {"gpu_fault": "gpu_fault", "host_oom": "oom", "hang": "hang", "ib_down": "network_error", "segfault": "crash",
        "exception": "exception", "node_freeze": "node_failure", "rdzv_missing": "rendezvous_timeout"}
LAYOUTS = ("torchrun_node", "torchrun_logdir", "slurm_srun", "k8s_cri", "pdsh_deepspeed")
MECHANISMS = {"torchrun_node": ("elastic", "resubmit"), "torchrun_logdir": ("elastic",),
              "slurm_srun": ("requeue", "resubmit"), "k8s_cri": ("pod_restart",), "pdsh_deepspeed": ("resubmit",)}
PROGRESS = {"torchrun_node": ("pylog", "plain", "hf", "lightning", "titan", "deepspeed"),
            "torchrun_logdir": ("pylog", "hf", "titan", "deepspeed", "lightning"),
            "slurm_srun": ("pylog", "titan", "hf", "deepspeed"),
            "k8s_cri": ("pylog", "hf", "titan", "lightning"),
            "pdsh_deepspeed": ("deepspeed",)}
# stories a layout cannot tell: a re-rendezvous needs torchrun's rendezvous across restarts
UNTOLD = {"slurm_srun": {"rdzv_missing"}, "pdsh_deepspeed": {"rdzv_missing"}}

HELDOUT_SEED_MIN = 1000
HELDOUT = {"seeds": f">= {HELDOUT_SEED_MIN}", "layouts": ["pdsh_deepspeed"], "progress": ["megatron"],
           "tellings": ["oom_dataloader"]}
HELDOUT_PROGRESS_ADD = {"torchrun_node": ("megatron",), "torchrun_logdir": ("megatron",), "slurm_srun": ("megatron",),
                        "k8s_cri": ("megatron",), "pdsh_deepspeed": ("megatron",)}

SIZES = {
    # nodes, gpus per node, minutes of training per attempt, step seconds, log every n steps,
    # restarts before / after the featured failure, NCCL watchdog timeouts (s)
    "small": dict(nodes=(2, 3), gpus=(2, 4), minutes=(3, 8), step_s=(1.0, 4.0), log_every=1, before=(0, 2),
                  after=(0, 1), timeouts=(60, 120, 300), noise_per_hour=60),
    "medium": dict(nodes=(4, 8), gpus=(4, 8), minutes=(20, 60), step_s=(0.6, 2.0), log_every=1, before=(0, 3),
                   after=(0, 2), timeouts=(300, 600, 1800), noise_per_hour=120),
    "large": dict(nodes=(16, 16), gpus=(8, 8), minutes=(90, 130), step_s=(0.22, 0.28), log_every=1, before=(1, 3),
                  after=(0, 2), timeouts=(600, 1800), noise_per_hour=200),
}

T0 = dt.datetime(2026, 3, 2, 1, 0, 0)
ENTRY = "/workspace/train.py"


# ---------------------------------------------------------------------------------------------------------
# The plan: who runs where, each attempt, each failure (pure: only draws from the Random)
# ---------------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Failure:
    story: str
    kind: str
    t: dt.datetime                 # true time of the root event
    host: str
    rank: int | None               # the culprit rank (None: a node-level failure)
    local_rank: int | None = None
    gpu: str | None = None         # PCI id of the GPU (gpu_fault)
    xid: int | None = None
    telling: str = ""              # how this failure shows (variant)
    cascade: str = "watchdog"      # watchdog | remote | rejoin | srun_kill
    exitcode: int | None = None


@dataclasses.dataclass
class Attempt:
    id: int
    hosts: list[str]
    launch: dt.datetime
    step0: int
    steps: list[dt.datetime] = dataclasses.field(default_factory=list)   # time of step step0+1+i (nominal)
    ending: str = "failure"        # failure | cancel | complete | running | rdzv_timeout
    failure: Failure | None = None
    flap: tuple | None = None      # (host, hca, t_down, t_up): the ib_flap story's benign flap
    end: dt.datetime | None = None
    boundary: str = ""
    pids: dict = dataclasses.field(default_factory=dict)         # rank -> worker pid
    agent_pid: dict = dataclasses.field(default_factory=dict)    # host -> agent (torchrun/launcher) pid
    job: int = 0
    restart_count: dict = dataclasses.field(default_factory=dict)  # host -> torchrun restart_count (elastic)
    container_n: int = 0
    comm_id: int = 0
    last_step: int = 0             # the last step every rank completed
    t_stop: dt.datetime | None = None   # when progress stops (failure or end)
    exits: list = dataclasses.field(default_factory=list)       # (t, rank, exitcode, reason)
    cancel_reason: str = ""


class Run:
    """Everything about one incident, drawn from random.Random(seed)."""

    def __init__(self, story: str, layout: str, seed: int, size: str = "small", heldout: bool = False,
                 mechanism: str | None = None, progress: str | None = None):
        if story not in STORIES:
            raise SystemExit(f"gen_longrun: unknown story {story!r}; choose one of {', '.join(STORIES)}")
        if layout not in LAYOUTS:
            raise SystemExit(f"gen_longrun: unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
        if story in UNTOLD.get(layout, ()):
            raise SystemExit(f"gen_longrun: the layout {layout} cannot tell the story {story} (it has no "
                             "re-rendezvous); pick a torchrun or k8s layout")
        if (seed >= HELDOUT_SEED_MIN or layout == "pdsh_deepspeed" or progress == "megatron") and not heldout:
            raise SystemExit(f"gen_longrun: seed {seed} / layout {layout} / progress {progress} is HELD OUT from "
                             "tuning; pass --heldout to generate it (to measure, never to tune)")
        if heldout and seed < HELDOUT_SEED_MIN:
            raise SystemExit(f"gen_longrun: --heldout takes seeds >= {HELDOUT_SEED_MIN} (got {seed})")
        self.story, self.layout, self.seed, self.size, self.heldout = story, layout, seed, size, heldout
        self.rnd = rnd = random.Random(f"gen_longrun:{story}:{layout}:{seed}:{size}")
        z = SIZES[size]
        self.z = z
        self.mechanism = mechanism or rnd.choice(MECHANISMS[layout])
        if self.mechanism not in MECHANISMS[layout]:
            raise SystemExit(f"gen_longrun: layout {layout} restarts by {MECHANISMS[layout]}, not {self.mechanism}")
        styles = PROGRESS[layout] + (HELDOUT_PROGRESS_ADD[layout] if heldout else ())
        if size == "large":
            # the large size is for the diagnose-time check: every rank prints progress (about 1 GB)
            styles = tuple(x for x in styles if P.STYLES[x].ranks == "all") or styles
        self.progress = progress or rnd.choice(styles)
        self.nnodes = rnd.randint(*z["nodes"])
        self.gpus = rnd.choice([g for g in (2, 4, 8) if z["gpus"][0] <= g <= z["gpus"][1]])
        self.world = self.nnodes * self.gpus
        naming = rnd.choice([("node", 2), ("gpu-a", 3), ("trn-node", 2), ("dgx-h100-", 3), ("cn", 4)])
        base = rnd.randint(1, 40)
        pool = [f"{naming[0]}{base + i:0{naming[1]}d}" for i in range(self.nnodes + 4)]
        if layout == "k8s_cri":
            pool = [f"gke-a3-pool-{rnd.getrandbits(16):04x}-{i}" for i in range(self.nnodes + 4)]
        self.pool = pool          # the first nnodes run; the others are spares a requeue / resubmit may use
        self.ip = {h: f"10.{rnd.randint(1, 250)}.{i // 200}.{10 + i % 200}" for i, h in enumerate(pool)}
        max_skew = rnd.choice([0.5, 5.0, 40.0, 180.0])
        self.offsets = {h: round(rnd.uniform(-max_skew, max_skew), 3) for h in pool}
        self.offsets["slurmctld"] = round(rnd.uniform(-2, 2), 3)
        self.offsets["control-plane"] = round(rnd.uniform(-2, 2), 3)
        # each node: physical GPU -> PCI bus, and local rank -> physical GPU (CUDA_VISIBLE_DEVICES order)
        buses = rnd.choice([[0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb], [0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd],
                            [0x1b, 0x43, 0x52, 0x61, 0x9d, 0xc3, 0xd1, 0xdf]])
        self.bus = {h: buses[:self.gpus] if self.gpus == 8 else sorted(rnd.sample(buses, self.gpus)) for h in pool}
        self.phys = {}
        for h in pool:
            order = list(range(self.gpus))
            if rnd.random() < 0.4:
                rnd.shuffle(order)
            self.phys[h] = order
        self.pg_style = rnd.choice(["2.4", "2.6"])
        self.site = rnd.choice(T.SITE_PACKAGES)
        self.binary = self.site.split("/lib/")[0] + "/bin/python" + ("3.11" if "3.11" in self.site else "3.10")
        self.timeout_s = rnd.choice(z["timeouts"])
        self.prefix = rnd.choice(["default", "default", "rank"])     # torchrun --tee prefix template
        self.run_id = rnd.choice(["none", f"llm-{rnd.randint(1, 99)}b-pt", f"job-{rnd.getrandbits(24):06x}"])
        self.master_port = rnd.choice([29500, 29400, 23456])
        self.max_restarts = rnd.choice([3, 5, 10, 100])
        self.ns = rnd.choice(["ml-train", "research", "pretrain"])
        self.jobname = rnd.choice(["llm-pretrain", "gpt-moe", "vit-huge"])
        self.first_job = rnd.randint(10000, 990000)
        self.slurm_open = rnd.choice(["append", "per_restart"])     # requeue: one output or one per restart
        self.kill_on_bad_exit = rnd.random() < 0.5
        self.dmesg_form = rnd.choice(["ctime", "journal"])
        self.ckpt_dir = rnd.choice(["/checkpoints/run7", "/lustre/ckpt/exp42", "/mnt/ckpt"])
        self.total_steps = 10 ** 6
        self.per_epoch = rnd.choice([500, 1000, 2500])
        self.attempts = self._plan()

    # --- the plan -------------------------------------------------------------------------------------
    def _story_of_other(self) -> str:
        """A failure for an attempt other than the featured one. Under elastic and pod restarts a frozen node
        ends the run (the group cannot assemble again), so it is not drawn there."""
        exclude = {"ib_flap", "rdzv_missing"} | UNTOLD.get(self.layout, set())
        if self.mechanism in ("elastic", "pod_restart"):
            exclude.add("node_freeze")
        return self.rnd.choice([s for s in STORIES if s not in exclude])

    def _endings(self) -> tuple[list[tuple[str, str | None]], int]:
        """Each attempt's ending (failure | cancel | flap | rdzv_timeout | running | complete) and its story;
        the index of the featured attempt."""
        rnd, z = self.rnd, self.z
        before = rnd.randint(*z["before"])
        after = rnd.randint(*z["after"])
        endings: list[tuple[str, str | None]] = []
        for _ in range(before):
            if self.mechanism in ("requeue", "resubmit") and rnd.random() < 0.3:
                endings.append(("cancel", None))
            else:
                endings.append(("failure", self._story_of_other()))
        if self.story == "rdzv_missing":
            endings += [("failure", "node_freeze"), ("rdzv_timeout", "rdzv_missing")]
            return endings, len(endings) - 1
        if self.story == "ib_flap":
            endings.append((rnd.choice(["running", "complete"]), None))
            return endings, len(endings) - 1
        endings.append(("failure", self.story))
        featured = len(endings) - 1
        if self.story == "node_freeze" and self.mechanism in ("elastic", "pod_restart"):
            return endings, featured          # no restart assembles the group again: the run ends here
        for _ in range(after):
            same = rnd.random() < 0.4
            endings.append(("failure", self.story if same else self._story_of_other()))
        last = rnd.choice(["running", "complete", "final"])
        if last != "final":
            endings.append((last, None))
        return endings, featured

    def _plan(self) -> list[Attempt]:
        rnd, z = self.rnd, self.z
        endings, self.featured = self._endings()
        flap_idx = self.featured if self.story == "ib_flap" else None

        attempts = []
        t = T0 + dt.timedelta(seconds=rnd.randint(0, 3000))
        step = 0
        hosts = self.pool[:self.nnodes]
        spare = list(self.pool[self.nnodes:])
        job = self.first_job
        node_base = {h: rnd.randint(20000, 90000) for h in self.pool}
        pid_next = dict(node_base)
        recur: dict | None = None
        for i, (ending, story) in enumerate(endings):
            a = Attempt(id=i + 1, hosts=list(hosts), launch=t, step0=step, ending=ending)
            a.comm_id = rnd.getrandbits(64)
            # pids: a new process per rank per attempt (k8s: a new container, so pids start low again)
            for h_i, h in enumerate(a.hosts):
                if self.layout == "k8s_cri":
                    a.agent_pid[h] = 1 if rnd.random() < 0.5 else 7
                    wp = 40 + rnd.randint(0, 20)
                else:
                    if self.mechanism == "elastic" and i > 0 and h in attempts[-1].agent_pid:
                        a.agent_pid[h] = attempts[-1].agent_pid[h]
                    else:
                        pid_next[h] += rnd.randint(50, 900)
                        a.agent_pid[h] = pid_next[h]
                    pid_next[h] += rnd.randint(30, 400)
                    wp = pid_next[h]
                for lr in range(self.gpus):
                    wp += rnd.randint(1, 4) + (6 if self.layout == "k8s_cri" else 0)
                    a.pids[h_i * self.gpus + lr] = wp
                if self.layout != "k8s_cri":
                    pid_next[h] = max(a.pids.values()) + rnd.randint(100, 3000)
            if self.mechanism in ("requeue",):
                a.job = self.first_job
            elif self.mechanism == "resubmit":
                a.job = job
                job += rnd.randint(1, 400)
            else:
                a.job = self.first_job
            a.container_n = i
            # timeline of the attempt: launch -> rendezvous -> workers up -> training
            rdzv = rnd.uniform(1.5, 25.0) if i == 0 else rnd.uniform(0.5, 8.0)
            up = rnd.uniform(6.0, 25.0)
            load = rnd.uniform(10.0, 40.0) if step > 0 else rnd.uniform(7.0, 12.0)   # after NCCL init (<= 5.5 s)
            a.rdzv_done = t + dt.timedelta(seconds=rdzv)
            a.workers_up = a.rdzv_done + dt.timedelta(seconds=up)
            train_start = a.workers_up + dt.timedelta(seconds=load)
            minutes = rnd.uniform(*z["minutes"])
            if ending == "rdzv_timeout":
                minutes = 0
            step_s = rnd.uniform(*z["step_s"])
            a.step_s = step_s
            n_steps = max(0, int(minutes * 60 / step_s))
            # a straggler window slows every rank (they wait in the collective for the slow one)
            slow = None
            if n_steps > 50 and rnd.random() < 0.6:
                s0 = rnd.randint(n_steps // 5, n_steps // 2)
                slow = (s0, s0 + rnd.randint(5, max(6, n_steps // 12)), rnd.uniform(3.0, 12.0))
            a.slow = slow
            a.slow_rank = rnd.randrange(self.world)
            times, cur = [], train_start
            for k in range(n_steps):
                d = step_s * (slow[2] if slow and slow[0] <= k < slow[1] else 1.0) * rnd.uniform(0.97, 1.03)
                cur = cur + dt.timedelta(seconds=d)
                times.append(cur)
            a.steps = times
            a.ckpt_every = max(10, int(rnd.choice([5, 10, 15, 30]) * 60 / step_s)) if self.size != "small" else \
                max(5, int(rnd.uniform(40, 120) / step_s))
            if ending == "rdzv_timeout":
                a.train_start = None
            else:
                a.train_start = train_start
            # the failure: somewhere after a third of the training, not in the last step
            if ending in ("failure",):
                k_fail = rnd.randint(max(1, n_steps // 3), max(1, n_steps - 2)) if n_steps > 3 else max(0, n_steps - 1)
                t_fail = times[k_fail] + dt.timedelta(seconds=rnd.uniform(0.05, 0.9) * step_s) if times else train_start
                f = self._failure(story, a, t_fail, recur if recur and recur["story"] == story else None)
                a.failure = f
                a.last_step = step + k_fail + 1
                a.t_stop = t_fail
                recur = {"story": story, "host": f.host, "rank": f.rank, "local_rank": f.local_rank}
            elif ending == "cancel":
                k_c = rnd.randint(max(1, n_steps // 2), max(1, n_steps - 1)) if n_steps > 2 else max(0, n_steps - 1)
                a.t_stop = times[k_c] + dt.timedelta(seconds=0.3 * step_s) if times else train_start
                a.last_step = step + k_c + 1
                a.cancel_reason = "PREEMPTION" if self.mechanism == "requeue" else "SIGTERM"
            elif ending == "rdzv_timeout":
                prev = attempts[-1]
                missing = prev.failure.host if prev.failure else a.hosts[-1]
                a.failure = Failure(story="rdzv_missing", kind="rendezvous_timeout", t=t, host=missing, rank=None,
                                    telling="join_timeout")
                a.last_step = step
                a.t_stop = t
            elif ending in ("running", "complete", "flap"):
                a.last_step = step + n_steps
                a.t_stop = times[-1] if times else train_start
            if i == flap_idx or (ending == "flap"):
                hf = rnd.choice(a.hosts)
                lr = rnd.randrange(self.gpus)
                t_down = times[len(times) // 2] if times else train_start
                a.flap = (hf, lr, t_down, t_down + dt.timedelta(seconds=rnd.uniform(0.5, 40)))
            attempts.append(a)
            # the next attempt resumes from the last checkpoint at or before the last completed step
            done = a.last_step
            ck = step + ((done - step) // a.ckpt_every) * a.ckpt_every
            a.ckpt_steps = list(range(step + a.ckpt_every, done + 1, a.ckpt_every))
            step = ck
            # restart delay and node set of the next attempt
            gap = {"elastic": rnd.uniform(0.2, 3.0), "pod_restart": rnd.uniform(10, 45),
                   "requeue": rnd.uniform(30, 240), "resubmit": rnd.uniform(120, 2400)}[self.mechanism]
            t_end_est = self._end_estimate(a)
            a.end_est = t_end_est
            t = t_end_est + dt.timedelta(seconds=gap)
            nxt_rdzv = i + 1 < len(endings) and endings[i + 1][0] == "rdzv_timeout"
            if a.failure and a.failure.story == "node_freeze" and self.mechanism in ("requeue", "resubmit") and spare \
                    and not nxt_rdzv:
                hosts = [spare.pop(0) if h == a.failure.host else h for h in hosts]
        self.attempts = attempts
        if self.mechanism == "elastic":
            self._elastic_counters()
        return attempts

    def _end_estimate(self, a: Attempt) -> dt.datetime:
        """When the last process of the attempt ends (the renderer fills a.end exactly; this places the next
        attempt)."""
        f = a.failure
        if a.ending in ("running",):
            return a.t_stop + dt.timedelta(seconds=30)
        if a.ending == "complete":
            return a.t_stop + dt.timedelta(seconds=8)
        if a.ending == "cancel":
            return a.t_stop + dt.timedelta(seconds=6)
        if a.ending == "rdzv_timeout":
            return a.launch + dt.timedelta(seconds=self.join_timeout + 3)
        if f.cascade in ("watchdog",):
            return f.t_watchdog + dt.timedelta(seconds=8)
        if f.cascade == "remote":
            return f.t_remote_last + dt.timedelta(seconds=6)
        return f.t + dt.timedelta(seconds=8)

    @property
    def join_timeout(self) -> int:
        return 600 if self.size != "small" else 120

    def _failure(self, story: str, a: Attempt, t: dt.datetime, recur: dict | None) -> Failure:
        rnd = self.rnd
        if recur and rnd.random() < 0.85 and recur["host"] in a.hosts:
            host = recur["host"]
            lr = recur["local_rank"] if recur["local_rank"] is not None else rnd.randrange(self.gpus)
        else:
            host = rnd.choice(a.hosts)
            lr = rnd.randrange(self.gpus)
        rank = a.hosts.index(host) * self.gpus + lr
        f = Failure(story=story, kind=KIND[story], t=t, host=host, rank=rank, local_rank=lr)
        # how the cascade shows on the other ranks
        if story in ("hang", "node_freeze"):
            f.cascade = "watchdog"
        elif story == "ib_down":
            f.cascade = rnd.choice(["remote", "watchdog"])
        elif self.mechanism == "elastic":
            f.cascade = "rejoin" if rnd.random() < 0.7 else rnd.choice(["watchdog", "remote"])
        elif self.layout == "slurm_srun" and self.kill_on_bad_exit:
            f.cascade = "srun_kill"
        else:
            f.cascade = rnd.choice(["watchdog", "remote"])
        if story == "gpu_fault":
            f.xid = rnd.choice([79, 79, 48, 94, 64])
            f.gpu = KR.pci(self.bus[host][self.phys[host][lr]]) + ".0"
            f.telling = rnd.choice(["exception", "watchdog_abort"]) if f.xid != 79 else rnd.choice(
                ["exception", "watchdog_abort", "nccl_cuda"])
            f.exitcode = 1 if f.telling == "exception" else -6
        elif story == "host_oom":
            tellings = ["oom_rank"] + (["oom_dataloader"] if self.heldout else [])
            f.telling = rnd.choice(tellings)
            f.exitcode = -9 if f.telling == "oom_rank" else 1
        elif story == "hang":
            f.telling = rnd.choice(["before_collective", "in_dataloader"])
            f.exitcode = -15
        elif story == "ib_down":
            f.rank = None
            f.telling = "port_down"
            f.hca_port = lr
        elif story == "segfault":
            f.telling = rnd.choice(["faulthandler", "silent", "kernel"])
            f.exitcode = -11
        elif story == "exception":
            f.telling = rnd.choice(["ValueError", "RuntimeError", "FileNotFoundError", "AssertionError", "KeyError"])
            f.exitcode = 1
        elif story == "node_freeze":
            f.rank = None
            f.local_rank = None
            f.telling = rnd.choice(["silent", "soft_lockup"])
        # the cascade's times
        f.t_watchdog = f.t + dt.timedelta(seconds=self.timeout_s + rnd.uniform(0.2, 3.0))
        f.t_remote_last = f.t + dt.timedelta(seconds=rnd.uniform(8.0, 45.0))
        return f

    def _place(self, f: Failure, a: Attempt, host: str) -> None:
        """Move a failure to another node (same local rank)."""
        f.host = host
        if f.rank is not None:
            f.rank = a.hosts.index(host) * self.gpus + f.local_rank
        if f.gpu is not None:
            f.gpu = KR.pci(self.bus[host][self.phys[host][f.local_rank]]) + ".0"

    def _elastic_counters(self) -> None:
        """torchrun's restart budget is per agent: an agent decrements it when its own workers fail, not when
        it restarts because another node came back to the rendezvous ('Detected N new nodes'). Choose
        --max-restarts and the last failure's node so that the run ends as planned: a run that ends failed
        ends when the culprit's agent has no restart left (agents with some left find the rendezvous
        closed); a run that goes on always had one left."""
        atts = self.attempts
        last = atts[-1]
        final = last.ending == "failure"
        if final and last.failure.story == "node_freeze":
            for a in atts[:-1]:
                if a.failure and a.failure.cascade == "rejoin":
                    a.failure.cascade = self.rnd.choice(["watchdog", "remote"])
        if final and last.failure.cascade == "rejoin":
            last.failure.cascade = self.rnd.choice(["watchdog", "remote"])
        dec = {h: 0 for h in self.pool}
        for a in (atts[:-1] if final else atts):
            f = a.failure
            if a.ending != "failure" or f is None:
                continue
            if f.cascade == "rejoin":
                dec[f.host] += 1
            else:
                for h in a.hosts:
                    if not (f.story == "node_freeze" and h == f.host):
                        dec[h] += 1
        top = max(dec[h] for h in last.hosts)
        if final:
            self.max_restarts = top
            if dec[last.failure.host] != top:
                self._place(last.failure, last, self.rnd.choice([h for h in last.hosts if dec[h] == top]))
        else:
            self.max_restarts = max(self.max_restarts, top + 1)


# ---------------------------------------------------------------------------------------------------------
# The output: files of lines, each line with the true time it was written (files are written in that order)
# ---------------------------------------------------------------------------------------------------------

class Sink:
    def __init__(self):
        self.sparse: dict[str, list] = {}
        self.bulk: dict[str, list] = {}
        self.k = 0
        self.hosts_of: dict[str, str] = {}

    def add(self, path: str, t: dt.datetime, text: str) -> None:
        self.k += 1
        self.sparse.setdefault(path, []).append((t, self.k, text))

    def add_block(self, path: str, t: dt.datetime, lines: list[str]) -> None:
        for x in lines:
            self.add(path, t, x)

    def add_bulk(self, path: str, gen_fn) -> None:
        """gen_fn() yields (t, k, text) in time order; k >= 10**12 keeps bulk lines after sparse lines of the
        same instant."""
        self.bulk.setdefault(path, []).append(gen_fn)

    def write(self, out: Path) -> dict:
        sizes = {}
        for path in sorted(set(self.sparse) | set(self.bulk)):
            sp = sorted(self.sparse.get(path, []), key=lambda x: (x[0], x[1]))
            its = [iter(sp)] + [g() for g in self.bulk.get(path, [])]
            p = out / path
            p.parent.mkdir(parents=True, exist_ok=True)
            n = 0
            with open(p, "w", encoding="utf-8", newline="\n") as fh:
                buf = []
                for _, _, text in heapq.merge(*its, key=lambda x: (x[0], x[1])):
                    buf.append(text)
                    if len(buf) >= 4096:
                        fh.write("\n".join(buf) + "\n")
                        n += len(buf)
                        buf = []
                if buf:
                    fh.write("\n".join(buf) + "\n")
                    n += len(buf)
            sizes[path] = n
        return sizes


# ---------------------------------------------------------------------------------------------------------
# Rendering: the plan told as log lines
# ---------------------------------------------------------------------------------------------------------

BULK = 10 ** 12


def stable_token(*parts) -> str:
    """8 characters like tempfile's, from the parts (hash() is salted per process: never for output)."""
    d = hashlib.sha256(repr(parts).encode()).digest()
    return "".join("abcdefghijklmnopqrstuvwxyz0123456789_"[b % 37] for b in d[:8])
EXC = {
    "ValueError": ("ValueError: Expected input batch_size (16) to match target batch_size (8).",
                   "    loss = criterion(logits.view(-1, logits.size(-1)), labels.view(-1))"),
    "RuntimeError": ("RuntimeError: stack expects each tensor to be equal size, but got [3, 224, 224] at entry 0 and "
                     "[1, 224, 224] at entry 5", "    batch = next(data_iter)"),
    "FileNotFoundError": ("FileNotFoundError: [Errno 2] No such file or directory: '/data/shards/shard_00412.bin'",
                          "    batch = next(data_iter)"),
    "AssertionError": ("AssertionError: loss is nan", "    assert torch.isfinite(loss), \"loss is nan\""),
    "KeyError": ("KeyError: 'input_ids'", "    input_ids = batch[\"input_ids\"].cuda(non_blocking=True)"),
}


class Render:
    """Base: what every launcher shares (workers' NCCL init, progress, stories, cascades). Subclasses route
    lines to files and tell the launcher's own part (launch, teardown, restart)."""

    kernel_form = None             # 'ctime' (dmesg -T files) or 'journal' (journalctl files); set per layout

    def __init__(self, run: Run):
        self.r = run
        self.s = Sink()
        self.style = P.STYLES[run.progress](run.ckpt_dir, run.total_steps, run.per_epoch)
        self.loss0 = run.rnd.uniform(2.2, 3.4)
        self.eval_groups = run.rnd.random() < 0.7
        self.pg_init_lines = run.rnd.random() < 0.5
        self.op = run.rnd.choice(["ALLREDUCE", "ALLREDUCE", "_REDUCE_SCATTER_BASE", "_ALLGATHER_BASE"])
        self.numel = run.rnd.choice([1048576, 9801523, 25690112, 195004416])
        self.colls = run.rnd.randint(2, 30)
        self.noise_log: list[dict] = []

    # --- helpers ----------------------------------------------------------------------------------------
    def lt(self, host: str, t: dt.datetime) -> dt.datetime:
        """The time as `host`'s clock shows it."""
        return t + dt.timedelta(seconds=self.r.offsets[host])

    def host(self, a: Attempt, rank: int) -> str:
        return a.hosts[rank // self.r.gpus]

    def dev(self, a: Attempt, rank: int) -> int:
        return rank % self.r.gpus

    def bus(self, a, rank) -> int:
        h = self.host(a, rank)
        return self.r.bus[h][self.r.phys[h][rank % self.r.gpus]]

    def loss(self, step: int) -> float:
        return self.loss0 / (1 + step / 3000) + 0.05 * ((step * 7919) % 13) / 13

    def step_time(self, a: Attempt, i: int) -> dt.datetime:
        return a.steps[i]

    def ranks(self):
        return range(self.r.world)

    # --- routing (subclasses) ---------------------------------------------------------------------------
    def route(self, a: Attempt, rank: int, out: bool = False):
        """(path, wrap) for a worker's line: wrap(t_true, text) gives the line as the file holds it."""
        raise NotImplementedError

    def worker(self, a, rank, t, text, out=False):
        path, wrap = self.route(a, rank, out)
        self.s.add(path, t, wrap(t, text))

    def worker_block(self, a, rank, t, lines, out=False):
        path, wrap = self.route(a, rank, out)
        for x in lines:
            self.s.add(path, t, wrap(t, x))

    def kernel(self, host, t, msg):
        L = self.lt(host, t)
        if self.kernel_form == "journal" or (self.kernel_form is None and self.r.dmesg_form == "journal"):
            self.s.add(f"journal/{host}.log", t, K.journal(L, host, "kernel", None, msg))
        else:
            self.s.add(f"dmesg/{host}.txt", t, f"[{TF.ctime(L)}] {msg}")

    # --- the whole run ----------------------------------------------------------------------------------
    def render(self) -> None:
        atts = self.r.attempts
        for i, a in enumerate(atts):
            nxt = atts[i + 1] if i + 1 < len(atts) else None
            self.launch(a)
            if a.ending != "rdzv_timeout":
                self.workers_start(a)
                self.training(a)
            exits = self.story(a)
            self.teardown(a, exits, nxt)
            if nxt is not None and a.end > nxt.launch:
                # one node's teardown can overlap another node's rejoin by seconds (elastic): the attempt
                # ends where the next one begins
                a.end = nxt.launch
        self.noise()
        self.finish()

    # --- workers: init, progress ------------------------------------------------------------------------
    def cuda_dev(self, a, rank) -> int:
        return rank % self.r.gpus

    def workers_start(self, a: Attempt) -> None:
        r, rnd = self.r, self.r.rnd
        for rank in self.ranks():
            h = self.host(a, rank)
            pid = a.pids[rank]
            t = a.workers_up + dt.timedelta(seconds=rnd.uniform(0, 3.0))
            L = self.lt(h, t)
            dev = self.cuda_dev(a, rank)
            if rnd.random() < 0.08:
                self.worker(a, rank, t - dt.timedelta(seconds=1.1), T.store_connect_retry(self.lt(h, t - dt.timedelta(seconds=1.1)), self.master(a), r.master_port))
                self.noise_log.append({"time": TF.z(t), "kind": "store_retry", "rank": rank})
            self.worker(a, rank, t, T.store_connected(L, r.ip[a.hosts[0]], r.master_port, 3 + rank % 5, 40000 + rank))
            t1 = t + dt.timedelta(seconds=rnd.uniform(0.5, 2.5))
            L1 = self.lt(h, t1)
            if rank == 0:
                self.worker(a, rank, t1, N.version(h, pid, dev))
            self.worker(a, rank, t1, N.ib_using(h, pid, pid + 7, dev, r.gpus, "ibp12s0", r.ip[h]))
            if rnd.random() < 0.1:
                self.worker(a, rank, t1, N.plugin_missing(h, pid, pid + 3, dev))
            self.worker(a, rank, t1, N.init_complete(h, pid, pid + 7, dev, 0x55d0c0000000 + rank * 0x1000 + a.id,
                                                     rank, r.world, r.phys[h][rank % r.gpus], self.bus(a, rank), a.comm_id))
            if self.pg_init_lines:
                self.worker(a, rank, t1 + dt.timedelta(milliseconds=3), T.pg_init_options(rank, L1, r.world, rank))
        # the framework: fresh start or resume from the checkpoint
        t = a.workers_up + dt.timedelta(seconds=rnd.uniform(5.6, 6.5))
        lines = self.style.resume(self.lt(self.host(a, 0), t), a.step0) if a.step0 > 0 else \
            self.style.fresh(self.lt(self.host(a, 0), t))
        who = [0] if self.style.ranks != "all" or self.style.name == "plain" else list(self.ranks())
        if self.style.name == "megatron":
            who = [0]
        for rank in who:
            tl = t + dt.timedelta(milliseconds=37 * rank)
            if rank:
                lines = self.style.resume(self.lt(self.host(a, rank), tl), a.step0) if a.step0 > 0 else \
                    self.style.fresh(self.lt(self.host(a, rank), tl))
            for d, x in lines:
                self.worker(a, rank, tl + dt.timedelta(seconds=d), x, out=True)
        a.resume_line_t = t

    def master(self, a):
        return a.hosts[0]

    def progress_ranks(self):
        if self.style.ranks == "all":
            return list(self.ranks())
        if self.style.ranks == "last":
            return [self.r.world - 1]
        return [0]

    def training(self, a: Attempt) -> None:
        r = self.r
        every = r.z["log_every"]
        n_done = a.last_step - a.step0
        for rank in self.progress_ranks():
            path, wrap = self.route(a, rank, out=True)
            h = self.host(a, rank)
            off = dt.timedelta(seconds=r.offsets[h])
            jit = ((rank * 7919) % 997) / 1000.0 * min(1.0, a.step_s / 3)
            style, loss, steps, step0 = self.style, self.loss, a.steps, a.step0

            def gen(rank=rank, wrap=wrap, off=off, jit=jit):
                for i in range(n_done):
                    k = step0 + i + 1
                    if k % every:
                        continue
                    t = steps[i] + dt.timedelta(seconds=jit + ((k * 31 + rank) % 97) / 1000.0)
                    st = (steps[i] - steps[i - 1]).total_seconds() if i else a.step_s
                    yield (t, BULK + rank * 10 ** 9 + i, wrap(t, style.step(t + off, k, loss(k), st)))
            self.s.add_bulk(path, gen)
        # checkpoints (rank 0), evaluation sub-groups (every rank; the same processes), a straggler
        for k in a.ckpt_steps:
            t = a.steps[k - a.step0 - 1] + dt.timedelta(seconds=0.4)
            for d, x in self.style.save(self.lt(self.host(a, 0), t), k):
                self.worker(a, 0, t + dt.timedelta(seconds=d), x, out=True)
        if self.eval_groups and n_done > 20:
            evals = [a.step0 + n_done * j // 4 for j in (1, 2, 3)]
            for j, k in enumerate(evals):
                t = a.steps[k - a.step0 - 1] + dt.timedelta(seconds=1.0)
                t_end = t + dt.timedelta(seconds=min(60.0, 5 + a.step_s * 3))
                half = r.world // 2 if r.world > 2 else r.world
                for rank in self.ranks():
                    h = self.host(a, rank)
                    pid, dev = a.pids[rank], self.cuda_dev(a, rank)
                    comm = 0x7f3a00000000 + rank * 0x10000 + j * 0x100 + a.id
                    sub_rank, sub_n = (rank % half, half) if half != r.world else (rank, r.world)
                    self.worker(a, rank, t, N.split_complete(h, pid, pid + 7, dev, comm, sub_rank, sub_n,
                                                             r.phys[h][rank % r.gpus], self.bus(a, rank),
                                                             0x55d0c0000000 + rank * 0x1000 + a.id, j + 1, rank // half, rank))
                    if self.pg_init_lines:
                        self.worker(a, rank, t, T.pg_init_options(sub_rank, self.lt(h, t), sub_n, rank, pg=j + 1,
                                                                  guid=f"{j + 1}"))
                    self.worker(a, rank, t_end, N.destroy_complete(h, pid, pid + 7, dev, comm, sub_rank, sub_n,
                                                                   self.bus(a, rank)))
                self.noise_log.append({"time": TF.z(t), "kind": "eval_subgroup", "step": k})
        if a.slow and a.slow[1] < n_done:
            k = a.step0 + a.slow[1]
            t = a.steps[a.slow[1] - 1] + dt.timedelta(seconds=0.2)
            rank = a.slow_rank
            took = sum((a.steps[i] - a.steps[i - 1]).total_seconds() for i in range(max(1, a.slow[0]), a.slow[1]))
            self.worker(a, rank, t, f"{TF.py(self.lt(self.host(a, rank), t))} - WARNING - train - steps "
                                    f"{a.step0 + a.slow[0]}-{k} took {took:.1f}s, {a.slow[2]:.1f}x the median: "
                                    "dataloader stall", out=True)
            self.noise_log.append({"time": TF.z(t), "kind": "straggler", "rank": rank})

    # --- the story of one attempt: the root cause and its cascade --------------------------------------
    def seq_at(self, a: Attempt) -> tuple[int, int]:
        """(the SeqNum of the collective that never completes, how far the others enqueued)."""
        rnd = self.r.rnd
        s = 3 + (a.last_step - a.step0) * self.colls + rnd.randint(1, self.colls)
        return s, s + rnd.randint(0, 3)

    def story(self, a: Attempt) -> dict:
        """Lines of the failure and of every other rank's fate; returns rank -> (t_exit, exitcode, why) or
        None (still alive: the launcher stops it), for every rank whose process ends in this attempt."""
        f = a.failure
        if a.ending in ("running", "complete", "cancel") or f is None:
            if a.flap:
                self.flap(a, *a.flap)
            return {}
        if f.story == "rdzv_missing":
            return {}
        getattr(self, "story_" + f.story)(a, f)
        exits = dict(getattr(f, "exits", {}))
        self.cascade(a, f, exits)
        return exits

    def tb(self, a, rank, t, exc_lines: list[str], code_line: str) -> None:
        site = self.r.site
        frames = [(ENTRY, 412, "<module>", "main()"),
                  (f"{site}/torch/distributed/elastic/multiprocessing/errors/__init__.py", 367, "wrapper",
                   "return f(*args, **kwargs)"),
                  (ENTRY, 318, "main", "train_one_epoch(model, loader, optimizer, step)"),
                  (ENTRY, 251, "train_one_epoch", code_line.strip())]
        self.worker_block(a, rank, t, T.traceback(rank, frames, exc_lines[0]) +
                          [f"[rank{rank}]: {x}" for x in exc_lines[1:]])

    def story_gpu_fault(self, a, f):
        h, rank, pid = f.host, f.rank, a.pids[f.rank]
        bus = self.bus(a, rank)
        if f.xid == 64:
            self.kernel(h, f.t - dt.timedelta(milliseconds=40), KR.xid_report(bus, 48, pid, "python")[0])
        for x in KR.xid_report(bus, f.xid, pid, "python"):
            self.kernel(h, f.t, x)
        err = KR.CUDA_ERROR[f.xid]
        tc = f.t + dt.timedelta(seconds=self.r.rnd.uniform(0.3, 2.5))
        if f.telling == "exception":
            self.tb(a, rank, tc, [f"RuntimeError: CUDA error: {err}",
                                  "CUDA kernel errors might be asynchronously reported at some other API call, so the "
                                  "stacktrace below might be incorrect.",
                                  "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                                  "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", ""],
                    "loss.backward()")
        elif f.telling == "nccl_cuda":
            self.worker(a, rank, tc, N.cuda_failure(h, pid, pid + 9, self.cuda_dev(a, rank), err))
            self.worker(a, rank, tc, T.watchdog_cuda_error(rank, self.lt(h, tc), err, self.r.pg_style))
        else:
            self.worker(a, rank, tc, T.watchdog_cuda_error(rank, self.lt(h, tc), err, self.r.pg_style))
            self.worker_block(a, rank, tc, T.terminate_block(
                f"{T.pg_tag(rank, self.r.pg_style, True)} Process group watchdog thread terminated with exception: "
                f"CUDA error: {err}", self.r.site, T.PG_PROFILES[self.r.pg_style]["terminated"], "ncclCommWatchdog"))
        f.exits = {rank: (tc + dt.timedelta(seconds=0.4), f.exitcode, "gpu")}

    def oom_memcg(self, a, rank) -> tuple[str | None, str | None]:
        """(the OOM-killing cgroup, the task's own cgroup) as the kernel's report names them."""
        return None, None

    def story_host_oom(self, a, f):
        h, rank, pid = f.host, f.rank, a.pids[f.rank]
        memcg, task_cg = self.oom_memcg(a, rank)
        if f.telling == "oom_dataloader":
            wpid = pid + 200 + self.r.rnd.randint(1, 90)
            for x in KR.oom_report("python", wpid, 1000, memcg, 98765432, 91234567, task_memcg=task_cg):
                self.kernel(h, f.t, x)
            tc = f.t + dt.timedelta(seconds=self.r.rnd.uniform(0.5, 5.0))
            self.tb(a, rank, tc, [f"RuntimeError: DataLoader worker (pid {wpid}) is killed by signal: Killed. "],
                    "batch = next(data_iter)")
            f.exits = {rank: (tc + dt.timedelta(seconds=0.3), 1, "exception")}
            f.oom_pid = wpid
        else:
            for x in KR.oom_report("python", pid, 1000, memcg, 254123456, 181234567, task_memcg=task_cg):
                self.kernel(h, f.t, x)
            f.exits = {rank: (f.t + dt.timedelta(milliseconds=60), -9, "oom")}
            f.oom_pid = pid

    def story_hang(self, a, f):
        f.exits = {f.rank: None}        # never logs again; stopped by the launcher after the others abort

    def story_segfault(self, a, f):
        h, rank, pid = f.host, f.rank, a.pids[f.rank]
        if f.telling == "faulthandler":
            self.worker_block(a, rank, f.t, T.faulthandler_segv(0x7f91581c2b80 + rank * 0x1000,
                              [(f"{self.r.site}/torch/nn/modules/module.py", 1750, "_call_impl"),
                               (ENTRY, 233, "train_one_epoch"), (ENTRY, 318, "main"), (ENTRY, 412, "<module>")]))
        elif f.telling == "kernel":
            self.kernel(h, f.t, KR.segfault("python", pid, 0x18, 0x7f3a2c1d4e5f, 0x7ffd1a2b3c40, "libnccl.so.2",
                                            0x7f3a2c000000, 0x12000000))
        f.exits = {rank: (f.t + dt.timedelta(milliseconds=80), -11, "segv")}

    def story_exception(self, a, f):
        exc, code = EXC[f.telling]
        tc = f.t
        if self.r.rnd.random() < 0.4:
            self.worker(a, f.rank, tc - dt.timedelta(milliseconds=5),
                        f"{TF.py(self.lt(f.host, tc))} - ERROR - train - {exc}", out=True)
        self.tb(a, f.rank, tc, [exc], code)
        f.exits = {f.rank: (tc + dt.timedelta(seconds=0.6), 1, "exception")}

    def story_node_freeze(self, a, f):
        if f.telling == "soft_lockup":
            pid = a.pids[a.hosts.index(f.host) * self.r.gpus]
            self.kernel(f.host, f.t - dt.timedelta(seconds=self.r.rnd.uniform(20, 60)),
                        f"watchdog: BUG: soft lockup - CPU#{self.r.rnd.randint(0, 95)} stuck for 22s! [python:{pid}]")
        base = a.hosts.index(f.host) * self.r.gpus
        f.exits = {r: "lost" for r in range(base, base + self.r.gpus)}

    def story_ib_down(self, a, f):
        r, rnd = self.r, self.r.rnd
        h = f.host
        base = a.hosts.index(h) * r.gpus
        lr = f.hca_port
        hca = f"mlx5_{lr}"
        # the port goes down: every process on the node that uses the HCA sees the async event
        for rank in range(base, base + r.gpus):
            if rank % r.gpus != lr and rnd.random() < 0.6:
                continue
            pid = a.pids[rank]
            self.worker(a, rank, f.t, N.ib_async(h, pid, pid + 31, self.cuda_dev(a, rank), hca, 1, "port error", 10))
        # work requests to and from the node exhaust their retries
        t_err = f.t + dt.timedelta(seconds=rnd.uniform(4.0, 20.0))
        culprit_rank = base + lr
        peers = sorted({(culprit_rank + r.gpus) % r.world, (culprit_rank - r.gpus) % r.world} - {culprit_rank})
        f.exits = {}
        for rank in [culprit_rank] + peers:
            rh = self.host(a, rank)
            pid = a.pids[rank]
            other = h if rank != culprit_rank else self.host(a, peers[0]) if peers else h
            tt = t_err + dt.timedelta(milliseconds=rnd.randint(0, 900))
            self.worker(a, rank, tt, N.ib_completion_error(rh, pid, pid + 40, self.cuda_dev(a, rank), r.ip[other],
                                                           rnd.randint(32768, 60999), r.ip[rh], f"mlx5_{rank % r.gpus}"))
            self.worker(a, rank, tt, N.net_error_chain(rh, pid, pid + 40, self.cuda_dev(a, rank)))
            seq, _ = self.seq_at(a)
            tr = tt + dt.timedelta(seconds=rnd.uniform(0.5, 3.0))
            self.worker_block(a, rank, tr, T.remote_error_lines(rank, self.lt(rh, tr), seq, self.op, self.numel,
                                                               r.timeout_s * 1000, r.pg_style))
            f.exits[rank] = (tr + dt.timedelta(seconds=0.5), -6, "network")

    def flap(self, a, host, lr, t_down, t_up) -> None:
        """A port error that recovers: every line is a warning the run survives."""
        base = a.hosts.index(host) * self.r.gpus
        for rank in range(base, base + self.r.gpus):
            if rank % self.r.gpus != lr:
                continue
            pid = a.pids[rank]
            d = self.cuda_dev(a, rank)
            self.worker(a, rank, t_down, N.ib_async(host, pid, pid + 31, d, f"mlx5_{lr}", 1, "port error", 10))
            self.worker(a, rank, t_up, N.ib_async(host, pid, pid + 31, d, f"mlx5_{lr}", 1, "port active", 9))
        self.noise_log.append({"time": TF.z(t_down), "kind": "ib_flap_story", "host": host, "recovered": TF.z(t_up)})

    def cascade(self, a: Attempt, f: Failure, exits: dict) -> None:
        """The other ranks' fate."""
        r, rnd = self.r, self.r.rnd
        seq, enq = self.seq_at(a)
        frozen = {k for k, v in exits.items() if v == "lost"}
        for rank in self.ranks():
            if rank in exits:
                continue
            h = self.host(a, rank)
            if f.cascade in ("rejoin", "srun_kill"):
                exits[rank] = None
                continue
            if f.cascade == "remote" and not frozen:
                t = f.t_remote_last - dt.timedelta(seconds=rnd.uniform(0, 6.0))
                self.worker_block(a, rank, t, T.remote_error_lines(rank, self.lt(h, t), seq, self.op, self.numel,
                                                                  r.timeout_s * 1000, r.pg_style))
            else:
                t = f.t_watchdog + dt.timedelta(milliseconds=rnd.randint(0, 400))
                ran = r.timeout_s * 1000 + rnd.randint(3, 2500)
                self.worker_block(a, rank, t, T.watchdog_timeout_lines(rank, self.lt(h, t), seq, enq, self.op,
                                                                      self.numel, r.timeout_s * 1000, ran, r.pg_style))
                if rnd.random() < 0.5:
                    what = (f"[Rank {rank}] Watchdog caught collective operation timeout: "
                            f"{T.work(seq, self.op, self.numel, r.timeout_s * 1000)} ran for {ran} milliseconds "
                            "before timing out.")
                    self.worker_block(a, rank, t + dt.timedelta(milliseconds=5),
                                      T.terminate_block(what, r.site, T.PG_PROFILES[r.pg_style]["timeout"]))
            exits[rank] = (t + dt.timedelta(seconds=rnd.uniform(0.2, 1.2)), -6, "abort")
        f.seq = seq

    # --- subclasses -------------------------------------------------------------------------------------
    def launch(self, a: Attempt) -> None:
        raise NotImplementedError

    def teardown(self, a: Attempt, exits: dict, nxt: Attempt | None) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        pass

    # --- noise over the whole run -----------------------------------------------------------------------
    def noise(self) -> None:
        r, rnd = self.r, self.r.rnd
        for a in r.attempts:
            if not a.steps or a.last_step <= a.step0:
                continue
            t_a, t_b = a.steps[0], a.steps[a.last_step - a.step0 - 1]
            hours = (t_b - t_a).total_seconds() / 3600
            n = max(2, int(r.z["noise_per_hour"] * hours))
            kinds = ("ib_flap", "socket_retry", "nccl_warn", "user_warning", "store_retry")
            for i in range(n):
                k = kinds[i % len(kinds)]
                t = t_a + dt.timedelta(seconds=rnd.uniform(0, (t_b - t_a).total_seconds()))
                rank = rnd.randrange(r.world)
                h = self.host(a, rank)
                pid, d = a.pids[rank], self.cuda_dev(a, rank)
                if k == "ib_flap":
                    lr = rank % r.gpus
                    up = t + dt.timedelta(seconds=rnd.uniform(0.2, 20))
                    if rnd.random() < 0.5:
                        self.worker(a, rank, t, N.ib_async(h, pid, pid + 31, d, f"mlx5_{lr}", 1, "port error", 10))
                        self.worker(a, rank, up, N.ib_async(h, pid, pid + 31, d, f"mlx5_{lr}", 1, "port active", 9))
                    else:
                        self.worker(a, rank, t, N.ib_async_old(h, pid, pid + 31, d))
                elif k == "socket_retry":
                    peer = self.host(a, (rank + r.gpus) % r.world)
                    self.worker(a, rank, t, N.socket_reset(h, pid, pid + 40, d, peer, 43000 + rank % r.gpus))
                elif k == "nccl_warn":
                    self.worker(a, rank, t, N.plugin_missing(h, pid, pid + 31, d))
                elif k == "user_warning":
                    self.worker(a, rank, t, T.user_warning(self.lt(h, t), r.site))
                else:
                    self.worker(a, rank, t, T.store_connect_retry(self.lt(h, t), self.master(a), r.master_port))
                self.noise_log.append({"time": TF.z(t), "kind": k, "rank": rank, "attempt": a.id})


class Torchrun(Render):
    """torchrun on every node (its agent's console, --tee'd worker lines). Elastic restarts keep the agents
    (restart_count per agent); a resubmitted job starts new agents and new files."""

    def __init__(self, run):
        super().__init__(run)
        self.remaining = {h: run.max_restarts for h in run.pool}
        self.rc = {h: 0 for h in run.pool}
        self.rdzv_t: dict = {}           # host -> when its agent logged "Rendezvous'ing worker group" for the next attempt
        self.elastic = run.mechanism == "elastic"
        self.exe = run.site.split("/lib/")[0] + "/bin/torchrun"

    def node_file(self, a, host):
        return f"job{a.job}/{host}.log" if self.r.mechanism == "resubmit" else f"{host}.log"

    def tee(self, rank):
        return f"[default{rank % self.r.gpus}]:" if self.r.prefix == "default" else f"[{rank}]:"

    def route(self, a, rank, out=False):
        pre = self.tee(rank)
        return self.node_file(a, self.host(a, rank)), (lambda t, text: pre + text)

    def agent(self, a, host, t, text):
        self.s.add(self.node_file(a, host), t, text)

    def agent_block(self, a, host, t, lines):
        for x in lines:
            self.agent(a, host, t, x)

    def fresh_agents(self, a) -> bool:
        return a.id == 1 or not self.elastic

    def launch(self, a):
        r, rnd = self.r, self.r.rnd
        if a.ending == "rdzv_timeout" and not self.fresh_agents(a):
            return                        # its rendezvous lines were written when the previous attempt failed
        if self.fresh_agents(a):
            first = None
            for i, h in enumerate(a.hosts):
                if a.ending == "rdzv_timeout" and h == a.failure.host:
                    continue              # the node that never starts its agent
                t = a.launch + dt.timedelta(seconds=rnd.uniform(0, 4.0) if i else 0)
                first = t if first is None else min(first, t)
                pid = a.agent_pid[h]
                L = self.lt(h, t)
                self.agent_block(a, h, t, T.launch_config(L, pid, ENTRY, len(a.hosts), r.gpus, r.run_id,
                                                          f"{self.master(a)}:{r.master_port}", i == 0,
                                                          r.join_timeout if r.join_timeout != 600 else None,
                                                          r.max_restarts if self.elastic else 0, self.log_dir(h)))
                self.agent(a, h, t + dt.timedelta(milliseconds=25), T.starting_workers(self.lt(h, t + dt.timedelta(milliseconds=25)), pid))
                self.agent(a, h, t + dt.timedelta(milliseconds=26), T.rendezvousing(self.lt(h, t + dt.timedelta(milliseconds=26)), pid))
                self.rdzv_t[h] = t + dt.timedelta(milliseconds=26)
                if not self.elastic:
                    self.rc[h] = 0
            a.launch = first
            a.boundary = ("torchrun launch (restart_count=0)" if a.id == 1 else
                          f"resubmitted job {a.job}: a new torchrun launch")
        if a.ending != "rdzv_timeout":
            self.rdzv_complete(a)

    def log_dir(self, h):
        return f"/tmp/torchelastic_{stable_token(self.r.seed, h)}"

    def rdzv_complete(self, a):
        r = self.r
        for i, h in enumerate(a.hosts):
            pid = a.agent_pid[h]
            t = a.rdzv_done + dt.timedelta(milliseconds=7 * i)
            L = self.lt(h, t)
            self.agent_block(a, h, t, T.rdzv_complete(L, pid, self.rc[h], self.master(a), 40000 + a.id, i, len(a.hosts),
                                                      list(range(r.gpus)), list(range(i * r.gpus, (i + 1) * r.gpus)),
                                                      r.world))
            self.agent_block(a, h, t, T.starting_worker_group(L, pid))
        a.restart_count = {h: self.rc[h] for h in a.hosts}
        if a.id > 1 and self.elastic:
            a.boundary = "torchrun elastic restart (restart_count=" + ",".join(
                sorted({str(v) for v in a.restart_count.values()})) + ")"

    # --- the end of an attempt, as the agents see it -------------------------------------------------
    def teardown(self, a, exits, nxt):
        r, rnd = self.r, self.r.rnd
        f = a.failure
        ends = [t for v in exits.values() if isinstance(v, tuple) for t in [v[0]]]
        if a.ending == "running":
            a.end = a.steps[a.last_step - a.step0 - 1] if a.last_step > a.step0 else a.train_start
            return
        if a.ending == "complete":
            t_done = a.t_stop + dt.timedelta(seconds=rnd.uniform(1.0, 4.0))
            for h in a.hosts:
                pid = a.agent_pid[h]
                self.agent_block(a, h, t_done, T.succeeded(self.lt(h, t_done), pid))
                self.agent_block(a, h, t_done + dt.timedelta(seconds=0.3), T.uv_loop_close(self.lt(h, t_done + dt.timedelta(seconds=0.3))))
            a.end = t_done + dt.timedelta(seconds=0.4)
            return
        if a.ending == "cancel":
            t = a.t_stop
            for h in a.hosts:
                pid = a.agent_pid[h]
                self.agent(a, h, t, T.agent_sigterm(self.lt(h, t), pid))
                for rank in self.local(a, h):
                    self.agent(a, h, t, T.sigterm(self.lt(h, t), pid, a.pids[rank]))
                self.agent_block(a, h, t + dt.timedelta(seconds=1.5), T.agent_signal_traceback(r.site, self.exe, pid))
            a.end = t + dt.timedelta(seconds=1.6)
            a.boundary = a.boundary or ""
            return
        if a.ending == "rdzv_timeout":
            t_end = a.launch
            for h in a.hosts:
                if h == f.host:
                    continue
                t = self.rdzv_t.get(h, a.launch) + dt.timedelta(seconds=r.join_timeout + rnd.uniform(0, 1.0))
                self.agent_block(a, h, t, T.rendezvous_timeout_traceback(r.site, self.exe, restart=not self.fresh_agents(a)))
                self.agent_block(a, h, t, T.uv_loop_close(self.lt(h, t)))
                t_end = max(t_end, t)
            a.end = t_end
            f.t = min(self.rdzv_t.get(h, a.launch) for h in a.hosts if h != f.host) + dt.timedelta(seconds=r.join_timeout)
            return
        # a failure
        restart = nxt is not None and self.elastic
        frozen = f.host if f.story == "node_freeze" else None
        t_culprit_rdzv = None
        # the culprit's node first (its agent sees its worker die), then the others
        order = [f.host] + [h for h in a.hosts if h != f.host]
        closing = False
        for h in order:
            if h == frozen:
                continue
            pid = a.agent_pid[h]
            local = self.local(a, h)
            if f.cascade == "rejoin" and h != f.host and restart:
                t_det = (t_culprit_rdzv or f.t) + dt.timedelta(seconds=rnd.uniform(0.1, 2.0))
                L = self.lt(h, t_det)
                self.agent(a, h, t_det, T.new_nodes_restart(L, pid, 1, a.hosts.index(f.host)))
                self.agent(a, h, t_det, T.stopping(L, pid))
                for rank in local:
                    self.agent(a, h, t_det, T.sigterm(L, pid, a.pids[rank]))
                    exits[rank] = (t_det + dt.timedelta(seconds=rnd.uniform(0.2, 1.5)), -15, "sigterm")
                t_r = t_det + dt.timedelta(seconds=rnd.uniform(1.0, 2.5))
                self.agent(a, h, t_r, T.rendezvousing(self.lt(h, t_r), pid))
                self.rdzv_t[h] = t_r
                continue
            timed = [(v[0], rank, v[1]) for rank in local for v in [exits.get(rank)] if isinstance(v, tuple)]
            if not timed:
                continue
            t_first, r_first, code = min(timed)
            t_mon = t_first + dt.timedelta(seconds=rnd.uniform(0.05, 1.0))
            L = self.lt(h, t_mon)
            failures = [{"time": self.lt(h, t_first), "rank": r_first, "local_rank": r_first % r.gpus,
                         "exitcode": code, "pid": a.pids[r_first], "message": self.error_message(a, r_first, code)}]
            for rank in local:
                v = exits.get(rank)
                if v is None or (isinstance(v, tuple) and v[0] > t_mon):
                    self.agent(a, h, t_mon, T.sigterm(L, pid, a.pids[rank]))
                    exits[rank] = (t_mon + dt.timedelta(seconds=rnd.uniform(0.2, 1.5)), -15, "sigterm")
                if rank != r_first:
                    v = exits[rank]
                    failures.append({"time": self.lt(h, v[0]), "rank": rank, "local_rank": rank % r.gpus,
                                     "exitcode": v[1], "pid": a.pids[rank], "message": self.error_message(a, rank, v[1])})
            t_rep = max(exits[rank][0] for rank in local) + dt.timedelta(milliseconds=120)
            L = self.lt(h, t_rep)
            self.agent(a, h, t_rep, T.failed_exitcode(L, pid, code, r_first % r.gpus, a.pids[r_first], r.binary))
            if self.elastic and self.remaining[h] > 0 and (restart or closing):
                self.agent(a, h, t_rep, T.group_failed_restart(L, pid, self.remaining[h], r.max_restarts))
                self.remaining[h] -= 1
                self.rc[h] += 1
                self.agent(a, h, t_rep, T.stopping(L, pid))
                t_r = t_rep + dt.timedelta(milliseconds=rnd.randint(1, 40))
                self.agent(a, h, t_r, T.rendezvousing(self.lt(h, t_r), pid))
                self.rdzv_t[h] = t_r
                if h == f.host:
                    t_culprit_rdzv = t_r
                if closing:
                    # the culprit's agent has exited and closed the rendezvous: this one cannot restart
                    t_x = t_r + dt.timedelta(milliseconds=rnd.randint(20, 300))
                    self.agent_block(a, h, t_x, T.rendezvous_timeout_traceback(r.site, self.exe, True,
                                                                                "RendezvousClosedError"))
                    self.agent_block(a, h, t_x, T.uv_loop_close(self.lt(h, t_x)))
                    exits[("agent", h)] = (t_x, 1, "agent")
            else:
                t_x = t_rep + dt.timedelta(milliseconds=60)
                if code < 0 or any(x["exitcode"] < 0 for x in failures):
                    self.agent(a, h, t_x, T.no_error_file(self.lt(h, t_x), pid, r_first))
                fl = sorted(failures, key=lambda x: (x["time"], x["rank"]))
                root = [x for x in fl if x["rank"] == r_first]
                self.agent_block(a, h, t_x, T.child_failed(r.site, self.exe, ENTRY, h, root + [x for x in fl if x["rank"] != r_first]))
                self.agent_block(a, h, t_x, T.uv_loop_close(self.lt(h, t_x)))
                exits[("agent", h)] = (t_x, 1, "agent")
                if self.elastic and h == f.host:
                    closing = True
        a.end = max(v[0] for v in exits.values() if isinstance(v, tuple))
        if restart and nxt is not None and self.rdzv_t:
            nxt.launch = min(t for hh, t in self.rdzv_t.items() if hh in a.hosts and hh != frozen)
            if nxt.ending == "rdzv_timeout":
                nxt.boundary = "torchrun elastic restart: the agents rendezvous again (the group never assembles)"

    def local(self, a, h):
        i = a.hosts.index(h)
        return range(i * self.r.gpus, (i + 1) * self.r.gpus)

    def error_message(self, a, rank, code):
        f = a.failure
        if code is not None and code > 0 and f and f.rank == rank and f.story == "exception":
            return "Traceback (most recent call last):\n  File \"" + ENTRY + "\", line 251, in train_one_epoch\n" + EXC[f.telling][0]
        return None


class TorchrunLogdir(Torchrun):
    """torchrun --log-dir: each worker's stdout/stderr in <log_dir>/<run_id>_<rand>/attempt_<restart_count>/
    <local_rank>/; the agent's console per node holds the agent's lines only."""

    def run_dir(self, h, a):
        # one per torchrun process (the agent): an elastic run keeps it across restarts
        return f"{self.r.run_id}_{stable_token(self.r.seed, h, a.job)}"

    def route(self, a, rank, out=False):
        h = self.host(a, rank)
        rc = a.restart_count.get(h, 0)
        path = f"torchelastic/{h}/{self.run_dir(h, a)}/attempt_{rc}/{rank % self.r.gpus}/{'stdout' if out else 'stderr'}.log"
        return path, (lambda t, text: text)

    def launch(self, a):
        super().launch(a)

    def log_dir(self, h):
        return f"/var/log/train/{self.r.jobname}/{h}"


class K8sCri(Torchrun):
    """A Kubeflow PyTorchJob: one pod per node running torchrun (--max-restarts 0); a failure makes every
    container exit and the kubelet restart it (restartPolicy OnFailure): pytorch/<n>.log per container."""

    kernel_form = "journal"

    def __init__(self, run):
        super().__init__(run)
        self.elastic = False
        rnd = run.rnd
        self.pods = {}
        self.kpid = {h: rnd.randint(1500, 3000) for h in run.pool}
        for i, h in enumerate(run.pool):
            pod = f"{run.jobname}-worker-{i}"
            uid = "-".join(f"{rnd.getrandbits(b * 4):0{b}x}" for b in (8, 4, 4, 4, 12))
            self.pods[h] = (pod, uid)
        self.cids: dict = {}
        self.image = f"registry.example.internal/ml/{run.jobname}:2026.02.1"

    def node_file(self, a, host):
        pod, uid = self.pods[host]
        return f"var/log/pods/{self.r.ns}_{pod}_{uid}/pytorch/{a.container_n}.log"

    def master(self, a):
        return f"{self.pods[a.hosts[0]][0]}"

    def route(self, a, rank, out=False):
        pre = self.tee(rank)
        stream = "stdout" if out else "stderr"
        return self.node_file(a, self.host(a, rank)), (lambda t, text, h=self.host(a, rank): K.cri(self.lt(h, t) + dt.timedelta(milliseconds=1), pre + text, stream))

    def agent(self, a, host, t, text):
        self.s.add(self.node_file(a, host), t, K.cri(self.lt(host, t) + dt.timedelta(milliseconds=1), text))

    def oom_memcg(self, a, rank):
        pod, uid = self.pods[self.host(a, rank)]
        cg = f"/kubepods.slice/kubepods-pod{uid.replace('-', '_')}.slice"
        return cg, f"{cg}/cri-containerd-{self.cid(self.host(a, rank), a.container_n)}.scope"

    def cid(self, h, n):
        return self.cids.setdefault((h, n), "%064x" % self.r.rnd.getrandbits(256))

    def launch(self, a):
        r = self.r
        if a.ending != "rdzv_timeout":
            for h in a.hosts:
                t = a.launch - dt.timedelta(milliseconds=300)
                pod, uid = self.pods[h]
                self.s.add(f"journal/{h}.log", t, K.pleg(self.lt(h, t), h, self.kpid[h], r.ns, pod, uid, "ContainerStarted",
                                                         self.cid(h, a.container_n)))
        super().launch(a)
        if a.id > 1:
            a.boundary = f"pod containers restarted (restart count {a.container_n}): new CRI log {a.container_n}.log"

    def teardown(self, a, exits, nxt):
        r, rnd = self.r, self.r.rnd
        if a.ending == "rdzv_timeout":
            # the restarted containers' torchrun wait for the pod of the frozen node, which never comes back
            for h in a.hosts:
                if h != a.failure.host:
                    self.rdzv_t[h] = a.launch + dt.timedelta(seconds=rnd.uniform(0, 2))
            super().teardown(a, exits, nxt)
            for h in a.hosts:
                if h != a.failure.host:
                    self.container_died(a, h, a.end + dt.timedelta(seconds=0.5), 1)
            return
        super().teardown(a, exits, nxt)
        if a.ending in ("running", "complete"):
            if a.ending == "complete":
                for h in a.hosts:
                    self.container_died(a, h, a.end + dt.timedelta(seconds=0.2), 0)
            return
        frozen = a.failure.host if a.failure and a.failure.story == "node_freeze" else None
        for h in a.hosts:
            if h == frozen:
                continue
            t = exits.get(("agent", h), (a.end,))[0] + dt.timedelta(seconds=0.3)
            self.container_died(a, h, t, 137 if (a.failure and a.failure.story == "host_oom" and False) else 1)
            if nxt is not None:
                secs = min(300, 10 * 2 ** a.container_n)
                pod, uid = self.pods[h]
                self.s.add(f"journal/{h}.log", t + dt.timedelta(seconds=0.03),
                           K.backoff(self.lt(h, t + dt.timedelta(seconds=0.03)), h, self.kpid[h], r.ns, pod, uid, "pytorch", secs))
        if nxt is not None and nxt.ending == "rdzv_timeout":
            nxt.boundary = "pod containers restarted; torchrun's rendezvous waits for the pod of the lost node"
        a.end = max(a.end, max((v[0] for v in exits.values() if isinstance(v, tuple)), default=a.end))

    def container_died(self, a, h, t, code):
        pod, uid = self.pods[h]
        self.s.add(f"journal/{h}.log", t, K.pleg(self.lt(h, t), h, self.kpid[h], self.r.ns, pod, uid, "ContainerDied",
                                                 self.cid(h, a.container_n)))
        a.container_exit = getattr(a, "container_exit", {})
        a.container_exit[h] = (t, code)

    def finish(self):
        r = self.r
        atts = r.attempts
        last = atts[-1]
        t_now = (last.end or last.launch) + dt.timedelta(seconds=r.rnd.uniform(30, 300))
        cp = lambda t: t + dt.timedelta(seconds=r.offsets["control-plane"])  # noqa: E731
        events, rows = [], []
        for i, h in enumerate(r.pool[:r.nnodes]):
            pod, uid = self.pods[h]
            mine = [a for a in atts if h in a.hosts and a.ending != "rdzv_timeout" or (a.ending == "rdzv_timeout" and h != a.failure.host and h in a.hosts)]
            if not mine:
                continue
            cur = mine[-1]
            ce = getattr(cur, "container_exit", {}).get(h)
            frozen_here = any(a.failure and a.failure.story == "node_freeze" and a.failure.host == h for a in atts)
            state = ({"state": "Terminated", "reason": "Error" if ce[1] else "Completed", "exit": ce[1],
                      "started": cp(cur.launch), "finished": cp(ce[0])} if ce else
                     {"state": "Running", "started": cp(cur.launch)})
            prev = mine[-2] if len(mine) > 1 else None
            pe = getattr(prev, "container_exit", {}).get(h) if prev else None
            lst = ({"state": "Terminated", "reason": "Error" if pe[1] else "Completed", "exit": pe[1],
                    "started": cp(prev.launch), "finished": cp(pe[0])} if pe else None)
            restarts = len(mine) - 1
            evs = [("Normal", "Scheduled", K.age(t_now - atts[0].launch), "default-scheduler",
                    f"Successfully assigned {r.ns}/{pod} to {h}"),
                   ("Normal", "Started", K.age(t_now - cur.launch) + (f" (x{restarts + 1} over {K.age(t_now - atts[0].launch)})" if restarts else ""),
                    "kubelet", "Started container pytorch")]
            if restarts:
                evs.append(("Warning", "BackOff", K.age(t_now - mine[-2].end), "kubelet",
                            f"Back-off restarting failed container pytorch in pod {pod}_{r.ns}({uid})"))
            lines = K.describe_pod(pod, r.ns, h, r.ip[h], cp(atts[0].launch), self.cid(h, cur.container_n), self.image,
                                   state, lst, restarts, r.gpus, r.nnodes, evs)
            self.s.add_block(f"kubectl_describe_pod_{pod}.txt", t_now, lines)
            rows.append((pod, "0/1" if ce or frozen_here else "1/1", "Unknown" if frozen_here else ("Error" if ce and ce[1] else ("Completed" if ce else "Running")),
                         f"{restarts} ({K.age(t_now - cur.launch)} ago)" if restarts else "0",
                         K.age(t_now - atts[0].launch), r.ip[h], h))
            for a in mine[:-1]:
                e = getattr(a, "container_exit", {}).get(h)
                if e:
                    events.append((e[0], "Warning", "BackOff", f"pod/{pod}",
                                   f"Back-off restarting failed container pytorch in pod {pod}_{r.ns}({uid})"))
        for a in atts:
            if a.failure and a.ending == "failure" and a is not atts[-1]:
                events.append((a.end, "Warning", "PyTorchJobRestarting", f"pytorchjob/{r.jobname}",
                               f"PyTorchJob {r.jobname} is restarting because {len(a.hosts) - (1 if a.failure.story == 'node_freeze' else 0)} "
                               "Worker replica(s) failed."))
            if a.failure and a.failure.story == "node_freeze":
                events.append((a.failure.t + dt.timedelta(seconds=40), "Normal", "NodeNotReady", f"pod/{self.pods[a.failure.host][0]}",
                               "Node is not ready"))
        if atts[-1].ending in ("failure", "rdzv_timeout"):
            events.append((atts[-1].end, "Warning", "PyTorchJobFailed", f"pytorchjob/{r.jobname}",
                           f"PyTorchJob {r.ns}/{r.jobname} is failed because {r.nnodes - 1} Worker replica(s) failed."))
        events.sort(key=lambda e: e[0])
        self.s.add_block("kubectl_get_events.txt", t_now, K.get_events(r.ns, [(K.age(t_now - e[0]),) + e[1:] for e in events]))
        self.s.add_block("kubectl_get_pods.txt", t_now, K.get_pods(r.ns, rows))


SRUN_WHAT = {1: "Exited with exit code 1", -6: "Aborted", -9: "Killed", -11: "Segmentation fault", -15: "Terminated"}


class SlurmSrun(Render):
    """sbatch + `srun --label python train.py`: one task per GPU (SLURM_PROCID is the rank), the job's output
    file, slurmctld and slurmd logs. Restarts: a requeue (same job id, SLURM_RESTART_COUNT) or a new job."""

    def __init__(self, run):
        super().__init__(run)
        self.gpu_bind = run.rnd.random() < 0.5        # --gpus-per-task=1: each task sees one GPU (cudaDev 0)
        self.width = len(str(run.world))
        self.ctl_host = "slurmctld"
        self.nrestart = 0

    def cuda_dev(self, a, rank):
        return 0 if self.gpu_bind else rank % self.r.gpus

    def out_file(self, a):
        if self.r.mechanism == "requeue" and self.r.slurm_open == "per_restart":
            return f"slurm-{a.job}_{a.restart_cnt}.out"
        return f"slurm-{a.job}.out"

    def route(self, a, rank, out=False):
        lab = f"{rank:>{self.width}}: "
        return self.out_file(a), (lambda t, text: lab + text)

    def jobout(self, a, t, text):
        self.s.add(self.out_file(a), t, text)

    def ctl(self, t, text_fn):
        self.s.add("slurm/slurmctld.log", t, text_fn(self.lt(self.ctl_host, t)))

    def slurmd(self, h, t, text_fn):
        self.s.add(f"slurm/slurmd-{h}.log", t, text_fn(self.lt(h, t)))

    def lt(self, host, t):
        return t + dt.timedelta(seconds=self.r.offsets["slurmctld" if host == "slurmctld" else host])

    def oom_memcg(self, a, rank):
        cg = f"/slurm/uid_1000/job_{a.job}/step_0"
        return cg, f"{cg}/task_{rank % self.r.gpus}"

    def launch(self, a):
        r, rnd = self.r, self.r.rnd
        prev = r.attempts[a.id - 2] if a.id > 1 else None
        a.restart_cnt = (prev.restart_cnt + 1) if prev is not None and r.mechanism == "requeue" else 0
        if a.id == 1 or r.mechanism == "resubmit":
            ts = a.launch - dt.timedelta(seconds=rnd.uniform(2, 90))
            self.ctl(ts, lambda L: S.submit(L, a.job))
        self.ctl(a.launch, lambda L: S.allocate(L, a.job, a.hosts, len(a.hosts) * 96))
        self.slurmd(a.hosts[0], a.launch + dt.timedelta(milliseconds=60), lambda L: S.launch_batch(L, a.job))
        for i, h in enumerate(a.hosts):
            t = a.rdzv_done + dt.timedelta(milliseconds=40 * i)
            self.slurmd(h, t, lambda L: S.launch_task(L, a.job, 0, ip=r.ip[a.hosts[0]]))
        t = a.workers_up - dt.timedelta(seconds=0.5)
        self.worker(a, 0, t, f"{TF.py(self.lt(a.hosts[0], t))} - INFO - train - SLURM_JOB_ID={a.job} "
                             f"SLURM_RESTART_COUNT={a.restart_cnt} SLURM_JOB_NODELIST={S.hostlist(a.hosts)}", out=True)
        if a.id == 1:
            a.boundary = f"slurm job {a.job} starts"
        elif r.mechanism == "requeue":
            a.boundary = f"slurm requeue of job {a.job} (SLURM_RESTART_COUNT={a.restart_cnt})"
        else:
            a.boundary = f"resubmitted slurm job {a.job}"

    def report_exits(self, a, exits: dict, t_from=None):
        """srun's task-exit lines (grouped per node and reason, as srun batches them) and slurmd's."""
        r = self.r
        groups: dict = {}
        for rank, v in exits.items():
            if not isinstance(v, tuple) or not isinstance(rank, int):
                continue
            t, code, why = v
            h = self.host(a, rank)
            what = "Out Of Memory" if why == "oom" else SRUN_WHAT.get(code, f"Exited with exit code {code}")
            groups.setdefault((h, what), []).append((t, rank, code))
            sig = -code if code < 0 else None
            self.slurmd(h, t, lambda L, rank=rank, code=code, sig=sig: S.task_exit(
                L, a.job, 0, rank, a.pids[rank], None if sig else code, sig))
        for (h, what), lst in sorted(groups.items(), key=lambda kv: min(x[0] for x in kv[1])):
            t = max(x[0] for x in lst) + dt.timedelta(milliseconds=150)
            self.jobout(a, t, S.srun_task_error(h, [x[1] for x in lst], what))

    def teardown(self, a, exits, nxt):
        r, rnd = self.r, self.r.rnd
        f = a.failure
        if a.ending == "running":
            a.end = a.steps[a.last_step - a.step0 - 1] if a.last_step > a.step0 else a.train_start
            return
        if a.ending == "complete":
            t = a.t_stop + dt.timedelta(seconds=rnd.uniform(1, 5))
            for rank in self.ranks():
                h = self.host(a, rank)
                self.slurmd(h, t, lambda L, rank=rank: S.task_exit(L, a.job, 0, rank, a.pids[rank], 0))
            self.ctl(t + dt.timedelta(seconds=1), lambda L: S.job_complete(L, a.job, 0)[0])
            self.ctl(t + dt.timedelta(seconds=1), lambda L: S.job_complete(L, a.job, 0)[1])
            a.end = t
            return
        if a.ending == "cancel":
            t = a.t_stop
            if r.mechanism == "requeue":
                self.ctl(t, lambda L: S.preempt_requeued(L, a.job))
                reason = "PREEMPTION"
            else:
                self.ctl(t, lambda L: S.daemon(L, f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={a.job} uid 1000"))
                reason = None
            self.jobout(a, t + dt.timedelta(seconds=0.1), S.srun_aborted())
            for h in a.hosts:
                self.jobout(a, t + dt.timedelta(seconds=0.1), S.stepd_in_output(self.lt(h, t), a.job, 0, h, reason))
                self.slurmd(h, t + dt.timedelta(seconds=0.05), lambda L, h=h: S.stepd_cancelled(L, a.job, 0, h, reason))
            ex = {rank: (t + dt.timedelta(seconds=rnd.uniform(0.3, 2.0)), -15, "sigterm") for rank in self.ranks()}
            self.report_exits(a, ex)
            a.end = max(v[0] for v in ex.values())
            return
        frozen = f.host if f.story == "node_freeze" else None
        if f.story == "host_oom" and f.telling == "oom_rank":
            t = exits[f.rank][0] + dt.timedelta(seconds=0.2)
            self.slurmd(f.host, t, lambda L: S.oom_event(L, a.job, 0, new_form=r.seed % 2 == 0))
            self.jobout(a, t, S.stepd_oom_in_output(a.job, 0, new_form=r.seed % 2 == 0))
        timed = sorted((v[0], k) for k, v in exits.items() if isinstance(v, tuple))
        alive = [k for k, v in exits.items() if v is None]
        if alive or (f.cascade == "srun_kill" and timed):
            t0 = timed[0][0] if timed else f.t
            if self.r.kill_on_bad_exit or f.cascade == "srun_kill":
                tk = t0 + dt.timedelta(seconds=rnd.uniform(0.2, 1.0))
            else:
                wait = 60
                tk = max(x[0] for x in timed) + dt.timedelta(seconds=wait)
                self.jobout(a, tk, f"srun: First task exited {wait}s ago")
                self.jobout(a, tk, f"srun: StepId={a.job}.0 task{'s' if len(alive) > 1 else ''} "
                                   f"{S.ranges(alive)}: running")
            self.jobout(a, tk, f"srun: Terminating StepId={a.job}.0" if not self.r.kill_on_bad_exit else S.srun_terminating(a.job, 0))
            for h in a.hosts:
                if h == frozen:
                    continue
                self.jobout(a, tk + dt.timedelta(seconds=0.05), S.stepd_in_output(self.lt(h, tk), a.job, 0, h))
            for k in alive:
                exits[k] = (tk + dt.timedelta(seconds=rnd.uniform(0.1, 1.5)), -15, "sigterm")
            for k, v in list(exits.items()):
                if isinstance(v, tuple) and v[0] > tk and k != f.rank:
                    exits[k] = (tk + dt.timedelta(seconds=rnd.uniform(0.1, 1.5)), -15, "sigterm")
        self.report_exits(a, exits)
        t_done = max(v[0] for v in exits.values() if isinstance(v, tuple)) + dt.timedelta(seconds=0.5)
        requeue = nxt is not None and r.mechanism == "requeue"
        if frozen:
            tn = t_done + dt.timedelta(seconds=rnd.uniform(20, 120))
            self.ctl(tn, lambda L: S.not_responding(L, frozen, False))
            self.ctl(tn + dt.timedelta(seconds=60), lambda L: S.not_responding(L, frozen, True))
            t_done = tn + dt.timedelta(seconds=60)
            self.jobout(a, t_done, S.srun_node_failure(frozen))
            if requeue:
                self.ctl(t_done, lambda L: S.requeue_node_fail(L, a.job, frozen))
            else:
                self.ctl(t_done, lambda L: S.kill_on_failed_node(L, a.job, frozen))
        elif requeue:
            tq = t_done + dt.timedelta(seconds=rnd.uniform(0.5, 3))
            self.ctl(tq, lambda L: S.requeue_request(L, a.job))
            h0 = a.hosts[0]
            self.slurmd(h0, tq + dt.timedelta(seconds=0.1), lambda L: S.stepd_cancelled(L, a.job, 0, h0, "JOB REQUEUE", job_level=True))
            self.jobout(a, tq + dt.timedelta(seconds=0.1), S.stepd_in_output(self.lt(h0, tq), a.job, 0, h0, "JOB REQUEUE", job_level=True))
            t_done = tq + dt.timedelta(seconds=0.2)
        else:
            code = exits[f.rank][1] if f.rank is not None and isinstance(exits.get(f.rank), tuple) else 1
            self.ctl(t_done, lambda L: S.job_complete(L, a.job, 1 if code else 0)[0])
            self.ctl(t_done, lambda L: S.job_complete(L, a.job, 1)[1])
        if requeue:
            self.ctl(t_done + dt.timedelta(seconds=rnd.uniform(2, 12)), lambda L: S.requeuing(L, a.job))
        a.end = t_done


class PdshDeepspeed(Render):
    """HELD OUT. `deepspeed --hostfile` over pdsh: one console, every remote line prefixed 'host: ' by pdsh;
    DeepSpeed's per-node launcher (launch.py) kills its processes when one fails. Restarts: new jobs."""

    kernel_form = "journal"

    def path(self, a):
        return f"logs/train_{a.job}.log"

    def route(self, a, rank, out=False):
        h = self.host(a, rank)
        return self.path(a), (lambda t, text: f"{h}: {text}")

    def remote(self, a, h, t, text):
        self.s.add(self.path(a), t, f"{h}: {text}")

    def launch(self, a):
        r, rnd = self.r, self.r.rnd
        from emit import deepspeed as D
        h0 = a.hosts[0]
        self.s.add(self.path(a), a.launch, D.runner_cmd(self.lt(h0, a.launch), a.hosts, r.gpus, r.ip[h0], r.master_port, "train.py"))
        for i, h in enumerate(a.hosts):
            t = a.launch + dt.timedelta(seconds=rnd.uniform(0.5, 3.0))
            for x in D.launch_header(self.lt(h, t), a.hosts, r.gpus, i):
                self.remote(a, h, t, x)
            for lr in range(r.gpus):
                rank = i * r.gpus + lr
                self.remote(a, h, t, D.spawned(self.lt(h, t), a.pids[rank], "train.py", lr))
        a.boundary = "deepspeed launch" if a.id == 1 else f"resubmitted deepspeed job {a.job}"

    def teardown(self, a, exits, nxt):
        r, rnd = self.r, self.r.rnd
        from emit import deepspeed as D
        f = a.failure
        h0 = a.hosts[0]
        if a.ending == "running":
            a.end = a.steps[a.last_step - a.step0 - 1] if a.last_step > a.step0 else a.train_start
            return
        if a.ending == "complete":
            t = a.t_stop + dt.timedelta(seconds=2)
            for rank in self.ranks():
                self.remote(a, self.host(a, rank), t, D.success(self.lt(self.host(a, rank), t), a.pids[rank]))
            a.end = t
            return
        if a.ending == "cancel":
            t = a.t_stop
            for h in a.hosts:
                for rank in self.local(a, h):
                    self.remote(a, h, t, D.killing(self.lt(h, t), a.pids[rank]))
                self.remote(a, h, t, D.log(self.lt(h, t), "INFO", "launch.py:344:sigkill_handler",
                                           "Main process received SIGTERM, exiting"))
            a.end = t + dt.timedelta(seconds=1)
            return
        frozen = f.host if f.story == "node_freeze" else None
        t_end = f.t
        for h in a.hosts:
            local = list(self.local(a, h))
            if h == frozen:
                t = (f.t_watchdog if hasattr(f, "t_watchdog") else f.t) + dt.timedelta(seconds=rnd.uniform(30, 120))
                self.s.add(self.path(a), t, D.pdsh_ssh_exit(h0, h, 255))
                t_end = max(t_end, t)
                continue
            timed = [(exits[k][0], k, exits[k][1]) for k in local if isinstance(exits.get(k), tuple)]
            if not timed:
                continue
            t1, k1, code = min(timed)
            tk = t1 + dt.timedelta(seconds=rnd.uniform(0.2, 1.0))
            for k in local:
                self.remote(a, h, tk, D.killing(self.lt(h, tk), a.pids[k]))
                if exits.get(k) is None or exits[k][0] > tk:
                    exits[k] = (tk + dt.timedelta(seconds=0.3), -15, "sigterm")
            self.remote(a, h, tk, D.exits_with(self.lt(h, tk), "train.py", r.gpus - 1, code))
            tx = tk + dt.timedelta(seconds=0.5)
            self.s.add(self.path(a), tx, D.pdsh_ssh_exit(h0, h, code & 0xFF))
            t_end = max(t_end, tx)
        a.end = t_end

    def local(self, a, h):
        i = a.hosts.index(h)
        return range(i * self.r.gpus, (i + 1) * self.r.gpus)


LAYOUT_CLASSES = {"torchrun_node": Torchrun, "torchrun_logdir": TorchrunLogdir, "slurm_srun": SlurmSrun,
                  "k8s_cri": K8sCri, "pdsh_deepspeed": PdshDeepspeed}


# ---------------------------------------------------------------------------------------------------------
# Truth, one incident, a family, the command line
# ---------------------------------------------------------------------------------------------------------

def truth_of(run: Run, rend: Render) -> dict:
    atts = []
    for a in run.attempts:
        outcome = {"failure": "failed", "rdzv_timeout": "failed", "cancel": "cancelled", "complete": "completed",
                   "running": "running"}[a.ending]
        e = {"id": a.id, "start": TF.z(a.launch), "end": TF.z(a.end), "outcome": outcome, "boundary": a.boundary,
             "first_step": a.step0 + 1 if a.steps else None, "last_step": a.last_step if a.steps else None}
        if run.mechanism == "elastic" and a.restart_count:
            e["restart_count"] = a.restart_count
        if run.layout == "slurm_srun":
            e["job_id"] = a.job
        if a.failure is not None and outcome == "failed":
            f = a.failure
            pod = None
            if run.layout == "k8s_cri":
                pod = rend.pods[f.host][0]
            v = {"kind": f.kind, "rank": f.rank, "host": f.host, "pod": pod, "gpu": f.gpu,
                 "time": TF.z(f.t), "story": f.story, "telling": f.telling, "cascade": f.cascade}
            if f.xid:
                v["xid"] = f.xid
            if getattr(f, "oom_pid", None):
                v["killed_pid"] = f.oom_pid
            if f.rank is not None:
                v["local_rank"] = f.rank % run.gpus
                v["pid"] = a.pids[f.rank]
            e["verdict"] = v
        if a.cancel_reason and outcome == "cancelled":
            e["reason"] = a.cancel_reason
        if a.flap:
            e["benign"] = {"ib_flap": {"host": a.flap[0], "hca": f"mlx5_{a.flap[1]}", "down": TF.z(a.flap[2]),
                                       "up": TF.z(a.flap[3])}}
        atts.append(e)
    failed = [x for x in atts if x["outcome"] == "failed"]
    verdict = dict(failed[-1]["verdict"]) if failed else {"kind": "none", "rank": None, "host": None, "pod": None,
                                                          "gpu": None}
    hosts = sorted({h for a in run.attempts for h in a.hosts})
    return {
        "generator": "benchmarks/gen_longrun.py", "story": run.story, "layout": run.layout, "seed": run.seed,
        "size": run.size, "heldout": run.heldout,
        "telling": {"mechanism": run.mechanism, "progress": run.progress, "torch_pg": run.pg_style,
                    "tee_prefix": run.prefix if run.layout in ("torchrun_node", "k8s_cri") else None,
                    "max_restarts": run.max_restarts if run.mechanism == "elastic" else None,
                    "nccl_timeout_s": run.timeout_s, "kernel_log": rend.kernel_form or run.dmesg_form},
        "launcher": {"torchrun_node": "torchrun", "torchrun_logdir": "torchrun", "slurm_srun": "slurm",
                     "k8s_cri": "kubernetes", "pdsh_deepspeed": "deepspeed"}[run.layout],
        "world_size": run.world, "nodes": {h: [a.hosts.index(h) * run.gpus + i for i in range(run.gpus)]
                                           for a in run.attempts[-1:] for h in a.hosts},
        "hosts": hosts,
        "pods": {h: rend.pods[h][0] for h in hosts} if run.layout == "k8s_cri" else None,
        "clock_offsets_s": {h: run.offsets[h] for h in hosts} | (
            {"slurmctld": run.offsets["slurmctld"]} if run.layout == "slurm_srun" else {}) | (
            {"control-plane": run.offsets["control-plane"]} if run.layout == "k8s_cri" else {}),
        "clock_note": "offset = how far that host's logged times run ahead of the true time; truth times are true times",
        "attempts": atts, "verdict": verdict, "featured_attempt": run.featured + 1,
        "noise": {"count": len(rend.noise_log), "kinds": sorted({n["kind"] for n in rend.noise_log}),
                  "eval_subgroups": rend.eval_groups},
        "end_note": "an attempt's end is when its last process ended, clipped to the next attempt's start where "
                    "one node's teardown overlaps another node's rejoin (elastic restarts)",
    }


def generate(out: str | Path, story: str, seed: int, layout: str | None = None, size: str = "small",
             heldout: bool = False, mechanism: str | None = None, progress: str | None = None) -> dict:
    """Write one incident under `out`; return its truth (also written to truth.json)."""
    if layout is None:
        pick = random.Random(f"layout:{story}:{seed}")
        allowed = [x for x in LAYOUTS if story not in UNTOLD.get(x, ()) and (heldout or x != "pdsh_deepspeed")]
        layout = pick.choice(allowed)
    run = Run(story, layout, seed, size, heldout, mechanism, progress)
    rend = LAYOUT_CLASSES[layout](run)
    rend.render()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rend.s.write(out)
    truth = truth_of(run, rend)
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth


def family(heldout: bool = False, seeds: list[int] | None = None) -> list[tuple[str, str, int]]:
    """The (story, layout, seed) of a family: every story in every layout that can tell it. Tuning: seeds
    1.. and the tuning layouts; held out: seeds >= 1000 and every layout (pdsh_deepspeed included)."""
    if seeds is None:
        seeds = [HELDOUT_SEED_MIN + 1] if heldout else [1]
    out = []
    for story in STORIES:
        for layout in LAYOUTS:
            if story in UNTOLD.get(layout, ()) or (layout == "pdsh_deepspeed" and not heldout):
                continue
            for s in seeds:
                out.append((story, layout, s))
    return out


def parse_seeds(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?")
    ap.add_argument("--story", choices=STORIES)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layout", choices=LAYOUTS)
    ap.add_argument("--size", choices=tuple(SIZES), default="small")
    ap.add_argument("--mechanism", help="restart mechanism (elastic, resubmit, requeue, pod_restart)")
    ap.add_argument("--progress", choices=tuple(P.STYLES), help="progress/resume telling")
    ap.add_argument("--family", action="store_true", help="every story x layout (one subdirectory each)")
    ap.add_argument("--seeds", default=None, help="seeds of a family: '1-3' or '1,5,9'")
    ap.add_argument("--list", action="store_true", help="list the family's (story, layout, seed) and exit")
    ap.add_argument("--heldout", action="store_true",
                    help="the HELD-OUT part (seeds >= 1000, the pdsh_deepspeed layout, the megatron telling, "
                         "oom_dataloader): to measure, never to tune")
    a = ap.parse_args(argv)
    if a.family or a.list:
        seeds = parse_seeds(a.seeds) if a.seeds else None
        fam = family(a.heldout, seeds)
        if a.list:
            for story, layout, seed in fam:
                print(f"{story}\t{layout}\t{seed}")
            return 0
        if not a.out:
            ap.error("OUT_DIR is required")
        for story, layout, seed in fam:
            t = generate(Path(a.out) / f"{story}__{layout}__{seed}", story, seed, layout, a.size, a.heldout)
            print(f"{story}__{layout}__{seed}: {len(t['attempts'])} attempts, verdict {t['verdict']['kind']}")
        return 0
    if not a.out or not a.story:
        ap.error("OUT_DIR and --story are required (or --family / --list)")
    t = generate(a.out, a.story, a.seed, a.layout, a.size, a.heldout, a.mechanism, a.progress)
    print(json.dumps({"attempts": [(x["id"], x["outcome"], (x.get("verdict") or {}).get("kind")) for x in t["attempts"]],
                      "verdict": t["verdict"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
