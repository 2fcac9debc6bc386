"""Slurm's lines: slurmctld and slurmd daemon logs ('[2026-11-29T16:42:26.906] msg', job-scoped slurmstepd
lines '[3.0] msg'), slurmstepd's messages in the job's output, srun's task reports.

Sources: real Slurm 22.05 captures (sample_logs/slurm_*: 'sched: Allocate JobId=3 NodeList=n[1-4] #CPUs=8
Partition=gpu', 'Launching batch job 3 for UID 0', 'launch task StepId=3.0 request from UID:...',
'_job_complete: JobId=3 WEXITSTATUS 1', 'error: Nodes m2 not responding, setting DOWN', 'Killing JobId=13 on
failed node m2', '[20.0] task 5 (19303) exited. Killed by signal 9.', 'Detected 1 oom-kill event(s) in
StepId=3.0. Some of your processes may have been killed by the cgroup out-of-memory handler.', the srun
'error: m2: task 7: Segmentation fault' / 'tasks 0-57,59-63: Terminated' forms); SchedMD/slurm master
(2026-08): src/slurmctld/job_mgr.c 'requeue job %pJ due to failure of node %s', '%s: requeue %pJ per
user/system request' (from _job_complete), 'Requeuing %pJ' (batch_requeue_fini), src/slurmctld/gang.c
'preempted %pJ has been requeued'; src/plugins/task/cgroup/task_cgroup_memory.c 'Detected %d oom_kill
event%s in %ps. Some of the step tasks have been OOM Killed.'; src/common/env.c SLURM_RESTART_COUNT;
src/common/print_fields.c '%r' (the restart count in --output names).
"""

from __future__ import annotations

import datetime as dt

from . import timefmt


def daemon(t: dt.datetime, msg: str, scope: str | None = None) -> str:
    return f"[{timefmt.slurm(t)}] " + (f"[{scope}] " if scope else "") + msg


def hostlist(hosts: list[str]) -> str:
    """Compress 'node01,node02,node03' -> 'node[01-03]' (same prefix, zero-padded numbers)."""
    import re
    parts = [re.match(r"^(.*?)(\d+)$", h) for h in hosts]
    if not parts or any(p is None for p in parts) or len({p.group(1) for p in parts}) != 1:
        return ",".join(hosts)
    pre = parts[0].group(1)
    width = len(parts[0].group(2))
    nums = sorted(int(p.group(2)) for p in parts)
    runs, s = [], nums[0]
    for a, b in zip(nums, nums[1:] + [None]):
        if b != a + 1:
            runs.append(f"{s:0{width}d}" if s == a else f"{s:0{width}d}-{a:0{width}d}")
            s = b
    return f"{pre}[{','.join(runs)}]" if len(nums) > 1 else hosts[0]


def ranges(ids: list[int]) -> str:
    """srun's task list: '0-57,59-63'."""
    ids = sorted(ids)
    out, s = [], ids[0]
    for a, b in zip(ids, ids[1:] + [None]):
        if b != a + 1:
            out.append(str(s) if s == a else f"{s}-{a}")
            s = b
    return ",".join(out)


# slurmctld
def submit(t, job, prio=4294901760) -> str:
    return daemon(t, f"_slurm_rpc_submit_batch_job: JobId={job} InitPrio={prio} usec=412")


def allocate(t, job, hosts, cpus, partition="gpu") -> str:
    return daemon(t, f"sched: Allocate JobId={job} NodeList={hostlist(hosts)} #CPUs={cpus} Partition={partition}")


def job_complete(t, job, status: int) -> list[str]:
    return [daemon(t, f"_job_complete: JobId={job} WEXITSTATUS {status}"),
            daemon(t, f"_job_complete: JobId={job} done")]


def requeue_request(t, job) -> str:
    return daemon(t, f"_job_complete: requeue JobId={job} per user/system request")


def requeue_node_fail(t, job, node) -> str:
    return daemon(t, f"requeue job JobId={job} due to failure of node {node}")


def requeuing(t, job) -> str:
    return daemon(t, f"Requeuing JobId={job}")


def preempt_requeued(t, job) -> str:
    return daemon(t, f"preempted JobId={job} has been requeued")


def not_responding(t, node, down: bool) -> str:
    return daemon(t, f"error: Nodes {node} not responding" + (", setting DOWN" if down else ""))


def kill_on_failed_node(t, job, node) -> str:
    return daemon(t, f"Killing JobId={job} on failed node {node}")


# slurmd (the node's daemon log; job-scoped lines come from slurmstepd)
def launch_batch(t, job, uid=1000) -> str:
    return daemon(t, f"Launching batch job {job} for UID {uid}")


def launch_task(t, job, step, uid=1000, ip="10.10.0.1", port=41262) -> str:
    return daemon(t, f"launch task StepId={job}.{step} request from UID:{uid} GID:{uid} HOST:{ip} PORT:{port}")


def task_exit(t, job, step, task, pid, code: int | None = None, signal: int | None = None) -> str:
    what = f"exited with exit code {code}." if signal is None else f"exited. Killed by signal {signal}."
    return daemon(t, f"task {task} ({pid}) {what}", scope=f"{job}.{step}")


def oom_event(t, job, step, n=1, new_form=True) -> str:
    if new_form:
        return daemon(t, f"error: Detected {n} oom_kill event{'s' if n > 1 else ''} in StepId={job}.{step}. Some of "
                         "the step tasks have been OOM Killed.", scope=f"{job}.{step}")
    return daemon(t, f"error: Detected {n} oom-kill event(s) in StepId={job}.{step}. Some of your processes may have "
                     "been killed by the cgroup out-of-memory handler.", scope=f"{job}.{step}")


def stepd_cancelled(t, job, step, node, reason: str | None = None, job_level=False) -> str:
    what = f"JOB {job}" if job_level else f"STEP {job}.{step}"
    tail = f" DUE TO {reason}" if reason else ""
    return daemon(t, f"error: *** {what} ON {node} CANCELLED AT {timefmt.slurm_s(t)}{tail} ***",
                  scope=f"{job}.batch" if job_level else f"{job}.{step}")


def done_with_job(t, job, step) -> str:
    return daemon(t, "done with job", scope=f"{job}.{step}")


# in the job's output file (slurm-<job>.out), from srun and slurmstepd
def srun_task_error(node, tasks: list[int], what: str) -> str:
    t = f"task {tasks[0]}" if len(tasks) == 1 else f"tasks {ranges(tasks)}"
    return f"srun: error: {node}: {t}: {what}"


def srun_terminating(job, step) -> str:
    return f"srun: launch/slurm: _step_signal: Terminating StepId={job}.{step}"


def srun_aborted() -> str:
    return "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."


def srun_node_failure(node) -> str:
    return f"srun: error: Node failure on {node}"


def stepd_in_output(t, job, step, node, reason: str | None = None, job_level=False) -> str:
    what = f"JOB {job}" if job_level else f"STEP {job}.{step}"
    tail = f" DUE TO {reason}" if reason else ""
    return f"slurmstepd: error: *** {what} ON {node} CANCELLED AT {timefmt.slurm_s(t)}{tail} ***"


def stepd_oom_in_output(job, step, n=1, new_form=True) -> str:
    if new_form:
        return (f"slurmstepd: error: Detected {n} oom_kill event{'s' if n > 1 else ''} in StepId={job}.{step}. Some of "
                "the step tasks have been OOM Killed.")
    return (f"slurmstepd: error: Detected {n} oom-kill event(s) in StepId={job}.{step}. Some of your processes may "
            "have been killed by the cgroup out-of-memory handler.")
