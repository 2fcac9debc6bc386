"""What the incident cost: GPU-hours held idle between the first failure and the end of the job.

A synchronous job stops making progress on every rank once one fails (the others wait in a
collective until a timeout or the scheduler ends them), so the whole allocation is lost from
the verdict's time to the end of the job (Slurm's EndTime when the logs have it, else the
last line). For a job that never assembled (rendezvous_timeout, scheduling) the allocation
was idle from the first line on.

The allocation comes from the logs (queries/detect/allocation.sql), the scheduler first:
  1. Slurm TRES gres/gpu=N of the job (scontrol show job, sacct AllocTRES, jobcomp Tres=);
  2. Slurm GPUs per node (TresPerNode / #SBATCH --gres=gpu:N) x nodes;
  3. a pod's nvidia.com/gpu request x the pods of the job (PET_NNODES, pods seen);
  4. the torch world size / NCCL communicator size, one GPU per rank assumed;
  5. the ranks seen in the logs, one GPU per rank assumed.
`basis` says which one was used. Pure over the store (temp view aligned_events).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict

from .detectors.base import query
from .util import has_columns, iso, rows

NEVER_STARTED = {"rendezvous_timeout", "scheduling"}


def _parse(t: str | None) -> dt.datetime | None:
    if not t:
        return None
    try:
        x = dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        return None
    return x.astimezone(dt.timezone.utc).replace(tzinfo=None) if x.tzinfo else x


def _where(r: dict) -> str:
    return f"{r['file']}:{r['line']}"


def _statements(con) -> dict[str, list[dict]]:
    """What the logs say about the job's size (queries/detect/allocation.sql), by what they say."""
    by: dict[str, list[dict]] = defaultdict(list)
    for r in query(con, "allocation"):
        if r["value"] is not None and r["value"] > 0:
            by[r["what"]].append(r)
    return by


def _world(by: dict[str, list[dict]]) -> int | None:
    """The torch world size, or the largest NCCL communicator's (the world's)."""
    return max((r["value"] for r in by["world_size"] + by["nccl_nranks"]), default=None)


def allocation(con) -> dict:
    """{gpus, ranks, nodes, basis}: the job's size as the logs show it (None where unknown)."""
    by = _statements(con)
    seen = rows(con, "SELECT count(DISTINCT rank) AS ranks, count(DISTINCT host) FILTER (WHERE rank IS NOT NULL) "
                     "AS hosts, count(DISTINCT pod) FILTER (WHERE rank IS NOT NULL) AS pods "
                     "FROM aligned_groups")[0]
    world = _world(by)
    ranks = world or seen["ranks"] or None
    nodes = max((r["value"] for r in by["slurm_nodes"]), default=None) or max(seen["hosts"], seen["pods"]) or None
    gpus = basis = None
    if by["slurm_gpus"]:
        r = max(by["slurm_gpus"], key=lambda r: r["value"])
        gpus, basis = r["value"], f"Slurm allocation gres/gpu={r['value']} ({_where(r)})"
    elif by["slurm_gpn"] and by["slurm_nodes"]:
        g = max(by["slurm_gpn"], key=lambda r: r["value"])
        n = max(r["value"] for r in by["slurm_nodes"])
        gpus, basis = g["value"] * n, f"Slurm gres gpu:{g['value']} per node x {n} nodes ({_where(g)})"
    elif by["pod_gpus"]:
        per_pod: dict[str, int] = {}
        for r in by["pod_gpus"]:
            k = r["pod"] or r["file"]
            per_pod[k] = max(per_pod.get(k, 0), r["value"])
        g = max(per_pod.values())
        expected = max((r["value"] for r in by["pods_expected"]), default=0)
        n = max(expected, seen["pods"] or 0, len(per_pod))
        src = f"PET_NNODES={expected}" if expected == n and expected else f"{n} pods in the logs"
        gpus, basis = g * n, f"pod request nvidia.com/gpu: {g} x {n} pods ({src})"
    elif world:
        what = "world size" if by["world_size"] else "NCCL communicator size"
        gpus, basis = world, f"{what} {world}, one GPU per rank assumed (no scheduler allocation in the logs)"
    elif seen["ranks"]:
        gpus, basis = seen["ranks"], (f"{seen['ranks']} ranks seen in the logs, one GPU per rank assumed "
                                      "(no allocation nor world size in the logs)")
    return {"gpus": gpus, "ranks": ranks, "nodes": nodes, "basis": basis or "no allocation in the logs"}


# a rendezvous master that names no node (torchrun --standalone, a loopback address)
_LOOPBACK = re.compile(r"(?i)^(?:localhost|127\.[\d.]+|::1|0\.0\.0\.0)$")


def absent_ranks(con) -> dict | None:
    """The ranks of the job's world no line of the input names: {world, seen, missing, host}, or None
    when the world size is unknown or every rank has lines. `host`: the node that ran them when the logs
    say so: torchrun's master_addr is the node of group rank 0 (the rendezvous store's host, which runs
    global ranks 0..n-1), named when rank 0 is among the missing and no agent of that node wrote a line."""
    world = _world(_statements(con))
    seen = {r for (r,) in con.execute("SELECT DISTINCT rank FROM aligned_groups WHERE rank IS NOT NULL").fetchall()}
    if not world or not seen or max(seen) >= world:   # (a rank beyond the size read: not this world's size)
        return None
    missing = sorted(set(range(world)) - seen)
    if not missing:
        return None
    host = None
    if 0 in missing and has_columns(con, "rdzv_result", "master_addr"):
        found = rows(con, "SELECT list(DISTINCT r.master_addr) AS masters, list(DISTINCT e.host) AS agents "
                          "FROM rdzv_result r JOIN events e USING (event_id) WHERE r.master_addr <> ''")[0]
        masters = [m for m in found["masters"] or [] if not _LOOPBACK.match(m)]
        hosts = {h for (h,) in con.execute("SELECT DISTINCT host FROM aligned_groups WHERE host IS NOT NULL").fetchall()}
        if len(masters) == 1 and masters[0] not in hosts and masters[0] not in (found["agents"] or []):
            host = masters[0]
    return {"world": world, "seen": len(seen), "missing": missing, "host": host}


def _job_end(con) -> dt.datetime | None:
    """Slurm's EndTime of the job (not of a step), written in the controller's time (read as UTC)."""
    if not has_columns(con, "slurm_job_state", "end"):
        return None
    step = "AND step IS NULL" if has_columns(con, "slurm_job_state", "step") else ""
    r = con.execute(f"SELECT max(try_strptime(\"end\", '%Y-%m-%dT%H:%M:%S')) FROM slurm_job_state "
                    f"WHERE \"end\" IS NOT NULL {step}").fetchone()
    return r[0] if r else None


def impact(con, verdict: dict) -> dict | None:
    """The "impact" key of the verdict JSON: {gpus, ranks, idle_ranks, nodes, from, to, seconds,
    gpu_hours, basis, to_basis}; None when nothing failed."""
    kind = verdict.get("kind")
    if kind in (None, "none"):
        return None
    first, last = con.execute("SELECT min(first_ats), max(last_ats) FROM aligned_groups").fetchone()
    t0 = _parse(verdict.get("time"))
    from_basis = "the first failure (verdict time)"
    if kind in NEVER_STARTED or t0 is None:
        t0, from_basis = first, "the first line (the job never ran)" if kind in NEVER_STARTED else "the first line"
    if t0 is None:
        return None
    end = _job_end(con)
    if end is not None and end >= t0 and (last is None or end - last <= dt.timedelta(days=1)):
        t1, to_basis = end, "Slurm EndTime of the job"
    else:
        t1, to_basis = last, "the last line of the logs"
    if t1 is None or t1 < t0:
        t1 = t0
    a = allocation(con)
    secs = (t1 - t0).total_seconds()
    gpu_hours = round(a["gpus"] * secs / 3600.0, 4) if a["gpus"] else None
    return {"gpus": a["gpus"], "ranks": a["ranks"], "idle_ranks": a["ranks"], "nodes": a["nodes"],
            "from": iso(t0), "to": iso(t1), "seconds": round(secs, 3), "gpu_hours": gpu_hours,
            "basis": a["basis"], "from_basis": from_basis, "to_basis": to_basis}


def impact_line(imp: dict | None) -> str:
    """One line for the text verdict, the report and the TUI header."""
    if not imp or imp.get("gpu_hours") is None:
        return ""
    return (f"{imp['gpu_hours']:g} GPU-hours lost: {imp['gpus']} GPUs idle for {imp['seconds']:g} s "
            f"({imp['from']} to {imp['to']}; {imp['basis']})")
