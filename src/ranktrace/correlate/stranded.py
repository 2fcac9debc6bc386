"""Stranded GPUs: a synchronous job whose pods were only partly placed (k of n running) holds the
GPUs of the placed pods idle while they wait for the rest (in the rendezvous) until a timeout,
an eviction or a person ends it. The scheduler's side says why the others did not run:
FailedScheduling, UnexpectedAdmissionError, a Volcano PodGroup's 'N/M tasks in gang
unschedulable', Kueue's 'Exceeded the PodsReady timeout' / quota messages
(queries/detect/stranded.sql). Pure over the store.
"""

from __future__ import annotations

import datetime as dt

from .detectors.base import query
from .util import iso, rows, short, top_score

RUNNING = {"Running", "Completed", "Error", "Terminating", "OOMKilled"}   # statuses of a pod that did start


def stranded(con, verdict: dict) -> dict | None:
    """The "stranded" key: k of n pods running, the nodes holding idle GPUs, for how long."""
    rs = query(con, "stranded")
    not_placed = [r for r in rs if r["what"] == "not_placed"]
    if not not_placed:
        return None
    assigned = {r["pod"]: r["node"] for r in rs if r["what"] == "assigned" and r["pod"]}
    started = {r["pod"] for r in rs if r["what"] == "started" and r["pod"]}
    # a pod's log counts when it is the job's: it carries ranks, or the scheduler placed that pod
    logs = {r["pod"]: r for r in rs if r["what"] == "pod_log" and r["pod"] and (r["total"] or r["pod"] in assigned)}
    rows_ = {r["pod"]: r for r in rs if r["what"] == "pod_row" and r["pod"]}
    running = set(started) | set(logs) | {p for p, r in rows_.items() if r["message"] in RUNNING}
    known = set(assigned) | set(rows_) | set(logs) | started
    blocked: dict[str, dict] = {}
    for r in not_placed:
        p = r["pod"]
        if p and p in running and p not in logs:
            running.discard(p)   # assigned, then rejected at admission: it never ran
        if p and p in known and p not in running:
            blocked.setdefault(p, {"pod": p, "why": short(r["message"], 200), "file": r["file"], "line": r["line"]})
    gangs = [r for r in not_placed if r["total"]]
    expected = max((r["value"] or 0 for r in query(con, "allocation") if r["what"] == "pods_expected"), default=0)
    if gangs:   # the gang scheduler's own count: N of M tasks pending
        total = int(max(r["total"] for r in gangs))
        k = int(total - max(r["value"] or 0 for r in gangs))
    else:
        total = max(expected, len(running | set(blocked)))
        k = len(running)
    if not running or k <= 0 or k >= total:
        return None   # nothing placed (no GPU held) or everything placed (not stranded)
    nodes = sorted({assigned.get(p) or (logs.get(p) or {}).get("node") or (rows_.get(p) or {}).get("node")
                    for p in running} - {None, "", "<none>"})
    per_pod = max((r["value"] for r in query(con, "allocation") if r["what"] == "pod_gpus" and r["value"]), default=None)
    held = per_pod * len(running) if per_pod else None
    spans = [(logs[p]["ats"], logs[p]["value"] or 0) for p in running if p in logs and logs[p]["ats"] is not None]
    t0 = min((t for t, _ in spans), default=None)
    t1 = max((t + dt.timedelta(seconds=d) for t, d in spans), default=None)
    secs = (t1 - t0).total_seconds() if t0 is not None else None
    out = {"pods_total": total, "pods_running": k, "running_pods": sorted(running), "blocked": list(blocked.values()),
           "nodes_holding_gpus": nodes, "gpus_per_pod": per_pod, "gpus_idle": held,
           "from": iso(t0), "to": iso(t1), "seconds": round(secs, 3) if secs is not None else None,
           "gpu_hours": round(held * secs / 3600.0, 4) if held and secs else None}
    out["summary"] = (f"stranded GPUs: {k} of {total} pods placed"
                      + (f" ({held} GPUs on {', '.join(nodes)})" if held else (f" on {', '.join(nodes)}" if nodes else ""))
                      + (f" idle for {secs:g} s ({out['from']} to {out['to']})" if secs is not None else "")
                      + (f", waiting for {', '.join(b['pod'] for b in blocked.values())}" if blocked else ""))
    return out


def apply(con, doc: dict) -> None:
    """Add doc["stranded"]; when the verdict is the rendezvous timeout of the placed pods (or
    unknown) and a pod of the job could not be placed for a scheduler's reason, that pod's
    scheduling is the root cause: the verdict becomes `scheduling` on it, the timeout stays
    as a hypothesis."""
    v = doc["verdict"]
    st = stranded(con, v)
    doc["stranded"] = st
    imp = doc.get("impact")
    if st and imp and st["gpu_hours"] is not None:
        # only the placed pods held GPUs: they are the cost, not the whole request
        imp.update(gpus=st["gpus_idle"], gpu_hours=st["gpu_hours"], **{"from": st["from"], "to": st["to"]},
                   seconds=st["seconds"], basis=f"GPUs held by the {st['pods_running']} placed of {st['pods_total']} "
                                                f"pods (nvidia.com/gpu: {st['gpus_per_pod']} each)")
    if not st or not st["blocked"]:
        return
    if v.get("kind") == "scheduling" and v.get("pod") in {b["pod"] for b in st["blocked"]}:
        _timeouts_followed(con, doc)
        return
    if v.get("kind") not in ("rendezvous_timeout", "unknown"):
        return
    b = st["blocked"][0]
    old = dict(v)
    # the placed pods' rendezvous timeout is part of this explanation: it ranks at least as high
    doc.setdefault("hypotheses", []).insert(0, {"kind": "scheduling", "rank": None, "host": None,
                                                "score": top_score(doc, 0.8), "why": st["summary"]})
    v.update(kind="scheduling", rank=None, local_rank=None, host=None, pid=None, gpu=None, pod=b["pod"],
             time=st["from"] or old.get("time"),
             confidence=max(0.8, old.get("confidence") or 0.0),
             summary=(f"scheduling: pod {b['pod']} was never placed ({b['why'][:160]}); {st['summary']}; the "
                      f"{old.get('kind')} of the placed pods followed")[:400])
    doc["evidence"] = [{"file": b["file"], "line": b["line"], "time": None, "role": "cause", "text": b["why"]}] + \
        list(doc.get("evidence") or [])
    doc["next_steps"] = [f"kubectl describe pod {b['pod']}   # why it is not placed",
                         "kubectl describe podgroup / kubectl get workloads   # the gang scheduler's view (Volcano, Kueue)",
                         "kubectl describe nodes | grep -A5 'Allocated resources'   # who holds the GPUs"]


def _timeouts_followed(con, doc: dict) -> None:
    """The verdict already names the pod that was never placed: the placed
    pods' rendezvous timeouts followed from it. They are its cascade, and
    their hypothesis supports it instead of outranking it (a 0.90
    'alternative' beside a 0.60 verdict, and "CASCADE none seen" beside three
    RendezvousTimeoutErrors)."""
    v = doc["verdict"]
    rdzv = [h for h in doc.get("hypotheses") or [] if h.get("kind") == "rendezvous_timeout"]
    for h in rdzv:
        if not (h.get("why") or "").startswith("followed from"):
            h["why"] = f"followed from pod {v['pod']} never placed: {h.get('why') or ''}"[:600]
    v["confidence"] = round(max([0.8, v.get("confidence") or 0.0] + [h.get("score") or 0.0 for h in rdzv]), 2)
    have = {(c.get("file"), c.get("line")) for c in doc.get("cascade") or []}
    for r in rows(con, """
            SELECT ats, host, pod, rank, kind, file, line FROM aligned_events WHERE kind = 'rdzv_timeout'
            QUALIFY row_number() OVER (PARTITION BY host, pod, rank ORDER BY ats NULLS LAST, file, line) = 1
            ORDER BY ats NULLS LAST, file, line LIMIT 20"""):
        if (r["file"], r["line"]) not in have:
            doc.setdefault("cascade", []).append({"time": iso(r["ats"]), "host": r["host"], "pod": r["pod"],
                                                  "rank": r["rank"], "kind": r["kind"], "file": r["file"],
                                                  "line": r["line"]})
