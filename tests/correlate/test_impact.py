"""The cost of an incident: GPUs from the allocation the logs show, idle from the first failure
to the end of the job (or the last line)."""

from __future__ import annotations

from ranktrace.correlate import diagnose
from ranktrace.correlate.impact import impact_line

from .fixtures import ev as _ev
from .fixtures import steps, store


def ev(*a, format=None, **kw):
    e = _ev(*a, **kw)
    if format:
        e["format"] = format
    return e

HOSTS = {"n1": [0, 1], "n2": [2, 3]}


def _failing(extra):
    # 4 ranks step every 0.5 s; rank 3 raises at 10 s; the last line is at 70 s (a watchdog
    # timeout 60 s later on rank 0)
    return steps(HOSTS, 20) + [
        ev(10.0, "RuntimeError: boom", kind="python_exception", host="n2", rank=3),
        ev(70.0, "[rank0] Watchdog caught collective operation timeout", kind="collective_timeout",
           host="n1", rank=0)] + extra


def test_slurm_tres_wins_and_the_window_ends_at_the_last_line():
    con = store(_failing([
        ev(0.1, "JobId=7 JobName=pretrain", format="scontrol", file="scontrol_show_job.txt",
           raw="JobId=7 JobName=pretrain\n   NumNodes=2 NumCPUs=4\n   TRES=cpu=4,mem=4000M,node=2,billing=4,gres/gpu=16\n"),
        ev(0.2, "worker started local_rank=0 world_size=4", host="n1", rank=0)]))
    imp = diagnose(con)["impact"]
    assert imp["gpus"] == 16 and "gres/gpu=16" in imp["basis"]
    assert imp["ranks"] == imp["idle_ranks"] == 4 and imp["nodes"] == 2
    assert imp["from"] == "2026-03-02T03:00:10.000Z" and imp["to"] == "2026-03-02T03:01:10.000Z"
    assert imp["seconds"] == 60.0 and imp["gpu_hours"] == round(16 * 60 / 3600, 4)
    assert impact_line(imp).startswith("0.2667 GPU-hours lost: 16 GPUs idle for 60 s")


def test_sacct_step_rows_do_not_count_and_job_end_bounds_the_window():
    con = store(_failing([
        ev(0.1, "9|pretrain|gpu|FAILED|1:0|...|billing=8,cpu=8,gres/gpu=8,mem=8G,node=2|None", format="sacct",
           file="sacct_P.txt"),
        ev(0.2, "9.0|launch.sh||FAILED|1:0|...|cpu=8,gres/gpu=32,mem=8G,node=2|", format="sacct",
           file="sacct_P.txt", step_id="9.0")]))
    con.execute('CREATE TABLE slurm_job_state (event_id BIGINT, job_id VARCHAR, step VARCHAR, state VARCHAR, '
                '"end" VARCHAR)')
    con.execute("INSERT INTO slurm_job_state VALUES (1, '9', NULL, 'FAILED', '2026-03-02T03:00:40'), "
                "(2, '9', '0', 'FAILED', '2026-03-02T03:00:55')")
    imp = diagnose(con)["impact"]
    assert imp["gpus"] == 8, imp
    assert imp["to"] == "2026-03-02T03:00:40.000Z" and imp["to_basis"] == "Slurm EndTime of the job"
    assert imp["gpu_hours"] == round(8 * 30 / 3600, 4)


def test_pod_requests_times_pods_then_world_size_then_ranks():
    pods = [ev(0.1, "      nvidia.com/gpu:  4", format="kubectl_describe", pod="w-1", file="describe.txt"),
            ev(0.2, "      PET_NNODES:          3", format="kubectl_describe", pod="w-1", file="describe.txt")]
    imp = diagnose(store(_failing(pods)))["impact"]
    assert imp["gpus"] == 12 and imp["basis"] == "pod request nvidia.com/gpu: 4 x 3 pods (PET_NNODES=3)"
    imp = diagnose(store(_failing([ev(0.2, "process group ready backend=nccl world_size=6", host="n1", rank=0)])))["impact"]
    assert imp["gpus"] == 6 and imp["basis"].startswith("world size 6, one GPU per rank assumed")
    imp = diagnose(store(_failing([])))["impact"]
    assert imp["gpus"] == 4 and imp["basis"].startswith("4 ranks seen in the logs")


def test_no_failure_no_impact_and_a_job_that_never_ran_costs_from_its_first_line():
    assert diagnose(store(steps(HOSTS, 5)))["impact"] is None
    con = store([ev(0.0, "JobId=3", format="scontrol", file="s.txt", raw="JobId=3\n   TRES=cpu=2,node=1,gres/gpu=8\n"),
                 ev(5.0, "starting agent", host="n1"),
                 ev(65.0, "RendezvousTimeoutError: ...", kind="rdzv_timeout", host="n1")])
    d = diagnose(con)
    assert d["verdict"]["kind"] == "rendezvous_timeout"
    imp = d["impact"]
    assert imp["from"] == "2026-03-02T03:00:00.000Z" and imp["from_basis"].startswith("the first line")
    assert imp["gpu_hours"] == round(8 * 65 / 3600, 4)
