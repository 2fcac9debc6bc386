"""The plan of a long run: its world, its attempts and their failures, drawn from random.Random(seed)
(pure: no output). The constants (stories, layouts, the HELD-OUT part, sizes) are gen_longrun.py's."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random

from emit import kernel as KR
from emit import progress as P
from emit import torch as T

STORIES = ("gpu_fault", "host_oom", "hang", "ib_down", "ib_flap", "segfault", "exception", "node_freeze",
           "rdzv_missing")
KIND = {"gpu_fault": "gpu_fault", "host_oom": "oom", "hang": "hang", "ib_down": "network_error", "segfault": "crash",
        "exception": "exception", "node_freeze": "node_failure", "rdzv_missing": "rendezvous_timeout"}
LAYOUTS = ("torchrun_node", "torchrun_logdir", "slurm_srun", "k8s_cri", "pdsh_deepspeed",
           "deepspeed_srun", "mpirun_slurm")
# layouts added after the held-out set was fixed: kept out of the held-out family and of the random pick of a
# layout, so both draw what they drew when they were first measured
ADDED_LATER = ("deepspeed_srun", "mpirun_slurm")
SLURM_LAYOUTS = ("slurm_srun", "deepspeed_srun", "mpirun_slurm")
MECHANISMS = {"torchrun_node": ("elastic", "resubmit"), "torchrun_logdir": ("elastic",),
              "slurm_srun": ("requeue", "resubmit"), "k8s_cri": ("pod_restart",), "pdsh_deepspeed": ("resubmit",),
              "deepspeed_srun": ("requeue", "resubmit"), "mpirun_slurm": ("requeue", "resubmit")}
PROGRESS = {"torchrun_node": ("pylog", "plain", "hf", "lightning", "titan", "deepspeed"),
            "torchrun_logdir": ("pylog", "hf", "titan", "deepspeed", "lightning"),
            "slurm_srun": ("pylog", "titan", "hf", "deepspeed"),
            "k8s_cri": ("pylog", "hf", "titan", "lightning"),
            "pdsh_deepspeed": ("deepspeed",),
            "deepspeed_srun": ("deepspeed", "pylog", "hf", "titan"),
            "mpirun_slurm": ("pylog", "plain", "hf", "titan")}
# stories a layout cannot tell: a re-rendezvous needs torchrun's rendezvous across restarts
UNTOLD = {"slurm_srun": {"rdzv_missing"}, "pdsh_deepspeed": {"rdzv_missing"},
          "deepspeed_srun": {"rdzv_missing"}, "mpirun_slurm": {"rdzv_missing"}}

HELDOUT_SEED_MIN = 1000
HELDOUT = {"seeds": f">= {HELDOUT_SEED_MIN}", "layouts": ["pdsh_deepspeed"], "progress": ["megatron"],
           "tellings": ["oom_dataloader"]}
HELDOUT_PROGRESS_ADD = {x: ("megatron",) for x in LAYOUTS}

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
                 mechanism: str | None = None, progress: str | None = None, node_tz: float = 0.0):
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
        # the nodes' local zone, in hours from UTC: only where a node's own files sit beside files that
        # name their zone (k8s_cri: the journal beside the pods' CRI logs); asked for by name, drawn from
        # nothing, so every run without it keeps its bytes
        if node_tz and layout != "k8s_cri":
            raise SystemExit("gen_longrun: --node-tz is told by the k8s_cri layout only (its journals beside "
                             "the pods' UTC logs); elsewhere every file of a node is in its one zone")
        self.node_tz = node_tz
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
        buses = rnd.choice([[0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb],
                            [0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd],
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
        if layout == "mpirun_slurm":
            self.kill_on_bad_exit = True      # mpirun kills every process when the first one fails
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
            # the other agents (pods) restart and wait for the lost node at the rendezvous: it never comes
            endings.append(("rdzv_timeout", "rdzv_missing"))
            return endings, featured
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
        self.endings = endings
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
            t = f.t_watchdog + dt.timedelta(seconds=8)
        elif f.cascade == "remote":
            t = f.t_remote_last + dt.timedelta(seconds=6)
        else:
            # rejoin (elastic): the culprit's worker dies (an IB link: 4-25 s after the port error), its agent
            # restarts, the others notice and restart theirs: the next rendezvous completes once all are back
            t = f.t + dt.timedelta(seconds=35 if f.story == "ib_down" else 12)
        # what the launcher adds after the last exit: Slurm notices a dead node (up to 3 minutes) or waits
        # srun --wait=60 for a task that never exits; pdsh's ssh to a dead node times out (up to 2 minutes)
        if self.layout in SLURM_LAYOUTS:
            if f.story == "node_freeze":
                t += dt.timedelta(seconds=200)
            elif f.story == "hang" and not self.kill_on_bad_exit:
                t += dt.timedelta(seconds=70)
        if self.layout == "pdsh_deepspeed" and f.story == "node_freeze":
            t += dt.timedelta(seconds=130)
        return t

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
            f.cascade = "rejoin" if self.mechanism == "elastic" and not self._last_failure(a) else \
                rnd.choice(["remote", "watchdog"])
        elif self.mechanism == "elastic":
            # the culprit's agent restarts its workers at once and waits at the rendezvous; the other agents
            # see it waiting and restart theirs (before any timeout) -- unless it has no restart left
            f.cascade = rnd.choice(["watchdog", "remote"]) if self._last_failure(a) else "rejoin"
        elif self.layout in SLURM_LAYOUTS and self.kill_on_bad_exit:
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
        # peers see the remote error once NCCL's retries run out; after a link goes down that is after the
        # node's own completion errors (which come 4-25 s after the port error)
        f.t_remote_last = f.t + dt.timedelta(seconds=rnd.uniform(26.0, 50.0) if story == "ib_down" else
                                             rnd.uniform(8.0, 45.0))
        return f

    def _last_failure(self, a: Attempt) -> bool:
        """The failure that ends the run (no attempt after it)."""
        return a.id == len(self.endings) and self.endings[-1][0] == "failure"

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
        assert not (final and last.failure.cascade == "rejoin"), "the cascades are chosen by _last_failure"
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

