#!/usr/bin/env python3
"""Capture REAL failure logs of distributed training jobs, with ground truth.

    capture.py list                       scenarios, one a line
    capture.py run SCENARIO --out DIR     run one incident, write its bundle to DIR
    capture.py run-all --out ROOT [--include-slow] [NAME_PREFIX...]

A bundle is a directory in the native layout of the software that produced
it (nothing is rewritten): per-node `<host>.log` for torchrun agents,
torchrun --log-dir trees `torchelastic/<host>/<run>/attempt_0/<local_rank>/
{stdout,stderr}.log,error.json`, the Slurm job output `slurm-<id>.out`, byte
slices of the daemon logs `slurm/slurmctld.log`, `slurm/slurmd-<node>.log`,
`sacct_P.txt` (sacct -P), `sacct.json`, `scontrol_show_job.txt`, plus
`truth.json` (what really happened, recorded by the harness) and
`expected_verdict.json` (the same in the verdict shape of design.md §4).

Stdlib only: runs with any Python >= 3.9. The training job itself runs in
the torch venv ($RANKTRACE_TORCH_VENV, default /opt/ranktrace-torch; made by
install.sh). Slurm scenarios need the cluster of slurm_up.sh.

Ground truth never reaches the logs: the fault is handed to the job in the
RT_FAULTS environment variable (or injected from outside by PID), the job
never prints it, every path, job name and rendezvous id in the logs is
neutral, and a leak check refuses a bundle whose logs mention the scenario or
its fault spec.
"""
import argparse
import datetime as dt
import glob
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import attempts as att  # noqa: E402  (next to this file; stdlib only)
VENV = os.environ.get("RANKTRACE_TORCH_VENV", "/opt/ranktrace-torch")
PYTHON = os.path.join(VENV, "bin", "python")
TORCHRUN = os.path.join(VENV, "bin", "torchrun")
JOB_DIR = "/srv/train/job"            # neutral place the job files are copied to
RUNTIME = "/var/tmp/trainjobs"       # per-run pid files, log dirs, job output
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
SLURM_LOGDIR = "/var/log/rtcap-slurm"
SLURM_STATE = "/run/ranktrace-capture-slurm"   # PIDs recorded by slurm_up.sh
SLURM_CONF = "/etc/ranktrace-capture/slurm.conf"  # our cluster's config (slurm_up.sh)
os.environ["SLURM_CONF"] = SLURM_CONF
SLURM_NODES = ["n1", "n2", "n3", "n4"]

# design.md section 4: `kind` is exactly one of these
KINDS = ("none", "exception", "crash", "killed", "oom", "gpu_oom", "gpu_fault", "cuda_error",
         "hang", "node_failure", "rendezvous_timeout", "network_error", "desync",
         "time_limit", "cancelled", "scheduling", "unknown",
         "control_plane")   # issue 14: etcd / kube-apiserver saturated (no capture scenario yet)

SACCT_FIELDS = ("JobID,JobName,Partition,State,ExitCode,DerivedExitCode,NodeList,NNodes,NTasks,"
                "Start,End,Elapsed,TimelimitRaw,MaxRSS,MaxRSSNode,MaxRSSTask,ReqMem,AllocTRES,Reason")

# ------------------------------------------------------------------ scenarios
# Common keys: launcher (torchrun | slurm | slurm_torchrun), kind (taxonomy),
# description, slow (not in the default set), skew {host: seconds}.
# torchrun: hosts, nproc, rdzv (static | c10d), port, logdir, env, faults
#   (RT_FAULTS, in-process), action (injected from outside), missing (host
#   indices never started), rdzv_conf.
# slurm: nodes, tasks_per_node, mem, time_min, env, faults, action, srun_opts.
# The culprit (rank or host) is given by the fault; truth is built from what
# the harness observed (pid files, signal times), not from the scenario text.
SCENARIOS = {}


def scenario(name, **kw):
    assert kw["kind"] in KINDS, kw["kind"]
    SCENARIOS[name] = dict(name=name, **kw)


scenario("tr_clean", launcher="torchrun", kind="none",
         description="Clean run: 4 nodes x 2 ranks, static rendezvous, 12 steps, every rank exits 0.",
         hosts=["trn-a17", "trn-a18", "trn-a19", "trn-a20"], rdzv="static", port=38511,
         logdir=True, env={"RT_STEPS": "12"})
scenario("tr_exception", launcher="torchrun", kind="exception",
         description="Rank 3 (node 2, local rank 1) raises RuntimeError while loading the batch of "
                     "step 10 and exits 1; the others then fail in the all_reduce. Node gpu-b03's "
                     "clock runs 37 s ahead (libfaketime). Static rendezvous, per-rank --log-dir tree.",
         hosts=["gpu-b01", "gpu-b02", "gpu-b03", "gpu-b04"], rdzv="static", port=38521,
         logdir=True, env={"RT_STEPS": "40"}, faults="3:10:exception", culprit_rank=3,
         skew={"gpu-b03": 37.0})
scenario("tr_sigkill", launcher="torchrun", kind="killed",
         description="Rank 5 (node 3, local rank 1) is killed with SIGKILL (kill -9 <pid>, from "
                     "outside) once it has logged step 10; no traceback. 4 nodes x 2 ranks, c10d "
                     "rendezvous, per-rank --log-dir tree with --tee.",
         hosts=["cn-0412", "cn-0413", "cn-0414", "cn-0415"], rdzv="c10d", port=38531,
         logdir=True, env={"RT_STEPS": "60"}, action=dict(type="sigkill", rank=5, at_step=10))
scenario("tr_segfault", launcher="torchrun", kind="crash",
         description="Rank 6 (node 4, local rank 0) dereferences NULL through ctypes at step 8: a "
                     "real SIGSEGV (faulthandler prints 'Fatal Python error: Segmentation fault').",
         hosts=["dgx-s01", "dgx-s02", "dgx-s03", "dgx-s04"], rdzv="static", port=38541,
         env={"RT_STEPS": "40"}, faults="6:8:segfault", culprit_rank=6)
scenario("tr_oom_rlimit", launcher="torchrun", kind="oom",
         description="Rank 2 (node 2, local rank 0) runs out of host memory at step 6: its address "
                     "space is capped (RLIMIT_AS = VmSize + 1 GiB) and it allocates a 4 GiB buffer; "
                     "torch's DefaultCPUAllocator fails with ENOMEM (error code 12). 3 nodes x 2 "
                     "ranks; worker output only in the --log-dir files (no tee).",
         hosts=["dgx-f07", "dgx-f08", "dgx-f09"], rdzv="static", port=38551,
         logdir=True, tee=False, env={"RT_STEPS": "40"}, faults="2:6:oom_rlimit:4",
         culprit_rank=2)
scenario("tr_hang", launcher="torchrun", kind="hang",
         description="Rank 6 (node 4, local rank 0) stops in its data loader at step 8 and never "
                     "enters the all_reduce; the other ranks time out after the 20 s process-group "
                     "timeout (gloo). Node node-c12's clock runs 23 s BEHIND (libfaketime -23 s). "
                     "TORCH_DISTRIBUTED_DEBUG=DETAIL.",
         hosts=["node-c11", "node-c12", "node-c13", "node-c14"], rdzv="static", port=38561,
         logdir=True, env={"RT_STEPS": "60", "TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
         faults="6:8:hang", culprit_rank=6, skew={"node-c12": -23.0})
scenario("tr_node_freeze", launcher="torchrun", kind="node_failure",
         description="Half-dead node: SIGSTOP to the torchrun agent and both workers of the third "
                     "node (hpc-d33) once its ranks reached step 8 (alive, silent). The other "
                     "nodes time out in the all_reduce (20 s) and exit; the frozen processes are "
                     "SIGKILLed afterwards. c10d rendezvous.",
         hosts=["hpc-d31", "hpc-d32", "hpc-d33", "hpc-d34"], rdzv="c10d", port=38571,
         env={"RT_STEPS": "80"}, action=dict(type="freeze_node", host_index=2, at_step=8))
scenario("tr_node_sigkill", launcher="torchrun", kind="node_failure",
         description="A whole node dies at once: SIGKILL to the torchrun agent and both workers of "
                     "the second node (pt-w02) together once its ranks reached step 8 (like a "
                     "kernel panic, power loss or a container OOM-kill of the whole pod); that node "
                     "logs nothing more. The others fail in the all_reduce. Static rendezvous.",
         hosts=["pt-w01", "pt-w02", "pt-w03", "pt-w04"], rdzv="static", port=38575,
         env={"RT_STEPS": "60"}, action=dict(type="kill_node", host_index=1, at_step=8))
scenario("tr_rdzv_missing_node", launcher="torchrun", kind="rendezvous_timeout",
         description="The job expects 4 nodes (--nnodes=4, c10d, join_timeout=25) but the agent of "
                     "the 4th node (ml-e04) is never started: the rendezvous times out, no rank runs.",
         hosts=["ml-e01", "ml-e02", "ml-e03", "ml-e04"], rdzv="c10d", port=38581,
         rdzv_conf="join_timeout=25", missing=[3], env={"RT_STEPS": "40"})
scenario("tr_rdzv_store_host_missing", launcher="torchrun", kind="rendezvous_timeout",
         description="The node that hosts the c10d rendezvous store (ml-g01, is_host=1) is never "
                     "started; the 3 others (is_host=0) cannot reach the store and give up "
                     "(read_timeout=20).",
         hosts=["ml-g01", "ml-g02", "ml-g03", "ml-g04"], rdzv="c10d", port=38591,
         rdzv_conf="join_timeout=25,read_timeout=20", missing=[0], env={"RT_STEPS": "40"})
scenario("tr_double_failure", launcher="torchrun", kind="exception",
         description="Two failures seconds apart: at step 10 every rank spends 8 s in a "
                     "collective-free 'reloading data shard' phase; rank 1 (node 1) raises at once, "
                     "rank 5 (node 3) raises 3 s later. The first failure, rank 1, is the root cause.",
         hosts=["gx-h01", "gx-h02", "gx-h03", "gx-h04"], rdzv="static", port=38601,
         env={"RT_STEPS": "40", "RT_PHASE_AT": "10", "RT_PHASE_SECS": "8"},
         faults="1:10:exception,5:10:slowexc:3", culprit_rank=1, second_rank=5)
# ---- runs that restart (issue 27): several attempts in one bundle. c10d
# rendezvous with TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1: in torch 2.13 the
# agent's shared TCPStore keeps the previous round's keys, and restarted
# workers connect to dead peers (pytorch#135712, #167288; README traps).
RESTART_ENV = {"RT_CKPT_EVERY": "5", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
scenario("tr_restart_resume", launcher="torchrun", kind="exception",
         description="torchrun --max-restarts=2, 2 nodes x 2 ranks, c10d rendezvous; the job saves a "
                     "DCP checkpoint every 5 steps. In the first attempt rank 3 (ra-n02, local rank 1) "
                     "raises RuntimeError at step 12; both agents restart their workers (one whose workers "
                     "failed counts a restart; one whose workers were still healthy restarts on the "
                     "membership change without counting), the new workers load the step-10 "
                     "checkpoint, resume at step 11 and finish all 24 steps: attempt 2 completes.",
         hosts=["ra-n01", "ra-n02"], rdzv="c10d", port=38701, max_restarts=2, logdir=True,
         env=dict(RESTART_ENV, RT_STEPS="24"), faults="3:12:exception@once")
scenario("tr_restart_recurring", launcher="torchrun", kind="crash",
         description="torchrun --max-restarts=2, 3 nodes x 2 ranks, c10d rendezvous, DCP checkpoint every 5 "
                     "steps. The worker on node rc-n02 at local rank 1 (a bad device) segfaults at the 7th "
                     "step it runs, in every attempt: steps 7, 12 and 17, each attempt resuming from the "
                     "last checkpoint. rc-n02's agent restarts twice, then gives up; the run ends failed "
                     "after 3 failed attempts with the same culprit node and local rank.",
         hosts=["rc-n01", "rc-n02", "rc-n03"], rdzv="c10d", port=38711, max_restarts=2, logdir=True,
         env=dict(RESTART_ENV, RT_STEPS="30"), faults="rc-n02/1:+7:segfault", slow=True)
scenario("tr_elastic_node_lost", launcher="torchrun", kind="node_failure",
         description="Elastic torchrun --nnodes=2:3 --max-restarts=2, 3 nodes x 2 ranks, c10d rendezvous, "
                     "DCP checkpoint every 5 steps. Once its ranks logged step 12, node el-n03 dies "
                     "(SIGKILL of its agent and both workers at once). The two surviving agents restart "
                     "their workers and re-rendezvous without it (min_nodes=2 allows it): world size 6 "
                     "becomes 4, the workers load the step-10 checkpoint and complete the 30 steps.",
         hosts=["el-n01", "el-n02", "el-n03"], nnodes="2:3", rdzv="c10d", port=38731, max_restarts=2,
         logdir=True, env=dict(RESTART_ENV, RT_STEPS="30"),
         action=dict(type="kill_node", host_index=2, at_step=12), slow=True)
# ---- Slurm (srun --label launches one task per rank; 2 nodes x 2 tasks)
scenario("slurm_oom_cgroup", launcher="slurm", kind="oom",
         description="Slurm job, 2 nodes x 2 tasks (srun --label --kill-on-bad-exit=1), --mem=1500M "
                     "per node enforced by the cgroup v1 memory controller (OverMemoryKill where "
                     "cgroups are unusable); rank 1 (n1) starts a runaway cache at step 8 and is "
                     "OOM-killed by the kernel.",
         nodes=2, tasks_per_node=2, mem="1500M", time_min=5, srun_opts="--kill-on-bad-exit=1",
         env={"RT_STEPS": "60"}, faults="1:8:grow:64", culprit_rank=1, port=38611)
scenario("slurm_time_limit", launcher="slurm", kind="time_limit",
         description="Slurm job, 2 nodes x 2 tasks training with no end, --time=1: slurmctld "
                     "cancels it DUE TO TIME LIMIT (it checks about every 30 s, so after 60-90 s).",
         nodes=2, tasks_per_node=2, mem="2000M", time_min=1, srun_opts="",
         env={"RT_STEPS": "100000", "RT_STEP_SLEEP": "1.0"}, port=38621, max_wait=240, slow=True)
scenario("slurm_scancel", launcher="slurm", kind="cancelled",
         description="Slurm job, 2 nodes x 2 tasks training; cancelled with 'scancel <jobid>' once "
                     "rank 0 has logged step 10.",
         nodes=2, tasks_per_node=2, mem="2000M", time_min=5, srun_opts="",
         env={"RT_STEPS": "100000", "RT_STEP_SLEEP": "0.5"}, port=38631,
         action=dict(type="scancel", rank=0, at_step=10))
scenario("slurm_node_failure", launcher="slurm", kind="node_failure",
         description="Slurm job, 2 nodes x 2 tasks; once rank 2 (n2) logged step 8, node n2 is "
                     "frozen: SIGSTOP to its slurmd, slurmstepd and task processes. After "
                     "SlurmdTimeout (20 s) slurmctld marks n2 DOWN and the job ends NODE_FAIL. The "
                     "process-group timeout is 300 s so Slurm, not gloo, notices first. n2 is "
                     "thawed afterwards.",
         nodes=2, tasks_per_node=2, mem="2000M", time_min=10, srun_opts="",
         env={"RT_STEPS": "100000", "RT_STEP_SLEEP": "0.5", "RT_PG_TIMEOUT": "300"}, port=38641,
         action=dict(type="freeze_slurm_node", rank=2, at_step=8), max_wait=300, slow=True)
# a --requeue job frozen on n2 after step 8, that runs again and completes
REQUEUE = dict(nodes=2, tasks_per_node=2, mem="2000M", time_min=10, srun_opts="", requeue=True,
               env={"RT_STEPS": "40", "RT_STEP_SLEEP": "0.5", "RT_PG_TIMEOUT": "300", "RT_CKPT_EVERY": "5"},
               action=dict(type="freeze_slurm_node", rank=2, at_step=8), max_wait=480, slow=True)
scenario("slurm_requeue_node_failure", launcher="slurm", kind="node_failure",
         description="Slurm job with --requeue, 2 nodes x 2 tasks (srun --label), DCP checkpoint every 5 "
                     "steps. Once rank 2 (n2) logged step 8, node n2 is frozen (SIGSTOP of its slurmd, "
                     "slurmstepd and tasks); after SlurmdTimeout slurmctld sets n2 DOWN, kills the job "
                     "(NODE_FAIL) and requeues it. The requeued job (same id, Restarts=1) runs on two "
                     "other nodes, loads the last checkpoint and completes its 40 steps. n2 is thawed "
                     "once the job runs again. --open-mode=append keeps both runs in slurm-<id>.out "
                     "(Slurm's default truncates it when the requeued job starts).",
         open_mode="append", port=38721, **REQUEUE)
scenario("slurm_requeue_truncated", launcher="slurm", kind="node_failure",
         description="The same requeue after n2's node failure as slurm_requeue_node_failure, with "
                     "Slurm's default output mode: when the requeued job starts, Slurm truncates "
                     "slurm-<id>.out, so the first run's training output and its 'Node failure' lines "
                     "are gone; only the daemon logs, jobcomp and sacct -D keep the first run.",
         port=38741, **REQUEUE)
scenario("slurm_torchrun_sigkill", launcher="slurm_torchrun", kind="killed",
         description="torchrun under Slurm: sbatch -N 4, 'srun --label' starts one torchrun agent "
                     "per node (2 ranks each, static rendezvous on n1, --tee 3 + --log-dir); rank 5 "
                     "(n3, local rank 1) is SIGKILLed from outside once it logged step 10. Node "
                     "n2's training processes run 37 s ahead (libfaketime).",
         nodes=4, nproc=2, mem="3000M", time_min=5, srun_opts="--kill-on-bad-exit=1",
         env={"RT_STEPS": "80"}, port=38651, action=dict(type="sigkill", rank=5, at_step=10),
         skew={"n2": 37.0})
scenario("slurm_torchrun_exception", launcher="slurm_torchrun", kind="exception",
         description="torchrun under Slurm, 2 nodes x 2 ranks: rank 2 (n2, local rank 0) raises "
                     "RuntimeError at step 12; srun --label, no --kill-on-bad-exit.",
         nodes=2, nproc=2, mem="3000M", time_min=5, srun_opts="",
         env={"RT_STEPS": "40"}, port=38661, faults="2:12:exception", culprit_rank=2, slow=True)


# ------------------------------------------------------------------ helpers
def utc_iso(t):
    if t is None:
        return None
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def slurm_time(s):
    """sacct's local 'YYYY-MM-DDTHH:MM:SS' -> epoch seconds (None: Unknown/None)."""
    try:
        return time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def sh(cmd, timeout=60):
    return subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True, text=True,
                          timeout=timeout)


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


class Run:
    """One capture: the runtime dir, the bundle dir, the event log, the truth."""

    def __init__(self, sc, out):
        self.sc = sc
        self.out = os.path.abspath(out)
        self.tag = "job-" + secrets.token_hex(3)   # neutral name seen in the logs
        self.rt = os.path.join(RUNTIME, self.tag)
        self.piddir = os.path.join(self.rt, "pids")
        self.events = []
        self.commands = []
        self.truth_extra = {}
        self.injected = []   # faults sent from outside: {kind, pid(s), host, rank, time}
        self.t0 = time.time()

    # -------------------------------------------------- bookkeeping
    def ev(self, msg):
        self.events.append(f"{utc_iso(time.time())} {msg}")
        print(f"[capture {time.strftime('%H:%M:%S')}] {msg}", flush=True)

    def prepare(self):
        if os.path.isdir(self.out) and os.listdir(self.out):
            shutil.rmtree(self.out)
        os.makedirs(self.out, exist_ok=True)
        os.makedirs(self.piddir, exist_ok=True)
        self.watch = att.ProcessWatch(self.piddir)
        self.watch.start()
        os.makedirs(JOB_DIR, exist_ok=True)
        shutil.copyfile(os.path.join(HERE, "train.py"), os.path.join(JOB_DIR, "train.py"))
        shutil.copyfile(os.path.join(HERE, "node_launch.sh"), os.path.join(JOB_DIR, "launch.sh"))
        os.chmod(os.path.join(JOB_DIR, "launch.sh"), 0o755)

    def pids(self):
        out = {}
        for f in glob.glob(os.path.join(self.piddir, "rank*.pid")):
            try:
                d = json.load(open(f))
            except (OSError, ValueError):
                continue
            out[d["rank"]] = d
        return out

    def fault_notes(self):
        out = {}
        for f in glob.glob(os.path.join(self.piddir, "fault_rank*.json")):
            d = json.load(open(f))
            out[d["rank"]] = d
        return out

    def all_faults(self):
        """Every fault of the run, true times: the job's own notes (one per
        faulting process, its clock minus the node's known offset) and what
        the harness injected."""
        out = []
        for f in glob.glob(os.path.join(self.piddir, "fault_pid*.json")):
            d = json.load(open(f))
            out.append(dict(d, time=d["time"] - self.skew_of(d["host"])))
        return out + self.injected

    def inject(self, kind, pids, host, time_, rank=None):
        """Record a fault sent from outside (before sending it)."""
        info = next((i for i in self.pids().values() if i["pid"] in pids), {}) if rank is not None else {}
        self.injected.append({"kind": kind, "pids": list(pids), "pid": pids[0] if rank is not None else None,
                              "host": host, "rank": rank, "local_rank": info.get("local_rank"),
                              "time": time_})

    def skew_of(self, host):
        return float(self.sc.get("skew", {}).get(host, 0.0))

    def kill(self, pid, sig, why):
        try:
            os.kill(pid, sig)
            self.ev(f"sent {signal.Signals(sig).name} to pid {pid} ({why})")
        except ProcessLookupError:
            self.ev(f"pid {pid} already gone ({why})")

    def is_job_process(self, pid):
        try:
            return (JOB_DIR + "/train.py").encode() in open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            return False

    def kill_leftover_workers(self):
        for r, info in sorted(self.pids().items()):
            pid = info["pid"]
            if alive(pid) and self.is_job_process(pid):
                self.kill(pid, signal.SIGCONT, f"cleanup: rank {r}")
                self.kill(pid, signal.SIGKILL, f"cleanup: rank {r} still running")

    def log_files(self):
        """Files that may hold progress lines while the job runs."""
        files = glob.glob(os.path.join(self.out, "*.log")) + glob.glob(os.path.join(self.out, "*.out"))
        files += glob.glob(os.path.join(self.rt, "**", "*.log"), recursive=True)
        files += glob.glob(os.path.join(self.rt, "*.out"))
        return files

    def wait_step(self, rank, step, timeout=240):
        pat = re.compile(rf"\[rank{rank}\] step {step} loss ".encode())
        end = time.time() + timeout
        while time.time() < end:
            for f in self.log_files():
                try:
                    if pat.search(open(f, "rb").read()):
                        return True
                except OSError:
                    pass
            if self.finished():
                return False
            time.sleep(0.2)
        return False

    def finished(self):
        return False

    # -------------------------------------------------- truth
    def culprit(self):
        """(rank, local_rank, host, pid, time) of the first failure, from what
        the harness saw (pid files, fault notes, its own signal times)."""
        sc, pids, notes = self.sc, self.pids(), self.fault_notes()
        c = dict(rank=None, local_rank=None, host=None, pid=None, time=None)
        rank = sc.get("culprit_rank")
        act = sc.get("action") or {}
        if act.get("type") == "sigkill":
            rank = act["rank"]
        if rank is not None and rank in pids:
            p = pids[rank]
            c.update(rank=rank, local_rank=p["local_rank"], host=p["host"], pid=p["pid"])
            if rank in notes:  # in-process fault: the job's own clock minus the known skew
                c["time"] = notes[rank]["time"] - self.skew_of(p["host"])
        for k in ("host", "time"):
            if self.truth_extra.get("culprit_" + k) is not None:
                c[k] = self.truth_extra["culprit_" + k]
        return c

    def restarts(self):
        return bool(self.sc.get("max_restarts") or self.sc.get("requeue"))

    def write_truth(self):
        sc = self.sc
        procs = self.watch.stop()
        attempts = self.attempts(procs) if self.restarts() else None
        c = self.culprit()
        if attempts:  # the top-level verdict is the last failed attempt's
            last = [a for a in attempts if a.get("verdict")]
            if last:
                v = last[-1]["verdict"]
                c = dict(rank=v["rank"], local_rank=v["local_rank"], host=v["host"], pid=v["pid"],
                         time=v["time"])
        pids = self.pids()
        hosts = self.hosts()
        nodes = {h: sorted(r for r, i in pids.items() if i["host"] == h) for h in hosts}
        offsets = {h: self.skew_of(h) for h in hosts}
        second = None
        if sc.get("second_rank") is not None:
            r = sc["second_rank"]
            n = self.fault_notes().get(r)
            p = pids.get(r, {})
            second = dict(kind=sc["kind"], rank=r, local_rank=p.get("local_rank"), host=p.get("host"),
                          pid=p.get("pid"),
                          time=utc_iso(n["time"] - self.skew_of(p.get("host"))) if n else None)
        truth = {
            "scenario": sc["name"],
            "description": sc["description"],
            "captured_at": utc_iso(self.t0),
            "capture_command": f"tools/capture/capture.py run {sc['name']} --out <DIR>",
            "launcher": sc["launcher"],
            "kind": sc["kind"],
            "rank": c["rank"], "local_rank": c["local_rank"], "host": c["host"], "pid": c["pid"],
            "time": utc_iso(c["time"]),
            "second_failure": second,
            "clock_offsets_s": offsets,
            "clock_note": ("offset = how far that host's logged times run ahead of true time "
                           "(libfaketime FAKETIME on that node's job processes only; Slurm "
                           "daemons are never shifted). All hosts are one machine, so every "
                           "other offset is exactly 0."),
            "nodes": nodes,
            "expected_hosts": hosts,
            "wall_seconds": round(time.time() - self.t0, 1),
            "harness_events": self.events,
            "commands": self.commands,
            "environment": {"torch": "2.13.0+cpu", "backend": "gloo (CPU, loopback)",
                            "slurm": sh("sinfo -V").stdout.strip() if shutil.which("sinfo") else None,
                            "machine": "one Debian 12 host; each node = own UTS namespace"},
        }
        truth.update(self.truth_extra.get("fields", {}))
        if attempts is not None:
            truth["attempts"] = [dict(a, start=utc_iso(a["start"]), end=utc_iso(a["end"]),
                                      verdict=dict(a["verdict"], time=utc_iso(a["verdict"]["time"]))
                                      if a.get("verdict") else None) for a in attempts]
            truth["worker_processes"] = [dict(p, started=utc_iso(p["started"]), ended=utc_iso(p["ended"]))
                                         for p in procs]
            failed = [a["verdict"]["kind"] for a in attempts if a.get("verdict")]
            if failed[-1:] != [sc["kind"]]:
                raise SystemExit(f"scenario kind {sc['kind']}, but the attempts failed as {failed}")
        truth["files"] = sorted(os.path.relpath(os.path.join(r, f), self.out)
                                for r, _, fs in os.walk(self.out) for f in fs)
        with open(os.path.join(self.out, "truth.json"), "w") as f:
            json.dump(truth, f, indent=2)
            f.write("\n")
        verdict = {"kind": sc["kind"], "rank": c["rank"], "local_rank": c["local_rank"],
                   "host": c["host"], "pod": None, "pid": c["pid"], "gpu": None,
                   "time": utc_iso(c["time"]), "summary": sc["description"]}
        ev = {"verdict": verdict}
        if attempts is not None:
            ev["attempts"] = att.contract(attempts, utc_iso)
        if any(offsets.values()):
            ref = next(h for h in hosts if offsets[h] == 0.0)
            ev["clock"] = [{"host": h, "offset_s": offsets[h] - offsets[ref], "uncertainty_s": 0.0,
                            "basis": "true offset injected by the capture harness (libfaketime)"}
                           for h in hosts if h in nodes and (nodes[h] or offsets[h])]
        with open(os.path.join(self.out, "expected_verdict.json"), "w") as f:
            json.dump(ev, f, indent=2)
            f.write("\n")
        self.leak_check()
        return truth

    def leak_check(self):
        needles = [self.sc["name"], "RT_FAULTS", "RT_SKEW", "FAKETIME"]
        if self.sc.get("faults"):
            needles.append(self.sc["faults"])
        bad = []
        for r, _, fs in os.walk(self.out):
            for f in fs:
                if f in ("truth.json", "expected_verdict.json", "README.md", "line_times.json"):
                    continue
                data = open(os.path.join(r, f), "rb").read().decode("utf-8", "replace")
                bad += [f"{os.path.relpath(os.path.join(r, f), self.out)}: {n}" for n in needles if n in data]
        if bad:
            raise SystemExit("LEAK: the logs give the answer away:\n  " + "\n  ".join(bad))


# ------------------------------------------------------------------ torchrun
class TorchrunRun(Run):
    COMMON_ENV = {"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
                  "LOGLEVEL": "INFO", "TORCH_CPP_LOG_LEVEL": "INFO"}

    def hosts(self):
        return self.sc["hosts"]

    def agent_argv(self, i, host):
        sc = self.sc
        n, port = len(sc["hosts"]), sc["port"]
        a = [TORCHRUN, f"--nnodes={sc.get('nnodes', n)}", f"--nproc-per-node={sc.get('nproc', 2)}",
             f"--max-restarts={sc.get('max_restarts', 0)}", "--local-addr=127.0.0.1"]
        if sc["rdzv"] == "static":
            a += ["--master-addr=127.0.0.1", f"--master-port={port}", f"--node-rank={i}"]
        else:
            conf = f"is_host={1 if i == 0 else 0}"
            if sc.get("rdzv_conf"):
                conf += "," + sc["rdzv_conf"]
            a += ["--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}",
                  f"--rdzv-id={self.tag}", f"--rdzv-conf={conf}"]
        if sc.get("logdir"):
            a += [f"--log-dir={self.rt}/logs/{host}", "--redirects=3"]
            if sc.get("tee", True):
                a += ["--tee=3"]
        return a + [os.path.join(JOB_DIR, "train.py")]

    def pump(self, stream, host):
        """Copy one agent's output to <host>.log line by line (unchanged) and
        note when each line arrived (true time; add the host's skew to get
        what a runtime on that node would stamp)."""
        times = self.line_times.setdefault(host, [])
        with open(os.path.join(self.out, host + ".log"), "wb") as f:
            for line in iter(stream.readline, b""):
                times.append(round(time.time(), 4))
                f.write(line)
                f.flush()
        stream.close()

    def start(self):
        sc = self.sc
        self.agents = {}
        self.pumps = []
        self.line_times = {}
        self.first_exit = None
        missing = sc.get("missing", [])
        for i, host in enumerate(sc["hosts"]):
            if i in missing:
                self.ev(f"node {host} is never started (scenario: missing node)")
                continue
            env = dict(os.environ)
            for k in list(env):
                if k.startswith(("RT_", "TORCHELASTIC_", "SLURM_")) or k in ("LD_PRELOAD", "FAKETIME"):
                    del env[k]
            job_env = dict(self.COMMON_ENV, **sc.get("env", {}))
            env.update(job_env)
            env["RT_PIDDIR"] = self.piddir
            if "RT_CKPT_EVERY" in job_env:
                env["RT_CKPT_DIR"] = os.path.join(self.rt, "checkpoint")
            if sc.get("faults"):
                env["RT_FAULTS"] = sc["faults"]
            skew = self.skew_of(host)
            if skew:
                env.update(LD_PRELOAD=FAKETIME_LIB, FAKETIME=f"{skew:+g}s")
            argv = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host] + self.agent_argv(i, host)
            self.commands.append({"node": host, "env": job_env, "clock_skew_s": skew or 0,
                                  "shell": " ".join(shlex.quote(x) for x in argv) + f" > {host}.log 2>&1"})
            # the agent's output goes through a pipe so that each line's arrival
            # time is known (what a container runtime stamps on a CRI log line)
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=env, cwd=self.rt, start_new_session=True)
            t = threading.Thread(target=self.pump, args=(p.stdout, host), daemon=True)
            t.start()
            self.pumps.append(t)
            self.agents[host] = p
            self.ev(f"started torchrun agent for {host}: pid {p.pid}" + (f", clock {skew:+g} s" if skew else ""))
            time.sleep(0.3)

    def finished(self):
        return all(p.poll() is not None for p in self.agents.values())

    def attempts(self, procs):
        logs = {h: open(os.path.join(self.out, h + ".log"), errors="replace").read()
                for h in self.agents if os.path.exists(os.path.join(self.out, h + ".log"))}
        codes = {h: p.returncode for h, p in self.agents.items()}
        return att.torchrun_attempts(procs, self.all_faults(), logs, self.line_times, codes)

    def wait_agents(self, timeout, hosts=None):
        hosts = hosts or list(self.agents)
        end = time.time() + timeout
        while time.time() < end:
            done = [self.agents[h].poll() is not None for h in hosts]
            if any(done) and self.first_exit is None:
                self.first_exit = time.time()  # the job visibly failed (or ended)
            if all(done):
                return True
            time.sleep(0.2)
        return False

    def wait_pids(self, n, timeout=120):
        end = time.time() + timeout
        while len(self.pids()) < n and time.time() < end:
            time.sleep(0.3)
        return len(self.pids()) >= n

    def run(self):
        sc = self.sc
        self.prepare()
        self.start()
        act = sc.get("action") or {}
        world = len(sc["hosts"]) * sc.get("nproc", 2)
        try:
            if act.get("type") == "sigkill":
                r = act["rank"]
                if not self.wait_step(r, act["at_step"]):
                    raise RuntimeError(f"rank {r} never reached step {act['at_step']}")
                info = self.pids()[r]
                self.truth_extra["culprit_time"] = time.time()
                self.inject("sigkill", [info["pid"]], info["host"], time.time(), rank=r)
                self.kill(info["pid"], signal.SIGKILL, f"FAULT: rank {r} on {info['host']}")
                self.wait_agents(150)
            elif act.get("type") == "kill_node":
                host = sc["hosts"][act["host_index"]]
                self.wait_pids(world)
                ranks = sorted(r for r, i in self.pids().items() if i["host"] == host)
                if not self.wait_step(ranks[0], act["at_step"]):
                    raise RuntimeError("node never reached the step")
                victims = [self.agents[host].pid] + [self.pids()[r]["pid"] for r in ranks]
                self.truth_extra["culprit_time"] = time.time()
                self.truth_extra["culprit_host"] = host
                self.inject("kill_node", victims, host, time.time())
                for pid in victims:
                    self.kill(pid, signal.SIGKILL, f"FAULT: kill node {host}")
                self.truth_extra.setdefault("fields", {})["killed_pids"] = victims
                self.wait_agents(300 if sc.get("max_restarts") else 150)
            elif act.get("type") == "freeze_node":
                host = sc["hosts"][act["host_index"]]
                self.wait_pids(world)
                ranks = sorted(r for r, i in self.pids().items() if i["host"] == host)
                if not self.wait_step(ranks[0], act["at_step"]):
                    raise RuntimeError("node never reached the step")
                stopped = [self.agents[host].pid] + [self.pids()[r]["pid"] for r in ranks]
                self.truth_extra["culprit_time"] = time.time()
                self.truth_extra["culprit_host"] = host
                self.inject("freeze_node", stopped, host, time.time())
                for pid in stopped:
                    self.kill(pid, signal.SIGSTOP, f"FAULT: freeze node {host}")
                others = [h for h in self.agents if h != host]
                ok = self.wait_agents(150, others)
                self.ev("all other agents exited" if ok else "other agents still running after 150 s")
                time.sleep(3)
                for pid in stopped:
                    self.kill(pid, signal.SIGKILL, f"end frozen node {host}")
                self.wait_agents(30)
                self.truth_extra.setdefault("fields", {})["stopped_pids"] = stopped
            else:
                self.wait_agents(240)
        finally:
            self.cleanup()
        if sc.get("missing"):
            host = sc["hosts"][sc["missing"][0]]
            self.truth_extra["culprit_host"] = host
            # the failure shows when the present agents give up
            self.truth_extra["culprit_time"] = self.first_exit
        self.collect()
        return self.write_truth()

    def cleanup(self):
        alive_agents = [h for h, p in self.agents.items() if p.poll() is None]
        for h in alive_agents:
            self.kill(self.agents[h].pid, signal.SIGCONT, f"cleanup: agent {h}")
            self.kill(self.agents[h].pid, signal.SIGTERM, f"cleanup: agent {h} still running")
        if alive_agents:
            self.wait_agents(20, alive_agents)
        for h, p in self.agents.items():
            if p.poll() is None:
                self.kill(p.pid, signal.SIGKILL, f"cleanup: agent {h}")
        self.kill_leftover_workers()
        for p in self.agents.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass
        for t in self.pumps:
            t.join(15)
        self.ev("agents exited: " + ", ".join(f"{h}={p.returncode}" for h, p in self.agents.items()))
        self.truth_extra.setdefault("fields", {})["agent_exit_codes"] = {
            h: p.returncode for h, p in self.agents.items()}

    def collect(self):
        with open(os.path.join(self.out, "line_times.json"), "w") as f:
            json.dump({"note": "harness metadata, not a log: arrival time (UTC epoch s, true clock) of "
                               "each line of <host>.log, in order", "hosts": self.line_times}, f)
        src = os.path.join(self.rt, "logs")
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(self.out, "torchelastic"))
            self.commands.append({"node": "harness", "shell": f"cp -a <log-dir>/<host> torchelastic/<host>",
                                  "note": "per-rank --log-dir files copied verbatim after the run"})


# ------------------------------------------------------------------ Slurm
class SlurmRun(Run):
    def hosts(self):
        return SLURM_NODES[: self.sc["nodes"]]

    def job_script(self):
        sc = self.sc
        torch_job = sc["launcher"] == "slurm_torchrun"
        lines = ["#!/bin/bash",
                 "#SBATCH --job-name=pretrain",
                 f"#SBATCH --nodes={sc['nodes']}",
                 f"#SBATCH --ntasks-per-node={1 if torch_job else sc['tasks_per_node']}",
                 f"#SBATCH --cpus-per-task={2 if torch_job else 1}",
                 f"#SBATCH --gres=gpu:{sc.get('nproc', sc.get('tasks_per_node', 2))}",
                 f"#SBATCH --mem={sc['mem']}",
                 f"#SBATCH --time={sc['time_min']}",
                 f"#SBATCH --output={self.rt}/slurm-%j.out",
                 "#SBATCH --requeue" if sc.get("requeue") else "#SBATCH --no-requeue"]
        if sc.get("open_mode"):  # Slurm's default truncates the output file when a requeued job restarts
            lines.append(f"#SBATCH --open-mode={sc['open_mode']}")
        lines += ["",
                  "ulimit -c 0",
                  "export GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 LOGLEVEL=INFO",
                  'echo "[$(date \'+%F %T\')] job $SLURM_JOB_ID: $SLURM_JOB_NUM_NODES nodes ($SLURM_JOB_NODELIST), '
                  '$SLURM_NTASKS tasks"']
        srun = f"srun --label {sc.get('srun_opts', '')}".strip()
        if torch_job:
            lines += [
                "# one torchrun agent per node; the first node hosts the rendezvous store",
                f"export MASTER_ADDR=127.0.0.1 MASTER_PORT={sc['port']}",
                f"{srun} {JOB_DIR}/launch.sh bash -c '{TORCHRUN} --nnodes=$SLURM_JOB_NUM_NODES "
                f"--nproc-per-node={sc['nproc']} --max-restarts=0 --node-rank=$SLURM_NODEID "
                f"--master-addr=$MASTER_ADDR --master-port=$MASTER_PORT --local-addr=127.0.0.1 "
                f"--log-dir={self.rt}/logs/$SLURMD_NODENAME --redirects=3 --tee=3 {JOB_DIR}/train.py'"]
        else:
            lines += [f"export MASTER_ADDR=127.0.0.1 MASTER_PORT={sc['port']}",
                      f"{srun} {JOB_DIR}/launch.sh {PYTHON} {JOB_DIR}/train.py"]
        lines += ["rc=$?", 'echo "[$(date \'+%F %T\')] srun exited with status $rc"', "exit $rc", ""]
        return "\n".join(lines)

    def state(self):
        return sh(f"squeue -h -j {self.jobid} -o %T").stdout.strip()

    def finished(self):
        return not self.state()

    def log_sizes(self):
        return {f: os.path.getsize(f) for f in glob.glob(os.path.join(SLURM_LOGDIR, "*.log"))}

    def slurm_pids_of_node(self, node):
        """slurmd of `node`, and every slurmstepd/task process of that node:
        by cgroup path (cgroup mode: .../slurm_<node>/...), else task
        processes with SLURMD_NODENAME=<node> and their slurmstepd parents."""
        pids = {int(open(f"{SLURM_STATE}/slurmd-{node}.pid").read().strip())}
        for p in glob.glob("/proc/[0-9]*"):
            pid = int(p.rsplit("/", 1)[1])
            try:
                if f"/slurm_{node}/" in open(f"{p}/cgroup").read():
                    pids.add(pid)
                    continue
                env = open(f"{p}/environ", "rb").read().split(b"\0")
                if f"SLURMD_NODENAME={node}".encode() in env:
                    pids.add(pid)
                    ppid = int(re.search(r"PPid:\s+(\d+)", open(f"{p}/status").read()).group(1))
                    if open(f"/proc/{ppid}/comm").read().strip() == "slurmstepd":
                        pids.add(ppid)
            except (OSError, AttributeError, ValueError):
                continue
        return sorted(pids)

    def run(self):
        sc = self.sc
        if "UP" not in sh("scontrol ping").stdout:
            raise SystemExit("Slurm is not up: run tools/capture/slurm_up.sh first")
        self.prepare()
        script = self.job_script()
        job_path = os.path.join(self.rt, "job.sbatch")
        open(job_path, "w").write(script)
        shutil.copyfile(job_path, os.path.join(self.out, "job.sbatch"))
        env = dict(os.environ, RT_PIDDIR=self.piddir, **sc.get("env", {}))
        for k in ("RT_FAULTS", "RT_SKEW"):
            env.pop(k, None)
        if sc.get("faults"):
            env["RT_FAULTS"] = sc["faults"]
        if sc.get("skew"):
            env["RT_SKEW"] = ",".join(f"{h}={s:+g}" for h, s in sc["skew"].items())
        if "RT_CKPT_EVERY" in env:  # one shared file system: every attempt finds the checkpoints
            env["RT_CKPT_DIR"] = os.path.join(self.rt, "checkpoint")
        start_sizes = self.log_sizes()
        r = subprocess.run(["sbatch", "--parsable", job_path], capture_output=True, text=True, env=env,
                           cwd=self.rt)
        if r.returncode:
            raise RuntimeError(f"sbatch failed: {r.stderr}")
        self.jobid = r.stdout.strip().split(";")[0]
        self.commands.append({"node": "harness", "shell": f"sbatch --parsable job.sbatch  # -> {self.jobid}",
                              "env": sc.get("env", {})})
        self.ev(f"submitted job {self.jobid}")
        act = sc.get("action") or {}
        frozen = []
        try:
            end = time.time() + 90
            while self.state() in ("PENDING", "CONFIGURING", "") and time.time() < end:
                if not self.state() and sh(f"sacct -n -X -j {self.jobid} -o State").stdout.strip() not in ("", "PENDING"):
                    break
                time.sleep(0.5)
            self.ev(f"job {self.jobid} state {self.state() or 'gone'}")
            if act.get("type") == "sigkill":
                r_ = act["rank"]
                if not self.wait_step(r_, act["at_step"]):
                    raise RuntimeError(f"rank {r_} never reached step {act['at_step']}")
                info = self.pids()[r_]
                self.truth_extra["culprit_time"] = time.time()
                self.kill(info["pid"], signal.SIGKILL, f"FAULT: rank {r_} on {info['host']}")
            elif act.get("type") == "scancel":
                if not self.wait_step(act["rank"], act["at_step"]):
                    raise RuntimeError("job never reached the step")
                self.truth_extra["culprit_time"] = time.time()
                sh(f"scancel {self.jobid}")
                self.commands.append({"node": "harness", "shell": f"scancel {self.jobid}"})
                self.ev(f"FAULT: scancel {self.jobid}")
            elif act.get("type") == "freeze_slurm_node":
                if not self.wait_step(act["rank"], act["at_step"]):
                    raise RuntimeError("job never reached the step")
                node = self.pids()[act["rank"]]["host"]
                frozen = self.slurm_pids_of_node(node)
                self.truth_extra["culprit_time"] = time.time()
                self.truth_extra["culprit_host"] = node
                self.inject("freeze_slurm_node", frozen, node, time.time())
                for pid in frozen:
                    os.kill(pid, signal.SIGSTOP)
                self.ev(f"FAULT: SIGSTOP node {node}: slurmd + slurmstepd + tasks {frozen}")
                self.commands.append({"node": "harness", "shell": f"kill -STOP {' '.join(map(str, frozen))}",
                                      "note": f"slurmd -N {node}, its slurmstepd and task processes"})
            end = time.time() + sc.get("max_wait", 150)
            if frozen and sc.get("requeue"):
                # the node stays frozen until the requeued job runs again
                # elsewhere (else Slurm may give it the same node back)
                while time.time() < end and not (self.restart_count() >= 1 and self.state() == "RUNNING"):
                    time.sleep(1)
                self.ev(f"job {self.jobid} restarts={self.restart_count()} state {self.state()}")
                self.thaw(frozen, self.truth_extra["culprit_host"])
                frozen = []
            while self.state() and time.time() < end:
                time.sleep(1)
            if self.state():
                self.ev(f"job {self.jobid} still {self.state()} after max_wait: scancel")
                sh(f"scancel {self.jobid}")
                self.truth_extra.setdefault("fields", {})["harness_timed_out"] = True
            if frozen:
                self.thaw(frozen, self.truth_extra["culprit_host"])
        finally:
            if getattr(self, "jobid", None) and self.state():
                sh(f"scancel {self.jobid}")
            end = time.time() + 30
            while getattr(self, "jobid", None) and self.state() and time.time() < end:
                time.sleep(1)
            time.sleep(1)
            self.kill_leftover_workers()
        self.collect(start_sizes)
        return self.write_truth()

    def attempts(self, procs):
        rows = sh(f"sacct -D -X -n -P -j {self.jobid} -o State,Start,End,NodeList").stdout.splitlines()
        runs = []
        for row in rows:
            state, start, end, nodes = row.split("|")
            runs.append({"state": state, "nodes": nodes, "start": slurm_time(start),
                         "end": slurm_time(end)})
        return att.slurm_attempts(runs, procs, self.all_faults())

    def restart_count(self):
        m = re.search(r"\bRestarts=(\d+)", sh(f"scontrol show job {self.jobid}").stdout)
        return int(m.group(1)) if m else 0

    def thaw(self, frozen, node):
        """Snapshot the failed node's state, SIGCONT its processes, wait until
        Slurm has it back (ReturnToService=2; else resume it by hand)."""
        open(os.path.join(self.out, "sinfo_after.txt"), "w").write(sh("sinfo -N -l").stdout)
        open(os.path.join(self.out, "scontrol_show_node.txt"), "w").write(
            sh(f"scontrol show node {node}").stdout)
        for pid in frozen:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.ev(f"SIGCONT to node {node}'s processes")
        end = time.time() + 90
        while time.time() < end:
            st = sh(f"sinfo -h -n {node} -o %t").stdout.strip()
            if st in ("idle", "mix", "alloc"):
                break
            if time.time() > end - 60:
                sh(f"scontrol update nodename={node} state=resume")
            time.sleep(1)
        self.ev(f"node {node}: {sh(f'sinfo -h -n {node} -o %t').stdout.strip()}")

    def collect(self, start_sizes):
        j = self.jobid
        end = time.time() + 40
        while time.time() < end:  # let slurmdbd catch up
            st = sh(f"sacct -n -X -j {j} -o State%30").stdout.strip()
            if st and not any(x in st for x in ("RUNNING", "PENDING", "COMPLETING")):
                break
            time.sleep(1)
        time.sleep(2)
        for name, cmd in [("scontrol_show_job.txt", f"scontrol show job -dd {j}"),
                          ("sacct_P.txt", f"sacct -j {j} -P --format={SACCT_FIELDS}"),
                          ("sacct.txt", f"sacct -j {j}"),
                          ("sacct.json", f"sacct -j {j} --json")] + (
                [("sacct_duplicates_P.txt", f"sacct -D -j {j} -P --format={SACCT_FIELDS}")]
                if self.sc.get("requeue") else []):
            r = sh(cmd)
            open(os.path.join(self.out, name), "w").write(r.stdout + r.stderr)
            self.commands.append({"node": "harness", "shell": f"{cmd} > {name}"})
        out = os.path.join(self.rt, f"slurm-{j}.out")
        if os.path.exists(out):
            shutil.copyfile(out, os.path.join(self.out, f"slurm-{j}.out"))
        os.makedirs(os.path.join(self.out, "slurm"), exist_ok=True)
        for f, size in sorted(self.log_sizes().items()):
            with open(f, "rb") as fh:
                fh.seek(start_sizes.get(f, 0))
                data = fh.read()
            if data and not f.endswith("slurmdbd.log"):
                open(os.path.join(self.out, "slurm", os.path.basename(f)), "wb").write(data)
        src = os.path.join(self.rt, "logs")
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(self.out, "torchelastic"))
        st = sh(f"sacct -n -X -P -j {j} -o State,ExitCode").stdout.strip()
        fields = self.truth_extra.setdefault("fields", {})
        fields.update(job_id=int(j), slurm_job_state=st,
                      slurm_mode=open(f"{SLURM_STATE}/mode").read().strip()
                      if os.path.exists(f"{SLURM_STATE}/mode") else None)
        if self.sc["kind"] == "time_limit":
            end_s = sh(f"sacct -n -X -P -j {j} -o End").stdout.strip()
            try:
                self.truth_extra["culprit_time"] = time.mktime(time.strptime(end_s, "%Y-%m-%dT%H:%M:%S"))
            except ValueError:
                pass


# ------------------------------------------------------------------ CLI
def run_scenario(name, out):
    sc = SCENARIOS[name]
    if not os.path.exists(PYTHON):
        raise SystemExit(f"no torch venv at {VENV}: run tools/capture/install.sh")
    cls = TorchrunRun if sc["launcher"] == "torchrun" else SlurmRun
    r = cls(sc, out)
    t0 = time.time()
    truth = r.run()
    shutil.rmtree(r.rt, ignore_errors=True)
    print(f"[capture] {name}: kind={truth['kind']} rank={truth['rank']} host={truth['host']} "
          f"time={truth['time']} ({time.time() - t0:.0f} s) -> {out}", flush=True)
    return truth


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="list scenarios")
    p = sub.add_parser("run", help="run one scenario")
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("--out", required=True, help="bundle directory (emptied first)")
    p = sub.add_parser("run-all", help="run several scenarios into ROOT/<name>")
    p.add_argument("--out", required=True)
    p.add_argument("--include-slow", action="store_true")
    p.add_argument("prefix", nargs="*")
    a = ap.parse_args(argv)
    if a.cmd == "list":
        for n, sc in SCENARIOS.items():
            print(f"{n:28s} {sc['launcher']:15s} {sc['kind']:19s}{' slow' if sc.get('slow') else ''}")
        return 0
    if os.geteuid() != 0:
        raise SystemExit("capture.py run needs root (unshare --uts, Slurm, kill by PID)")
    if a.cmd == "run":
        run_scenario(a.scenario, a.out)
        return 0
    failed = []
    for n, sc in SCENARIOS.items():
        if a.prefix and not any(n.startswith(x) for x in a.prefix):
            continue
        if sc.get("slow") and not a.include_slow and not a.prefix:
            continue
        try:
            run_scenario(n, os.path.join(a.out, n))
        except (Exception, SystemExit) as e:  # keep going, report at the end
            print(f"[capture] {n} FAILED: {e}", flush=True)
            failed.append(n)
    if failed:
        print("failed: " + " ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
