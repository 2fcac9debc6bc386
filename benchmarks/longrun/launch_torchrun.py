"""torchrun on every node: the agent's console with --tee'd worker lines, the --log-dir layout, and a
Kubeflow PyTorchJob (CRI pod logs, kubelet journal, kubectl snapshots) running torchrun in each pod."""

from __future__ import annotations

import datetime as dt

from emit import k8s as K
from emit import torch as T

from .plan import ENTRY
from .render import EXC, Render
from .sink import stable_token


class Torchrun(Render):
    """torchrun on every node (its agent's console, --tee'd worker lines). Elastic restarts keep the agents
    (restart_count per agent); a resubmitted job starts new agents and new files."""

    def __init__(self, run):
        super().__init__(run)
        self.remaining = {h: run.max_restarts for h in run.pool}
        self.rc = {h: 0 for h in run.pool}
        self.rdzv_t: dict = {}    # host -> when its agent logged "Rendezvous'ing worker group" (next attempt)
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
                t1, t2 = t + dt.timedelta(milliseconds=25), t + dt.timedelta(milliseconds=26)
                self.agent(a, h, t1, T.starting_workers(self.lt(h, t1), pid))
                self.agent(a, h, t2, T.rendezvousing(self.lt(h, t2), pid))
                self.rdzv_t[h] = t2
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
    def end_complete(self, a, exits, nxt):
        rnd = self.r.rnd
        t_done = a.t_stop + dt.timedelta(seconds=rnd.uniform(1.0, 4.0))
        for h in a.hosts:
            pid = a.agent_pid[h]
            self.agent_block(a, h, t_done, T.succeeded(self.lt(h, t_done), pid))
            t_uv = t_done + dt.timedelta(seconds=0.3)
            self.agent_block(a, h, t_uv, T.uv_loop_close(self.lt(h, t_uv)))
        a.end = t_done + dt.timedelta(seconds=0.4)

    def end_cancel(self, a, exits, nxt):
        r = self.r
        t = a.t_stop
        for h in a.hosts:
            pid = a.agent_pid[h]
            self.agent(a, h, t, T.agent_sigterm(self.lt(h, t), pid))
            for rank in self.local(a, h):
                self.agent(a, h, t, T.sigterm(self.lt(h, t), pid, a.pids[rank]))
            self.agent_block(a, h, t + dt.timedelta(seconds=1.5), T.agent_signal_traceback(r.site, self.exe, pid))
        a.end = t + dt.timedelta(seconds=1.6)

    def end_rdzv_timeout(self, a, exits, nxt):
        r, rnd = self.r, self.r.rnd
        f = a.failure
        t_end = a.launch
        for h in a.hosts:
            if h == f.host:
                continue
            t = self.rdzv_t.get(h, a.launch) + dt.timedelta(seconds=r.join_timeout + rnd.uniform(0, 1.0))
            self.agent_block(a, h, t, T.rendezvous_timeout_traceback(r.site, self.exe,
                                                                      restart=not self.fresh_agents(a)))
            self.agent_block(a, h, t, T.uv_loop_close(self.lt(h, t)))
            t_end = max(t_end, t)
        a.end = t_end
        first = min(self.rdzv_t.get(h, a.launch) for h in a.hosts if h != f.host)
        f.t = first + dt.timedelta(seconds=r.join_timeout)       # the verdict's time: the join deadline

    def end_failure(self, a, exits, nxt):
        r, rnd = self.r, self.r.rnd
        f = a.failure
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
                                     "exitcode": v[1], "pid": a.pids[rank],
                                     "message": self.error_message(a, rank, v[1])})
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
                others = [x for x in fl if x["rank"] != r_first]
                self.agent_block(a, h, t_x, T.child_failed(r.site, self.exe, ENTRY, h, root + others))
                self.agent_block(a, h, t_x, T.uv_loop_close(self.lt(h, t_x)))
                exits[("agent", h)] = (t_x, 1, "agent")
                if self.elastic and h == f.host:
                    closing = True
        a.end = max(v[0] for v in exits.values() if isinstance(v, tuple))
        if restart and nxt is not None and self.rdzv_t:
            joined = [t for hh, t in self.rdzv_t.items() if hh in a.hosts and hh != frozen]
            nxt.launch = min(joined)
            if nxt.ending != "rdzv_timeout" and max(joined) >= nxt.rdzv_done:
                raise AssertionError(f"gen_longrun: an agent rejoins at {max(joined)}, after the rendezvous of attempt "
                                     f"{nxt.id} completed at {nxt.rdzv_done} ({r.story}/{r.layout}/{r.seed})")
            if nxt.ending == "rdzv_timeout":
                nxt.boundary = "torchrun elastic restart: the agents rendezvous again (the group never assembles)"

    def local(self, a, h):
        i = a.hosts.index(h)
        return range(i * self.r.gpus, (i + 1) * self.r.gpus)

    def error_message(self, a, rank, code):
        f = a.failure
        if code is not None and code > 0 and f and f.rank == rank and f.story == "exception":
            return (f'Traceback (most recent call last):\n  File "{ENTRY}", line 251, in train_one_epoch\n'
                    + EXC[f.telling][0])
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
        name = "stdout" if out else "stderr"
        path = f"torchelastic/{h}/{self.run_dir(h, a)}/attempt_{rc}/{rank % self.r.gpus}/{name}.log"
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
        h = self.host(a, rank)
        return self.node_file(a, h), (lambda t, text: K.cri(self.cri_t(h, t), pre + text, stream))

    def cri_t(self, host, t):
        """containerd stamps a line on the node's clock when it reads it, a moment after it was written."""
        return self.lt(host, t) + dt.timedelta(milliseconds=1)

    def agent(self, a, host, t, text):
        self.s.add(self.node_file(a, host), t, K.cri(self.cri_t(host, t), text))

    def journal(self, h, t, fn):
        """A kubelet line in the node's journal: fn(node clock time, pod, uid) -> text."""
        pod, uid = self.pods[h]
        self.s.add(f"journal/{h}.log", t, fn(self.node_local(h, t), pod, uid))

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
                cid = self.cid(h, a.container_n)
                self.journal(h, a.launch - dt.timedelta(milliseconds=300),
                             lambda L, pod, uid: K.pleg(L, h, self.kpid[h], r.ns, pod, uid, "ContainerStarted", cid))
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
            self.container_died(a, h, t, 1)          # torchrun exits 1 after its workers failed
            if nxt is not None:
                secs = min(300, 10 * 2 ** a.container_n)
                self.journal(h, t + dt.timedelta(seconds=0.03),
                             lambda L, pod, uid: K.backoff(L, h, self.kpid[h], r.ns, pod, uid, "pytorch", secs))
        if nxt is not None and nxt.ending == "rdzv_timeout":
            nxt.boundary = "pod containers restarted; torchrun's rendezvous waits for the pod of the lost node"
        a.end = max(a.end, max((v[0] for v in exits.values() if isinstance(v, tuple)), default=a.end))

    def container_died(self, a, h, t, code):
        cid = self.cid(h, a.container_n)
        self.journal(h, t, lambda L, pod, uid: K.pleg(L, h, self.kpid[h], self.r.ns, pod, uid, "ContainerDied", cid))
        a.container_exit = getattr(a, "container_exit", {})
        a.container_exit[h] = (t, code)

    def finish(self):
        r = self.r
        atts = r.attempts
        last = atts[-1]
        t_now = (last.end or last.launch) + dt.timedelta(seconds=r.rnd.uniform(30, 300))
        cp = lambda t: t + dt.timedelta(seconds=r.offsets["control-plane"])  # noqa: E731
        events, rows = [], []
        for h in r.pool[:r.nnodes]:
            pod, uid = self.pods[h]
            # the attempts a container of this pod ran in (none on a lost node in a rendezvous that never completes)
            mine = [a for a in atts if h in a.hosts and not (a.ending == "rdzv_timeout" and h == a.failure.host)]
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
            over = f" (x{restarts + 1} over {K.age(t_now - atts[0].launch)})" if restarts else ""
            evs = [("Normal", "Scheduled", K.age(t_now - atts[0].launch), "default-scheduler",
                    f"Successfully assigned {r.ns}/{pod} to {h}"),
                   ("Normal", "Started", K.age(t_now - cur.launch) + over, "kubelet", "Started container pytorch")]
            if restarts:
                evs.append(("Warning", "BackOff", K.age(t_now - mine[-2].end), "kubelet",
                            f"Back-off restarting failed container pytorch in pod {pod}_{r.ns}({uid})"))
            lines = K.describe_pod(pod, r.ns, h, r.ip[h], cp(atts[0].launch), self.cid(h, cur.container_n), self.image,
                                   state, lst, restarts, r.gpus, r.nnodes, evs)
            self.s.add_block(f"kubectl_describe_pod_{pod}.txt", t_now, lines)
            status = "Unknown" if frozen_here else ("Error" if ce and ce[1] else ("Completed" if ce else "Running"))
            rows.append((pod, "0/1" if ce or frozen_here else "1/1", status,
                         f"{restarts} ({K.age(t_now - cur.launch)} ago)" if restarts else "0",
                         K.age(t_now - atts[0].launch), r.ip[h], h))
            for a in mine[:-1]:
                e = getattr(a, "container_exit", {}).get(h)
                if e:
                    events.append((e[0], "Warning", "BackOff", f"pod/{pod}",
                                   f"Back-off restarting failed container pytorch in pod {pod}_{r.ns}({uid})"))
        for a in atts:
            lost = 1 if a.failure and a.failure.story == "node_freeze" else 0
            if a.failure and a.ending == "failure" and a is not atts[-1]:
                events.append((a.end, "Warning", "PyTorchJobRestarting", f"pytorchjob/{r.jobname}",
                               f"PyTorchJob {r.jobname} is restarting because {len(a.hosts) - lost} Worker replica(s) "
                               "failed."))
            if lost:
                events.append((a.failure.t + dt.timedelta(seconds=40), "Normal", "NodeNotReady",
                               f"pod/{self.pods[a.failure.host][0]}", "Node is not ready"))
        if atts[-1].ending in ("failure", "rdzv_timeout"):
            events.append((atts[-1].end, "Warning", "PyTorchJobFailed", f"pytorchjob/{r.jobname}",
                           f"PyTorchJob {r.ns}/{r.jobname} is failed because {r.nnodes - 1} Worker replica(s) failed."))
        events.sort(key=lambda e: e[0])
        rows_ev = [(K.age(t_now - e[0]),) + e[1:] for e in events]
        self.s.add_block("kubectl_get_events.txt", t_now, K.get_events(r.ns, rows_ev))
        self.s.add_block("kubectl_get_pods.txt", t_now, K.get_pods(r.ns, rows))
