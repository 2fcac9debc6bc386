"""The plan told as log lines: what every launcher shares (the workers' NCCL init, progress, checkpoints,
evaluation sub-groups, each story's root cause and its cascade, the noise). The launchers (launchers_*.py)
route lines to files and tell their own part (launch, teardown, restart)."""

from __future__ import annotations

import datetime as dt

from emit import k8s as K
from emit import kernel as KR
from emit import nccl as N
from emit import progress as P
from emit import timefmt as TF
from emit import torch as T

from .plan import ENTRY, Attempt, Failure, Run
from .sink import Sink

BULK = 10 ** 12


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

    def node_local(self, host: str, t: dt.datetime) -> dt.datetime:
        """The time as `host`'s own daemons write it (its journal, its kernel): its clock, in its zone."""
        return self.lt(host, t) + dt.timedelta(hours=self.r.node_tz)

    def kernel(self, host, t, msg):
        L = self.node_local(host, t)
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
                if self.r.mechanism != "elastic":
                    raise AssertionError(f"gen_longrun: attempt {a.id} ends at {a.end}, after attempt {nxt.id} "
                                         f"starts at {nxt.launch} ({self.r.story}/{self.r.layout}/{self.r.seed})")
                # one node's teardown overlaps another node's rejoin by seconds (elastic): the attempt ends
                # where the next one begins
                assert (a.end - nxt.launch).total_seconds() < 30, (a.id, a.end, nxt.launch, self.r.seed)
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
                tr = t - dt.timedelta(seconds=1.1)
                self.worker(a, rank, tr, T.store_connect_retry(self.lt(h, tr), self.master(a), r.master_port))
                self.noise_log.append({"time": TF.z(t), "kind": "store_retry", "rank": rank})
            self.worker(a, rank, t, T.store_connected(L, r.ip[a.hosts[0]], r.master_port, 3 + rank % 5, 40000 + rank))
            t1 = t + dt.timedelta(seconds=rnd.uniform(0.5, 2.5))
            L1 = self.lt(h, t1)
            if rank == 0:
                self.worker(a, rank, t1, N.version(h, pid, dev))
            self.worker(a, rank, t1, N.ib_using(h, pid, pid + 7, dev, r.gpus, "ibp12s0", r.ip[h]))
            if rnd.random() < 0.1:
                self.worker(a, rank, t1, N.plugin_missing(h, pid, pid + 3, dev))
            self.worker(a, rank, t1, N.init_complete(h, pid, pid + 7, dev, self.comm(a, rank), rank, r.world,
                                                     r.phys[h][rank % r.gpus], self.bus(a, rank), a.comm_id))
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

    def comm(self, a, rank) -> int:
        """The address of a rank's world communicator in this attempt (the parent of its sub-groups)."""
        return 0x55d0c0000000 + rank * 0x1000 + a.id

    def master(self, a):
        return a.hosts[0]

    def last_progress(self, a: Attempt) -> dt.datetime:
        """The last step's time (the logs of an attempt still running end there)."""
        return a.steps[a.last_step - a.step0 - 1] if a.last_step > a.step0 else a.train_start

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
                bar = None   # (epoch, when its progress bar started): at the attempt's start, then at each epoch's
                for i in range(n_done):
                    k = step0 + i + 1
                    epoch = k // style.per_epoch if style.bar_per_epoch else 0
                    if bar is None or bar[0] != epoch:
                        bar = (epoch, steps[i - 1] if i else a.train_start)
                    if k % every:
                        continue
                    t = steps[i] + dt.timedelta(seconds=jit + ((k * 31 + rank) % 97) / 1000.0)
                    st = (steps[i] - steps[i - 1]).total_seconds() if i else a.step_s
                    yield (t, BULK + rank * 10 ** 9 + i, wrap(t, style.step(t + off, k, loss(k), st, bar[1] + off)))
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
                                                             self.comm(a, rank), j + 1, rank // half, rank))
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

    def rank_named(self, a: Attempt, f: Failure) -> bool:
        """Whether the logs name the culprit's rank (every worker line carries its rank in these layouts)."""
        return True

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
            port = rnd.randint(32768, 60999)
            self.worker(a, rank, tt, N.ib_completion_error(rh, pid, pid + 40, self.cuda_dev(a, rank), r.ip[other], port,
                                                           r.ip[rh], f"mlx5_{rank % r.gpus}"))
            self.worker(a, rank, tt, N.net_error_chain(rh, pid, pid + 40, self.cuda_dev(a, rank)))
            if f.cascade == "rejoin" and rh != h:
                continue       # stopped by its agent when the lost link's node restarts (elastic), before it aborts
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
        """The end of an attempt as the launcher tells it (one end_<ending> method per ending); sets a.end."""
        if a.ending == "running":
            a.end = self.last_progress(a)      # the logs end while it trains
            return
        getattr(self, "end_" + a.ending)(a, exits, nxt)

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
