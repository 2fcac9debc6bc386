#!/usr/bin/env python3
"""Turn captured bundles into sample_logs/ (copy + README per bundle).

    make_samples.py CAPTURE_ROOT [SAMPLE_LOGS_DIR]

CAPTURE_ROOT holds one capture.py bundle per scenario (capture.py run-all
--include-slow --out CAPTURE_ROOT; tr_node_sigkill too). Bundles are copied
unchanged; the three Kubernetes bundles are composed by compose_k8s.py. The
"basis" texts below say what a careful human reading the logs would use to
reach the verdict; they were written after reading the captured logs.
"""
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compose_k8s  # noqa: E402

# sample dir name -> (scenario, family, basis)
SAMPLES = {
    "demo_sigkill_4node": ("tr_sigkill", "torchrun", """\
- `cn-0414.log`: the agent logs `failed (exitcode: -9) local_rank: 1 (pid: N)`
  and its summary's Root Cause names rank 5 (local_rank 1) with `exitcode : -9
  (SIGKILL)`, `Signal 9 (SIGKILL) received by PID`. -9 with no Python
  traceback and no error.json (its attempt_0/1/ has none) is a kill from
  outside, not an exception or OOM message.
- Every rank logged `step 10`, then rank 5 vanished; the other ranks' errors
  come after that and are gloo `Connection closed by peer` in the all_reduce
  (the peer that vanished), i.e. symptoms. Their agents' Root Cause blocks
  name their own ranks with exitcode 1 — per node, each is wrong.
- Rank 4 (same node) is `exitcode: -15 (SIGTERM)`: its agent's `Sending process
  ... closing signal SIGTERM`, a consequence.
- Nothing in the bundle says who sent the SIGKILL (kernel OOM killer would
  leave a trace in dmesg/cgroup, not here), so `killed` rather than `oom`."""),
    "torchrun_exception_skew": ("tr_exception", "torchrun", """\
- Exactly one error.json carries a non-collective error: gpu-b02's
  attempt_0/1/error.json, `RuntimeError: corrupted input batch at step 10 ...`
  raised in `load_batch`, rank 3. Every other rank's error is gloo `Connection
  closed by peer` inside `dist.all_reduce`, after it.
- The agent on gpu-b02 logs `failed (exitcode: 1) local_rank: 1`, Root Cause
  rank 3.
- Clock: gpu-b03's lines run ~37 s ahead of the others (the same training
  step, done in lockstep through the all_reduce, is logged 37 s later there);
  without correcting it, gpu-b03's connection errors would look later still
  (harmless here), but the offset must be estimated, not assumed zero."""),
    "torchrun_segfault": ("tr_segfault", "torchrun", """\
- No --log-dir/--tee here: workers write straight into the agent's log, with
  no prefix. dgx-s04.log has `Fatal Python error: Segmentation fault` (stack
  in `load_batch`) with nothing saying which worker wrote it; the agent's
  `failed (exitcode: -11) local_rank: 0 (pid: N)` and its Root Cause (rank 6,
  `Signal 11 (SIGSEGV) received by PID`) tie it to rank 6. Its last step line
  is step 7.
- All other ranks fail afterwards with gloo connection errors (symptoms);
  their nodes' Root Cause blocks name their own ranks with exitcode 1."""),
    "torchrun_oom_rlimit": ("tr_oom_rlimit", "torchrun", """\
- Worker output is only in the --log-dir files (no --tee). dgx-f08's
  attempt_0/0/stderr.log (rank 2): `RuntimeError: [enforce fail at
  alloc_cpu.cpp:...] DefaultCPUAllocator: can't allocate memory: you tried to
  allocate 4294967296 bytes. Error code 12 (Cannot allocate memory)`; the same
  in its error.json. ENOMEM = host memory, so `oom` (not gpu_oom).
- The other ranks' errors are gloo connection errors after that time."""),
    "torchrun_hang_skew": ("tr_hang", "torchrun", """\
- Every rank's last progress line is `step 7`: nobody crashed before the
  timeout. 20 s later the ranks time out (`Timed out waiting 20000ms for recv`),
  and with TORCH_DISTRIBUTED_DEBUG=DETAIL rank 0 says `Ranks 6 failed to pass
  monitoredBarrier in 20000 ms`; the others say `check rank 0 logs`.
- Rank 6 (node-c14, local rank 0) has no error of its own: it was SIGTERMed by
  its agent (`exitcode: -15`), while node-c14's Root Cause names its healthy
  sibling rank 7 — the per-node Root Cause is wrong here, as design.md warns.
- So rank 6 was alive but never entered the collective: `hang`.
- Clock: node-c12 runs 23 s BEHIND (its timeout lines appear 23 s before the
  others')."""),
    "torchrun_node_freeze": ("tr_node_freeze", "torchrun", """\
- hpc-d33.log (agent + both ranks of that node) simply stops: its last lines
  are step progress at the same step the others reached, then nothing — no
  error, no summary, no exit line.
- ~20 s later the 6 ranks of the other nodes time out in the all_reduce
  (`Timed out waiting 20000ms`), and their agents fail.
- A whole node silent while alive-looking (no exit recorded for it) is a
  frozen / half-dead node: `node_failure` on hpc-d33, no single rank."""),
    "torchrun_rdzv_missing_node": ("tr_rdzv_missing_node", "torchrun", """\
- Three agent logs only (ml-e01..03); each says min_nodes 4 / max_nodes 4
  and ends with `RendezvousTimeoutError` after join_timeout 25 s; no worker
  ever started (no rank, no step line).
- Nothing names the missing node: the expected set (4 nodes, the host naming
  ml-e01..04) compared with who logged (3) points at ml-e04, which left no
  log at all."""),
    "torchrun_rdzv_store_host_missing": ("tr_rdzv_store_host_missing", "torchrun", """\
- Three agents (ml-g02..04), all `is_host: 0`, all fail creating the c10d
  backend: `RendezvousConnectionError: The connection to the C10d store has
  failed` to 127.0.0.1:<port>. Nobody served the store: the node that should
  host it (is_host=1, the first node, ml-g01) never logged anything.
- `rendezvous_timeout` (the job never assembled), host ml-g01."""),
    "torchrun_double_failure": ("tr_double_failure", "torchrun", """\
- Two ranks raise `RuntimeError: corrupted input batch at step 10` — rank 1
  (gx-h01) and rank 5 (gx-h03) — 3 s apart, both outside any collective (a
  `step 10 reloading data shard` phase). No --log-dir here: the tracebacks
  have no timestamps, so order them by the agents' `failed (exitcode: 1)`
  lines and Root Cause times: rank 1 is first.
- The other ranks fail afterwards with connection errors. Root cause: rank
  1; rank 5 is an independent second failure, not a consequence."""),
    "torchrun_clean": ("tr_clean", "torchrun", """\
- Every rank logs steps 1..12 and `training finished`; every agent ends with
  `worker group successfully finished` and exit 0. Kind `none`."""),
    "slurm_oom_cgroup": ("slurm_oom_cgroup", "slurm", """\
- `slurm-<id>.out`: slurmstepd reports an oom-kill event in the step and srun
  says `task 1: Out Of Memory` (srun --label: task 1 = rank 1 on n1); sacct
  shows OUT_OF_MEMORY for the step/job.
- Rank 1's progress stops at step 7 (its step 8 never completes); the other
  ranks then fail in the all_reduce or are killed by srun
  (--kill-on-bad-exit). cgroup v1 memory limit: `--mem=1500M` per node."""),
    "slurm_oom_overmemorykill": ("slurm_oom_overmemorykill", "slurm", """\
- Same job as slurm_oom_cgroup, on the cluster started with `slurm_up.sh
  nocgroup` (proctrack/linuxproc, JobAcctGatherParams=OverMemoryKill): no
  kernel OOM kill; slurmstepd's accounting poll sees the step over its
  limit: `slurmstepd-n1: error: StepId=<id>.0 exceeded memory limit (... >
  1572864000), being killed`, `Exceeded job memory limit`.
- srun then says `tasks 2-3: Killed`, `task 0: Killed`, `task 1: Killed`:
  it names no culprit. sacct shows the step CANCELLED and the job FAILED
  9:0 (not OUT_OF_MEMORY), but its MaxRSSTask column (1) and MaxRSSNode (n1)
  point at rank 1, the task that grew; every rank's progress stops at step 7.
- Kind `oom`, rank 1 on n1."""),
    "slurm_scancel": ("slurm_scancel", "slurm", """\
- slurmctld.log: `_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=<id> uid 0`;
  job output: `srun: Job step aborted` and `slurmstepd-n1: error: *** JOB
  <id> ON n1 CANCELLED AT <time> ***` (no DUE TO ...); sacct: `CANCELLED by
  0`. Training was healthy up to then (every rank at step 10, no error).
  Kind `cancelled`, no culprit rank."""),
    "slurm_time_limit": ("slurm_time_limit", "slurm", """\
- Job output: `*** JOB <id> ON n1 CANCELLED AT ... DUE TO TIME LIMIT ***`;
  slurmctld.log: `Time limit exhausted for JobId=<id>`; sacct: TIMEOUT with
  Timelimit 00:01:00. Every rank was still making progress: `time_limit`."""),
    "slurm_node_failure": ("slurm_node_failure", "slurm", """\
- Every rank's last progress line is step 8, all in the same second; then
  the job output is silent (n2's ranks are frozen, n1's block in the next
  all_reduce; the process-group timeout is 300 s, so no gloo error). The
  training output alone cannot say which node froze.
- slurmctld.log: three `slurm_receive_msgs: [[localhost]:<n2's port>]
  failed: Socket timed out`, then `Killing JobId=<id> on failed node n2` and
  `Nodes n2 not responding, setting DOWN`; job output: `srun: error: Node
  failure on n2`, `*** JOB <id> ON n1 CANCELLED AT ... DUE TO NODE FAILURE`;
  sacct: NODE_FAIL; sinfo_after.txt / scontrol_show_node.txt: n2 down*,
  Reason=Not responding. (n2 comes back later: `Node n2 now responding`.)
- Whole node silent + scheduler NODE_FAIL: `node_failure` on n2."""),
    "slurm_torchrun_sigkill_skew": ("slurm_torchrun_sigkill", "slurm+torchrun", """\
- `slurm-<id>.out` interleaves 4 torchrun agents under `srun --label` (task
  t = node n(t+1)); worker lines carry a second prefix `[default<local_rank>]:`.
- Task 2 (n3): `failed (exitcode: -9) local_rank: 1 (pid: N)`, Root Cause
  rank 5 `exitcode: -9 (SIGKILL)`, no traceback, no error.json for n3/1.
  Every rank logged step 10 before rank 5 vanished.
- srun reports n3's task 2 first (`srun: error: n3: task 2: Exited with exit
  code 1`), terminates the step (--kill-on-bad-exit=1), then the other tasks
  exit 1 too; sacct: FAILED 1:0 — Slurm names the node, not the rank;
  torchrun's per-node block names the rank.
- Clock: n2's training processes run 37 s ahead (their step lines are 37 s
  later than the same steps on n1/n3/n4); Slurm's own logs are not shifted."""),
    # ---- runs that restart (issue 27): several attempts in one bundle
    "torchrun_restart_resume": ("tr_restart_resume", "torchrun", """\
Attempt 1 (failed: `exception`, rank 3 on ra-n02):
- ra-n02.log has rank 3's traceback (`[default1]:[rank3]:` prefix)
  `RuntimeError: corrupted input batch at step 12 ...` raised in `load_batch`,
  outside any collective; the same in torchelastic/ra-n02/<run>/attempt_0/1/
  error.json. Its agent: `failed (exitcode: 1) local_rank: 1 (pid: N)`, then
  `[default] Worker group FAILED. 2/2 attempts left; will restart worker group`.
- The other ranks' errors are gloo `Connection closed by peer` in
  `dist.all_reduce`, after it: symptoms. No `Root Cause` report anywhere:
  torchrun prints its ChildFailedError summary only when it gives up, never
  before a restart.

Boundary (the restart):
- Each agent logs `Stopping worker group`, `Rendezvous'ing worker group` and a
  second `Rendezvous complete for workers` block. Its `restart_count=` is that
  agent's own count: 1 on an agent that logged `Worker group FAILED`, 0 on one
  that restarted through `Detected 1 new nodes from group_rank=...; will
  restart worker group` (a membership change, not counted). Which agent takes
  which path depends on timing: restart_count is not a global attempt number.
- New worker pids (`worker started ... pid=`); `attempt_1/` in the --log-dir
  tree of an agent that counted the restart. Trap: an agent that restarts
  with restart_count=0 writes `attempt_0/` again, and torchrun truncates that
  attempt's stdout.log/stderr.log; its agent log (--tee) keeps both attempts.

Attempt 2 (completed):
- Every rank: `Loading the checkpoint at step 10.`, `Finished loading the
  checkpoint in ...`, `Training starts at step 11`, steps 11-24, `training
  finished steps=24`; both agents `worker group successfully finished`, exit 0.
- Step 11 is logged twice per rank (once per attempt): step numbers go back
  at a resume."""),
    "torchrun_restart_recurring_crash": ("tr_restart_recurring", "torchrun", """\
Attempts 1, 2 and 3 (each failed: `crash`, rc-n02 local rank 1):
- Each attempt ends with `Fatal Python error: Segmentation fault` in
  rc-n02.log (prefix `[default1]:` = local rank 1, stack in `load_batch`) and
  the agent's `failed (exitcode: -11) local_rank: 1 (pid: N)`, with a new pid
  each time; the same in rc-n02's --log-dir tree, attempt_0/1, attempt_1/1
  and attempt_2/1 stderr.log.
- rc-n02's agent: `Worker group FAILED. 2/2 attempts left; will restart
  worker group`, then `1/2 attempts left`, then, restarts used up, its
  ChildFailedError report: Root Cause local_rank 1, `Signal 11 (SIGSEGV)`.
- The device's global rank comes from each round's `Rendezvous complete`
  block (`global_ranks=`); c10d may give a node another group_rank in another
  round, so the recurring culprit is the node and local rank, not the rank.
- The other nodes' ranks fail each time with gloo connection errors in
  `all_reduce` (symptoms); their agents restart through `Detected N new nodes
  ...` (their restart_count stays 0) and, once rc-n02's agent has given up,
  end with a rendezvous error (the rendezvous closed, or its store gone).
- Each attempt resumes from the newest checkpoint (`Loading the checkpoint at
  step 5.`, then `10.`) and dies 7 steps later (steps 7, 12, 17): progress
  between failures, the same device each time: drain rc-n02, do not just
  restart."""),
    "torchrun_elastic_node_lost": ("tr_elastic_node_lost", "torchrun", """\
Attempt 1 (failed: `node_failure`, el-n03):
- el-n03.log stops mid-training: no error, no `failed (exitcode` line, no
  summary (its agent and both workers died at once). Right after, the four
  other ranks fail in `all_reduce` with gloo connection errors and their
  agents log `Worker group FAILED. 2/2 attempts left; will restart worker
  group`.

Boundary (an elastic membership change):
- The launch config says `min_nodes : 2`, `max_nodes : 3`. The two surviving
  agents re-rendezvous without el-n03 (the c10d rendezvous waits its
  last-call timeout for more nodes, then closes the round): the new
  `Rendezvous complete` block has `group_world_size=2`, `global_world_sizes=
  [4, 4]` (was 3 and [6, 6]); `restart_count=1` on an agent that logged
  `Worker group FAILED`, 0 on one that restarted through `Detected ... new
  nodes`. Ranks 4 and 5 do not exist in attempt 2.
- el-n03's own agent log may lag its workers' --log-dir files: the last
  step in el-n03.log can be one earlier than in its attempt_0 stdout.log
  (the tee died with the agent).

Attempt 2 (completed):
- Workers start with `world_size=4`, load `the checkpoint at step 10.`,
  `Training starts at step 11`, finish `training finished steps=30`; both
  agents exit 0. el-n03 never comes back."""),
    "slurm_requeue_node_failure": ("slurm_requeue_node_failure", "slurm", """\
Attempt 1 (failed: `node_failure`, n2):
- slurm-<id>.out: every rank's progress stops at step 8 (n2's ranks are
  frozen, n1's block in the next all_reduce; the process-group timeout is
  300 s, so gloo says nothing), then `srun: error: Node failure on n2` and
  `*** JOB <id> ON n1 CANCELLED AT ... DUE TO NODE FAILURE ...`.
- slurm/slurmctld.log: `slurm_receive_msgs: [[localhost]:6922] failed: Socket
  timed out` (n2's slurmd port), `requeue job JobId=<id> due to failure of
  node n2`, `Nodes n2 not responding, setting DOWN`, `Requeuing JobId=<id>`;
  sacct_duplicates_P.txt (`sacct -D`): the first run NODE_FAIL on n[1-2];
  sinfo_after.txt / scontrol_show_node.txt: n2 down*, `Not responding`.

Boundary (the requeue):
- The same job id runs again: slurmctld `sched: Allocate JobId=<id>
  NodeList=n[3-4]` about two minutes later (Slurm holds a requeued job until
  its EligibleTime; sacct Reason `BeginTime`); the job script's first line
  `job <id>: 2 nodes (n[3-4]), 4 tasks` appears a second time in the output
  (--open-mode=append; with Slurm's default the requeued run truncates the
  file and run 1's output is gone); scontrol_show_job.txt `Requeue=1
  Restarts=1`; two records in jobcomp.log. Plain sacct (sacct_P.txt) shows
  only the last run (COMPLETED): only `sacct -D` shows the NODE_FAIL run.
- When n2 comes back, slurmctld: `Registered JobId=<id> StepId=<id>.0 on
  wrong node n2` (the old run's step was still there) and `Node n2 now
  responding`.

Attempt 2 (completed):
- `Loading the checkpoint at step 5.`, `Training starts at step 6`, steps to
  40, `training finished steps=40` on every rank, `srun exited with status
  0`; sacct COMPLETED on n[3-4]."""),
    "slurm_requeue_truncated": ("slurm_requeue_truncated", "slurm", """\
The same incident as slurm_requeue_node_failure, with Slurm's default
output mode (no --open-mode): when the requeued job starts, Slurm truncates
slurm-<id>.out. The job output holds run 2 only (`job <id>: 2 nodes
(n[3-4])`, `Loading the checkpoint at step 5.`, `Training starts at step
6`, ...): nothing in it says there was an earlier run except the resume.

Attempt 1 (failed: `node_failure`, n2), from the other files only:
- slurm/slurmctld.log: `sched: Allocate JobId=<id> NodeList=n[1-2]`, n2's
  `Socket timed out` lines, `requeue job JobId=<id> due to failure of node
  n2`, `Nodes n2 not responding, setting DOWN`, `Requeuing JobId=<id>`;
  slurm/slurmd-n1.log: `*** JOB <id> ON n1 CANCELLED AT ... DUE TO NODE
  FAILURE ...`; sacct_duplicates_P.txt: the NODE_FAIL run on n[1-2];
  jobcomp.log: its record; sinfo_after.txt: n2 down*, `Not responding`.

Boundary and attempt 2 (completed): slurmctld `sched: Allocate JobId=<id>
NodeList=n[3-4]` after the requeued job's EligibleTime, `Registered JobId=<id>
StepId=<id>.0 on wrong node n2` when n2 returns; scontrol_show_job.txt
`Restarts=1`; the job output's run completes (`srun exited with status
0`), sacct COMPLETED on n[3-4]."""),
}

K8S = {
    "k8s_oomkilled_pod": ("oomkilled", "tr_node_sigkill", """\
- `kubectl_describe_pod_llm-pretrain-worker-1.txt`: Last State Terminated,
  Reason OOMKilled, Exit Code 137; `journal/<node>.log`: kernel `Memory cgroup
  out of memory: Killed process ...` then kubelet PLEG ContainerDied for that
  pod; `kubectl_get_events.txt`: OOMKilling on that node (ages are relative to
  the time the command ran).
- worker-1's CRI log ends mid-training with no error and no torchrun summary
  (every process of the container died at once); the other pods' logs show
  gloo `Connection closed by peer` afterwards and exit 1 — symptoms.
- Kind `oom`, pod llm-pretrain-worker-1 (ranks 2 and 3), no single rank."""),
    "k8s_gpu_admission_rdzv": ("admission", "tr_rdzv_missing_node", """\
- Three pods' logs end in `RendezvousTimeoutError` (join_timeout 25 s, 4
  nodes expected) — a symptom: the job never assembled.
- The fourth pod, llm-pretrain-worker-3, has no container log at all;
  `kubectl describe` shows Status Failed, Reason UnexpectedAdmissionError:
  `Allocate failed due to requested number of devices unavailable for
  nvidia.com/gpu. Requested: 2, Available: 0`; its node's kubelet journal has
  the same, and the node's nvidia-device-plugin log shows it restarting
  (`Stopping plugins` ... `Registered device plugin`) right across the pod's
  admission.
- Root cause is the pod that could not start (`scheduling`), not the
  rendezvous timeout the other pods report."""),
    "k8s_exception_cri_skew": ("exception", "tr_exception", """\
- CRI pod logs (`<rfc3339> stdout|stderr F <line>`) of 4 pods; worker-1's
  stderr has the `RuntimeError: corrupted input batch` traceback
  of rank 3 (`corrupted input batch at step 10`) and torchrun's Root Cause
  rank 3 exitcode 1; `kubectl describe`
  shows worker-1 Terminated, Reason Error, Exit Code 1 (the others too, all
  `Error` in `kubectl_get_pods.txt`: exit codes alone do not tell).
- The other pods fail with gloo `Connection closed by peer` after that time.
- Clock: the node of worker-2 runs 37 s ahead; CRI timestamps come from the
  node's clock, so they carry the same offset as the log lines."""),
}

# (path prefixes or suffixes that identify the file kind, label, what it is)
FILES_HELP = [
    (("/.log",), "*.log (top level)", "torchrun agent stdout+stderr of one node, named after the host (with --tee: worker lines too, prefixed [default<local_rank>]:)"),
    (("torchelastic/",), "torchelastic/<host>/<run>/attempt_<N>/<local_rank>/", "torchrun --log-dir tree: stdout.log, stderr.log, error.json (from @record); N = that agent's restart_count"),
    (("job.sbatch",), "job.sbatch", "the Slurm batch script"),
    (("slurm-",), "slurm-<id>.out", "Slurm job output (batch script + srun --label output of every task)"),
    (("slurm/",), "slurm/", "byte slices of slurmctld.log, slurmd-<node>.log, jobcomp.log covering this job"),
    (("sacct",), "sacct_P.txt, sacct.txt, sacct.json", "sacct -P --format=..., plain sacct, sacct --json (sacct_duplicates_P.txt: sacct -D, every run of a requeued job)"),
    (("scontrol_show_job",), "scontrol_show_job.txt", "scontrol show job -dd after the end"),
    (("sinfo_after", "scontrol_show_node"), "sinfo_after.txt, scontrol_show_node.txt", "node state right after a node failure"),
    (("var/log/pods/",), "var/log/pods/<ns>_<pod>_<uid>/<container>/0.log", "CRI container logs"),
    (("kubectl_",), "kubectl_*.txt", "kubectl describe pod / get events / get pods output (ages relative to when it ran)"),
    (("journal/",), "journal/<node>.log", "the node's journal (kernel, kubelet), journalctl short format"),
    (("truth.json",), "truth.json", "ground truth recorded by the harness (not a log: do not ingest)"),
    (("expected_verdict.json",), "expected_verdict.json", "the verdict a correct diagnosis gives (design.md section 4 shape)"),
]


def files_section(bundle):
    names = set()
    for r, _, fs in os.walk(bundle):
        for f in fs:
            names.add(os.path.relpath(os.path.join(r, f), bundle))

    def hit(key, n):
        if key == "/.log":  # a top-level *.log
            return "/" not in n and n.endswith(".log")
        return n.startswith(key)
    return "\n".join(f"- `{label}`: {text}" for keys, label, text in FILES_HELP
                     if any(hit(k, n) for k in keys for n in names))


def dash(x):
    return "-" if x is None else x


def captured_readme(name, sc, family, truth, basis):
    v = json.load(open(os.path.join(name, "expected_verdict.json")))["verdict"]
    skew = {h: o for h, o in truth["clock_offsets_s"].items() if o}
    mode = (f" on the Slurm cluster of `slurm_up.sh` (mode {truth['slurm_mode']})"
            if truth.get("slurm_mode") else "")
    return f"""# {os.path.basename(name)}

**Captured**, not composed: real {family} output, produced on
{truth['captured_at'][:10]} by `tools/capture/capture.py run {truth['scenario']} --out DIR`{mode}
(one Debian 12 host, torch {truth['environment']['torch']}, gloo on loopback;
each node is a process tree in its own UTS namespace{'; Slurm ' + truth['environment']['slurm'] if truth['environment'].get('slurm') and family != 'torchrun' else ''}).
Files are as the software wrote them; nothing was edited.

## What happened (ground truth)

{truth['description']}

Verdict: kind `{v['kind']}`, rank {dash(v['rank'])}, local_rank {dash(v['local_rank'])},
host {dash(v['host'])}, time {dash(v['time'])}{'; clock offsets (s, logged minus true): ' + json.dumps(skew) if skew else ''}.
Nodes and ranks: {json.dumps(truth['nodes'])}.

## Files

{files_section(name)}

{attempts_section(name)}## Basis for the verdict (what a careful reader uses)

{basis}
"""


def attempts_section(name):
    """A table of the run's attempts (expected_verdict.json), when it restarted."""
    atts = json.load(open(os.path.join(name, "expected_verdict.json"))).get("attempts")
    if not atts:
        return ""
    rows = []
    for a in atts:
        v = a.get("verdict") or {}
        who = ", ".join(f"{k} {v[k]}" for k in ("rank", "local_rank", "host") if v.get(k) is not None)
        blame = f"`{v['kind']}` {who} at {v['time']}" if v else "-"
        rows.append(f"| {a['id']} | {a['start']} | {a['end']} | {a['outcome']} | {blame} |")
    return ("## Attempts (expected_verdict.json `attempts`)\n\n"
            "The top-level verdict is the last failed attempt's. Times are true (UTC), "
            "from the harness's own records.\n\n"
            "| attempt | start | end | outcome | root cause |\n| --- | --- | --- | --- | --- |\n"
            + "\n".join(rows) + "\n\n")


def composed_readme(name, kind, src_truth, basis):
    v = json.load(open(os.path.join(name, "expected_verdict.json")))["verdict"]
    return f"""# {os.path.basename(name)}

**COMPOSED, not captured.** Kubernetes cannot run on the capture machine.
The training output inside the pod logs is real: it is the torchrun output
of `tools/capture/capture.py run {src_truth['scenario']}` captured on
{src_truth['captured_at'][:10]}, with the simulated host names replaced by pod
names and the run directory by `/workspace/run`, each line wrapped in the CRI
pod-log envelope with the CRI timestamp of its own logged time. The
Kubernetes layer (CRI files, `kubectl describe pod`, `kubectl get events`,
kubelet/kernel journald lines, device-plugin log) was written by
`tools/capture/compose_k8s.py {kind}` in the shapes of real incidents. See
`expected_verdict.json` → `composed_from` for the pod/node/rank mapping.

## What happened

Verdict: kind `{v['kind']}`, pod {v['pod']}, host (node) {v['host']}, rank
{dash(v['rank'])}, time {v['time']}. {v['summary']}.

## Files

{files_section(name)}

## Basis for the verdict (what a careful reader uses)

{basis}
"""


def main(argv):
    root = os.path.abspath(argv[0])
    dest = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(HERE, "..", "..", "sample_logs"))
    os.makedirs(dest, exist_ok=True)
    index = []
    for name, (sc, family, basis) in SAMPLES.items():
        src = os.path.join(root, sc)
        if not os.path.exists(os.path.join(src, "truth.json")):
            print(f"skip {name}: no capture of {sc} in {root}")
            continue
        d = os.path.join(dest, name)
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(src, d, ignore=shutil.ignore_patterns("line_times.json"))
        truth = json.load(open(os.path.join(d, "truth.json")))
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write(captured_readme(d, sc, family, truth, basis))
        kind = f"`{truth['kind']}`"
        if truth.get("attempts"):
            kind += " (+ attempts: " + ", ".join(a["outcome"] for a in truth["attempts"]) + ")"
        index.append((name, family, kind, "captured", truth["captured_at"][:10]))
    for name, (kind, sc, basis) in K8S.items():
        src = os.path.join(root, sc)
        if not os.path.exists(os.path.join(src, "truth.json")):
            print(f"skip {name}: no capture of {sc} in {root}")
            continue
        d = os.path.join(dest, name)
        shutil.rmtree(d, ignore_errors=True)
        compose_k8s.main([kind, src, d])
        truth = json.load(open(os.path.join(src, "truth.json")))
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write(composed_readme(d, kind, truth, basis))
        v = json.load(open(os.path.join(d, "expected_verdict.json")))["verdict"]
        index.append((name, "kubernetes", f"`{v['kind']}`", "COMPOSED", truth["captured_at"][:10]))
    write_index(dest, index)


def write_index(dest, index):
    """Write the rows of the bundles made now into sample_logs/README.md: a
    bundle's row is replaced, a new one added at the end of the table; rows
    of bundles not made now, and the text around the table, are kept (so a
    capture root with a few scenarios updates only those)."""
    rows = {n: f"| [{n}]({n}/) | {fam} | {k} | {how} {day} |" for n, fam, k, how, day in index}
    path = os.path.join(dest, "README.md")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(README_HEAD + "| bundle | family | kind | how, when |\n| --- | --- | --- | --- |\n")
    lines = open(path).read().split("\n")
    table = [i for i, l in enumerate(lines) if l.startswith("| [")]
    last = table[-1] if table else next(i for i, l in enumerate(lines) if l.startswith("| ---"))
    for n, row in rows.items():
        at = next((i for i in table if lines[i].startswith(f"| [{n}](")), None)
        if at is not None:
            lines[at] = row
        else:
            last += 1
            lines.insert(last, row)
    with open(path, "w") as f:
        f.write("\n".join(lines))


README_HEAD = """# sample_logs

Small incident bundles of failed distributed training jobs, each in the
native layout of the software that wrote it, with `expected_verdict.json`
(the verdict of design.md section 4 a correct diagnosis reaches) and a
`README.md` (how it was produced, and the evidence a careful reader would use).
Captured bundles also keep the harness's `truth.json`. `README.md`,
`truth.json` and `expected_verdict.json` are answers, not logs: leave them
out when ingesting a bundle.

The demo bundle (`ranktrace demo`) is **demo_sigkill_4node**: 4 nodes x 2
ranks of torchrun, rank 5 killed by SIGKILL.

Produced by `tools/capture` (see its README): `capture.py run-all
--include-slow --out ROOT`, then `make_samples.py ROOT`.

"""


if __name__ == "__main__":
    main(sys.argv[1:])
