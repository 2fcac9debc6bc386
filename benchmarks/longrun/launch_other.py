"""Launchers without torchrun: sbatch + srun --label (Slurm daemons' logs too), DeepSpeed's launcher under srun
(one task a node), Open MPI's mpirun inside an sbatch job, and the DeepSpeed launcher over pdsh (HELD OUT)."""

from __future__ import annotations

import datetime as dt

from emit import deepspeed as D
from emit import openmpi as M
from emit import slurm as S
from emit import timefmt as TF

from .plan import ENTRY
from .render import Render

SRUN_WHAT = {1: "Exited with exit code 1", -6: "Aborted", -9: "Killed", -11: "Segmentation fault", -15: "Terminated"}


def deepspeed_rank_named(f) -> bool:
    """DeepSpeed's launcher names the last command it spawned, not the worker that failed, and srun or pdsh
    name the node: a segfault that prints nothing, or only faulthandler's dump into an output every worker
    of the node shares, names no rank."""
    return not (f.story == "segfault" and f.telling in ("silent", "faulthandler"))


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
        return cg, f"{cg}/task_{self.memcg_task(a, rank)}"

    def memcg_task(self, a, rank) -> int:
        """The step's task whose cgroup holds `rank`'s process."""
        return rank % self.r.gpus

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

    def report_exits(self, a, exits: dict):
        """srun's task-exit lines (grouped per node and reason, as srun batches them) and slurmd's."""
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

    def step_tasks(self, a):
        """(host, task id, pid) of step 0's tasks: one a rank."""
        return [(self.host(a, rank), rank, a.pids[rank]) for rank in self.ranks()]

    def end_complete(self, a, exits, nxt):
        rnd = self.r.rnd
        t = a.t_stop + dt.timedelta(seconds=rnd.uniform(1, 5))
        for h, task, pid in self.step_tasks(a):
            self.slurmd(h, t, lambda L, task=task, pid=pid: S.task_exit(L, a.job, 0, task, pid, 0))
        self.ctl(t + dt.timedelta(seconds=1), lambda L: S.job_complete(L, a.job, 0)[0])
        self.ctl(t + dt.timedelta(seconds=1), lambda L: S.job_complete(L, a.job, 0)[1])
        a.end = t

    def end_cancel(self, a, exits, nxt):
        r, rnd = self.r, self.r.rnd
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

    def step_oom(self, a, exits) -> None:
        """The cgroup OOM of step 0 as slurmd and slurmstepd (in the job's output) tell it."""
        r, f = self.r, a.failure
        if f.story == "host_oom" and f.telling == "oom_rank":
            t = exits[f.rank][0] + dt.timedelta(seconds=0.2)
            self.slurmd(f.host, t, lambda L: S.oom_event(L, a.job, 0, new_form=r.seed % 2 == 0))
            self.jobout(a, t, S.stepd_oom_in_output(a.job, 0, new_form=r.seed % 2 == 0))

    def end_failure(self, a, exits, nxt):
        rnd = self.r.rnd
        f = a.failure
        frozen = f.host if f.story == "node_freeze" else None
        self.step_oom(a, exits)
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
            self.jobout(a, tk, S.srun_terminating(a.job, 0) if self.r.kill_on_bad_exit else
                        f"srun: Terminating StepId={a.job}.0")
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
        self.slurm_end(a, exits, nxt, frozen)

    def node_lost(self, a, t, node) -> None:
        """What the job's output says when Slurm marks a frozen node down (srun's node failure)."""
        self.jobout(a, t, S.srun_node_failure(node))

    def slurm_end(self, a, exits, nxt, frozen) -> None:
        """After the last process exited: slurmctld notices a frozen node, requeues or ends the job."""
        r, rnd = self.r, self.r.rnd
        f = a.failure
        t_done = max(v[0] for v in exits.values() if isinstance(v, tuple)) + dt.timedelta(seconds=0.5)
        requeue = nxt is not None and r.mechanism == "requeue"
        if frozen:
            tn = t_done + dt.timedelta(seconds=rnd.uniform(20, 120))
            self.ctl(tn, lambda L: S.not_responding(L, frozen, False))
            self.ctl(tn + dt.timedelta(seconds=60), lambda L: S.not_responding(L, frozen, True))
            t_done = tn + dt.timedelta(seconds=60)
            self.node_lost(a, t_done, frozen)
            if requeue:
                self.ctl(t_done, lambda L: S.requeue_node_fail(L, a.job, frozen))
            else:
                self.ctl(t_done, lambda L: S.kill_on_failed_node(L, a.job, frozen))
        elif requeue:
            tq = t_done + dt.timedelta(seconds=rnd.uniform(0.5, 3))
            self.ctl(tq, lambda L: S.requeue_request(L, a.job))
            h0 = a.hosts[0]
            tc = tq + dt.timedelta(seconds=0.1)
            self.slurmd(h0, tc, lambda L: S.stepd_cancelled(L, a.job, 0, h0, "JOB REQUEUE", job_level=True))
            self.jobout(a, tc, S.stepd_in_output(self.lt(h0, tq), a.job, 0, h0, "JOB REQUEUE", job_level=True))
            t_done = tq + dt.timedelta(seconds=0.2)
        else:
            code = exits[f.rank][1] if f.rank is not None and isinstance(exits.get(f.rank), tuple) else 1
            self.ctl(t_done, lambda L: S.job_complete(L, a.job, 1 if code else 0)[0])
            self.ctl(t_done, lambda L: S.job_complete(L, a.job, 1)[1])
        if requeue:
            self.ctl(t_done + dt.timedelta(seconds=rnd.uniform(2, 12)), lambda L: S.requeuing(L, a.job))
        a.end = t_done

def _failed(exit) -> bool:
    """A worker's exit (t, code, why) that is a failure: not a clean end, not a SIGTERM its launcher sent."""
    return isinstance(exit, tuple) and exit[1] not in (0, -15)


class DeepspeedSrun(SlurmSrun):
    """sbatch + `srun --ntasks-per-node=1 deepspeed --no_ssh --node_rank=$SLURM_NODEID train.py`: DeepSpeed's
    runner.py without ssh starts launch.py on its own node, which spawns one worker per GPU. One srun task per
    NODE (the task id is the node's index, not a rank). The workers' output reaches the job's output untagged
    (srun --label puts the node's index before it), or each rank writes its own file (launch.py
    --enable_each_rank_log=DIR: DIR/<launch time>_rank<N>.log). A worker that fails is noticed by its node's
    launch.py, which kills its local workers and names the LAST command it spawned, whichever one failed
    (sigkill_handler), and exits with the worker's code (sys.exit(-11): status 245); srun sees that task end.
    Sources: deepspeed/launcher/runner.py (--no_ssh, --node_rank) and launch.py (main, sigkill_handler);
    Slurm's srun --label and task exit reports as in SlurmSrun."""

    def __init__(self, run):
        super().__init__(run)
        self.label = run.rnd.random() < 0.5
        self.rank_logs = "/workspace/ds_logs" if run.rnd.random() < 0.4 else None
        self.node_width = len(str(run.nnodes - 1))

    def cuda_dev(self, a, rank):
        return rank % self.r.gpus          # launch.py sets CUDA_VISIBLE_DEVICES to every local GPU

    def node_of(self, a, rank) -> int:
        return rank // self.r.gpus

    def node_ranks(self, i: int) -> range:
        return range(i * self.r.gpus, (i + 1) * self.r.gpus)

    def node_wrap(self, i):
        lab = f"{i:>{self.node_width}}: " if self.label else ""
        return lambda t, text: lab + text

    def route(self, a, rank, out=False):
        if self.rank_logs:
            h = self.host(a, rank)
            stamp = self.lt(h, a.rdzv_done).strftime("%Y%m%d%H%M%S")
            return f"ds_logs/{stamp}_rank{rank}.log", (lambda t, text: text)
        return self.out_file(a), self.node_wrap(self.node_of(a, rank))

    def node_out(self, a, i, t, text):
        self.s.add(self.out_file(a), t, self.node_wrap(i)(t, text))

    def memcg_task(self, a, rank) -> int:
        return self.node_of(a, rank)

    def launch(self, a):
        super().launch(a)
        r, rnd = self.r, self.r.rnd
        info = D.world_info_b64(a.hosts, r.gpus)
        for i, h in enumerate(a.hosts):
            t = a.rdzv_done + dt.timedelta(seconds=0.8 + rnd.uniform(0, 1.5))
            L = self.lt(h, t)
            self.node_out(a, i, t, D.runner_cmd_local(L, info, a.hosts[0], r.master_port, i, ENTRY, self.rank_logs))
            head = D.launch_header(L, a.hosts, r.gpus, i)   # launch.py prints the mapping after its third line
            for x in head[:2] + [D.global_rank_mapping(L, a.hosts, r.gpus)] + head[2:]:
                self.node_out(a, i, t, x)
            for lr in range(r.gpus):
                rank = i * r.gpus + lr
                ts = t + dt.timedelta(milliseconds=30 + 20 * lr)
                self.node_out(a, i, ts, D.spawned(self.lt(h, ts), a.pids[rank], ENTRY, lr))

    def cascade(self, a, f, exits):
        """The failing worker's own launcher kills its node-mates at once: they log no timeout."""
        rnd = self.r.rnd
        own = exits.get(f.rank) if f.rank is not None else None
        if isinstance(own, tuple) and own[1] != 0 and f.cascade != "rejoin":
            for rank in self.node_ranks(self.node_of(a, f.rank)):
                if rank != f.rank and rank not in exits:
                    exits[rank] = (own[0] + dt.timedelta(seconds=rnd.uniform(0.03, 0.12)), -15, "launcher_kill")
        super().cascade(a, f, exits)
        # a node whose worker failed: its launcher kills the others still running (the hung rank, too)
        for i in range(len(a.hosts)):
            bad = sorted(exits[k][0] for k in self.node_ranks(i) if _failed(exits.get(k)))
            if not bad:
                continue
            tk = bad[0] + dt.timedelta(seconds=rnd.uniform(0.03, 0.12))
            for k in self.node_ranks(i):
                v = exits.get(k)
                still_running = k in exits and v is None
                if still_running or isinstance(v, tuple) and v[0] > tk:
                    exits[k] = (tk, -15, "launcher_kill")

    def rank_named(self, a, f) -> bool:
        # a rank's own file (--enable_each_rank_log) holds its faulthandler dump
        return deepspeed_rank_named(f) or bool(self.rank_logs) and f.telling == "faulthandler"

    def report_exits(self, a, exits: dict):
        """Each node's launch.py reports its first failed worker and exits; srun and slurmd see the task (the
        node) end."""
        for i, h in enumerate(a.hosts):
            local = [k for k in self.node_ranks(i) if isinstance(exits.get(k), tuple)]
            if not local:
                continue
            first = min(local, key=lambda k: (not _failed(exits[k]), exits[k][0]))
            t1, code, why = exits[first]
            failed = _failed(exits[first])
            tl = t1 + dt.timedelta(seconds=0.02) if failed else min(exits[k][0] for k in local)
            L = self.lt(h, tl)
            for k in self.node_ranks(i):
                self.node_out(a, i, tl, D.killing(L, a.pids[k]))
            if failed:
                self.node_out(a, i, tl, D.exits_with(L, ENTRY, self.r.gpus - 1, code))
                status = code % 256
            else:
                self.node_out(a, i, tl, D.main_received(L, "SIGTERM"))
                status = 1
            te = tl + dt.timedelta(seconds=0.05)
            oom = any(exits[k][2] == "oom" for k in local)
            what = "Out Of Memory" if oom else f"Exited with exit code {status}"
            self.slurmd(h, te, lambda L, i=i, h=h, status=status: S.task_exit(L, a.job, 0, i, a.agent_pid[h], status))
            self.jobout(a, te + dt.timedelta(milliseconds=150), S.srun_task_error(h, [i], what))


class MpirunSlurm(SlurmSrun):
    """sbatch + `mpirun --tag-output [--timestamp-output] python train.py` (Open MPI 4 under Slurm: mpirun starts
    one orted a node through srun, step 0; MASTER_ADDR is the first node). Every process's line reaches the job's
    output through mpirun behind '[1,<rank>]<stdout|stderr>:', stamped with mpirun's own clock (the first node's)
    under --timestamp-output. When the first process exits non-zero or dies of a signal, mpirun kills the others
    at once and reports that one (its rank, and its node for a signal); a frozen node's orted goes silent and
    mpirun reports it lost when Slurm marks the node down. Restarts: requeue or resubmit, as SlurmSrun.
    Sources: emit/openmpi.py. Added in session 19: not in the held-out family."""

    def __init__(self, run):
        super().__init__(run)
        self.stamped = run.rnd.random() < 0.4

    def cuda_dev(self, a, rank):
        return rank % self.r.gpus          # one process a GPU, CUDA_VISIBLE_DEVICES left whole

    def route(self, a, rank, out=False):
        def wrap(t, text, rank=rank):
            stream = "stdout" if out or " NCCL " in text else "stderr"
            return M.tag(rank, stream, self.lt(a.hosts[0], t) if self.stamped else None) + text
        return self.out_file(a), wrap

    def memcg_task(self, a, rank) -> int:
        return a.hosts.index(self.host(a, rank))    # the node's orted is the step's task

    def mpirun_out(self, a, t, lines: list[str]) -> None:
        for x in lines:
            self.jobout(a, t, x)

    def report_exits(self, a, exits: dict):
        """mpirun reports the first process that failed (the others it killed are not reported)."""
        failed = sorted((v[0], k) for k, v in exits.items() if _failed(v))
        if not failed:
            return
        t, rank = failed[0]
        code = exits[rank][1]
        tr = t + dt.timedelta(seconds=0.05)
        self.mpirun_out(a, tr, M.abort_banner())
        if code < 0:
            pid = a.pids[rank] if self.r.rnd.random() < 0.5 else 0
            self.mpirun_out(a, tr, M.noticed_signal(rank, pid, self.host(a, rank), -code))
        else:
            self.mpirun_out(a, tr, M.nonzero_exit(a.job % 65536, rank, code))

    def node_lost(self, a, t, node) -> None:
        self.mpirun_out(a, t, M.lost_daemon(a.job % 65536, a.hosts[0], a.hosts.index(node), node))
        super().node_lost(a, t, node)

    def step_tasks(self, a):
        return [(h, i, a.agent_pid[h]) for i, h in enumerate(a.hosts)]   # the orteds, one a node

    def end_failure(self, a, exits, nxt):
        rnd = self.r.rnd
        f = a.failure
        frozen = f.host if f.story == "node_freeze" else None
        self.step_oom(a, exits)
        timed = sorted((v[0], k) for k, v in exits.items() if isinstance(v, tuple))
        first = next((t for t, k in timed if _failed(exits[k])), None)
        if first is not None:
            # mpirun kills every process still running, and the ones that would have ended later
            tk = first + dt.timedelta(seconds=rnd.uniform(0.2, 1.0))
            for k, v in list(exits.items()):
                if v is None or isinstance(v, tuple) and v[0] > tk and k != f.rank:
                    exits[k] = (tk + dt.timedelta(seconds=rnd.uniform(0.05, 0.5)), -15, "sigterm")
        self.report_exits(a, exits)
        self.slurm_end(a, exits, nxt, frozen)


class PdshDeepspeed(Render):
    """HELD OUT. `deepspeed --hostfile` over pdsh: one console, every remote line prefixed 'host: ' by pdsh;
    DeepSpeed's per-node launcher (launch.py) kills its processes when one fails. Restarts: new jobs."""

    kernel_form = "journal"

    def rank_named(self, a, f) -> bool:
        return deepspeed_rank_named(f)

    def path(self, a):
        return f"logs/train_{a.job}.log"

    def route(self, a, rank, out=False):
        h = self.host(a, rank)
        return self.path(a), (lambda t, text: f"{h}: {text}")

    def remote(self, a, h, t, text):
        self.s.add(self.path(a), t, f"{h}: {text}")

    def launch(self, a):
        r, rnd = self.r, self.r.rnd
        h0 = a.hosts[0]
        self.s.add(self.path(a), a.launch,
                   D.runner_cmd(self.lt(h0, a.launch), a.hosts, r.gpus, r.ip[h0], r.master_port, "train.py"))
        for i, h in enumerate(a.hosts):
            t = a.launch + dt.timedelta(seconds=rnd.uniform(0.5, 3.0))
            for x in D.launch_header(self.lt(h, t), a.hosts, r.gpus, i):
                self.remote(a, h, t, x)
            for lr in range(r.gpus):
                rank = i * r.gpus + lr
                self.remote(a, h, t, D.spawned(self.lt(h, t), a.pids[rank], "train.py", lr))
        a.boundary = "deepspeed launch" if a.id == 1 else f"resubmitted deepspeed job {a.job}"

    def end_complete(self, a, exits, nxt):
        t = a.t_stop + dt.timedelta(seconds=2)
        for rank in self.ranks():
            self.remote(a, self.host(a, rank), t, D.success(self.lt(self.host(a, rank), t), a.pids[rank]))
        a.end = t

    def end_cancel(self, a, exits, nxt):
        t = a.t_stop
        for h in a.hosts:
            for rank in self.local(a, h):
                self.remote(a, h, t, D.killing(self.lt(h, t), a.pids[rank]))
            self.remote(a, h, t, D.log(self.lt(h, t), "INFO", "launch.py:344:sigkill_handler",
                                       "Main process received SIGTERM, exiting"))
        a.end = t + dt.timedelta(seconds=1)

    def end_failure(self, a, exits, nxt):
        r, rnd = self.r, self.r.rnd
        f = a.failure
        h0 = a.hosts[0]
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
