"""truth.json: the contract of sample_logs/README.md ("Attempts in the answers") plus what the generator
knows (story, layout, seed, the telling, the clock offsets)."""

from __future__ import annotations

from emit import timefmt as TF

from .plan import SLURM_LAYOUTS, Run


def truth_of(run: Run, rend) -> dict:
    """The truth of the run `rend` (a launcher's Render) told."""
    atts = []
    for a in run.attempts:
        outcome = {"failure": "failed", "rdzv_timeout": "failed", "cancel": "cancelled", "complete": "completed",
                   "running": "running"}[a.ending]
        e = {"id": a.id, "start": TF.z(a.launch), "end": TF.z(a.end), "outcome": outcome, "boundary": a.boundary,
             "first_step": a.step0 + 1 if a.steps else None, "last_step": a.last_step if a.steps else None}
        if run.mechanism == "elastic" and a.restart_count:
            e["restart_count"] = a.restart_count
        if run.layout in SLURM_LAYOUTS:
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
            if f.rank is not None and not rend.rank_named(a, f):
                v["rank_named"] = False     # the culprit is right when its host is (and it names no other rank)
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
                    "nccl_timeout_s": run.timeout_s, "kernel_log": rend.kernel_form or run.dmesg_form,
                    **({"node_tz_hours": run.node_tz} if run.node_tz else {})},
        "launcher": {"torchrun_node": "torchrun", "torchrun_logdir": "torchrun", "slurm_srun": "slurm",
                     "k8s_cri": "kubernetes", "pdsh_deepspeed": "deepspeed",
                     "deepspeed_srun": "slurm+deepspeed", "mpirun_slurm": "slurm+mpirun"}[run.layout],
        "world_size": run.world, "nodes": {h: [a.hosts.index(h) * run.gpus + i for i in range(run.gpus)]
                                           for a in run.attempts[-1:] for h in a.hosts},
        "hosts": hosts,
        "pods": {h: rend.pods[h][0] for h in hosts} if run.layout == "k8s_cri" else None,
        "clock_offsets_s": {h: run.offsets[h] for h in hosts} | (
            {"slurmctld": run.offsets["slurmctld"]} if run.layout in SLURM_LAYOUTS else {}) | (
            {"control-plane": run.offsets["control-plane"]} if run.layout == "k8s_cri" else {}),
        "clock_note": "offset = how far that host's logged times run ahead of the true time; truth times are "
                      "true times",
        "attempts": atts, "verdict": verdict, "featured_attempt": run.featured + 1,
        "noise": {"count": len(rend.noise_log), "kinds": sorted({n["kind"] for n in rend.noise_log}),
                  "eval_subgroups": rend.eval_groups},
        "end_note": "an attempt's end is when its last process ended, clipped to the next attempt's start where "
                    "one node's teardown overlaps another node's rejoin (elastic restarts)",
    }
