"""A broken gang: one worker pod of a synchronous job restarted alone (the kubelet's restart of
a failed container, or the training operator's restart of one replica) while its peers wait
in a collective that can never complete, until a watchdog or a person ends the job.

Evidence (queries/detect/gang.sql): the pod's restart count (describe / get pods), `Back-off
restarting failed container`, the operator's `is restarting because N ... replica(s) failed`,
and a second CRI container log (`.../<container>/1.log`), in which the pod's ranks start again.
The peers (ranks of pods that did not restart) print nothing from the first failure until their
next line (the NCCL watchdog, 10-30 min later) or the end of the logs.

The verdict's root cause is not changed (the first failure stays the cause); this adds what it
caused: which pods restarted, which ranks waited on which nodes, from when to when.
Pure over the store (temp view aligned_events).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from .detectors.base import query
from .util import iso, rows

QUIET_S = 30.0    # a peer that printed nothing for this long after the restart was waiting


def _parse(t):
    if not t:
        return None
    x = dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    return x.astimezone(dt.timezone.utc).replace(tzinfo=None) if x.tzinfo else x


def gang(con, verdict: dict) -> dict | None:
    """The "gang" key of the verdict JSON, or None when no pod restarted alone."""
    rs = query(con, "gang")
    if not rs:
        return None
    known = {r["pod"] for r in rows(con, "SELECT DISTINCT pod FROM aligned_groups WHERE pod IS NOT NULL")}
    pod_ranks: dict[str, set[int]] = defaultdict(set)
    pod_host: dict[str, str] = {}
    for r in rows(con, "SELECT pod, rank, any_value(host) AS host FROM aligned_groups WHERE pod IS NOT NULL "
                       "GROUP BY pod, rank"):
        if r["rank"] is not None:
            pod_ranks[r["pod"]].add(r["rank"])
        if r["host"]:
            pod_host.setdefault(r["pod"], r["host"])
    restarted: dict[str, dict] = {}

    def mark(pod, why, r, when=None):
        if not pod or pod not in known:
            return
        p = restarted.setdefault(pod, {"pod": pod, "restarts": None, "restart_at": None, "evidence": []})
        if why not in [e["why"] for e in p["evidence"]]:
            p["evidence"].append({"why": why, "file": r["file"], "line": r["line"]})
        if when is not None and (p["restart_at"] is None or when < p["restart_at"]):
            p["restart_at"] = when
    operator = None
    for r in rs:
        w, v = r["what"], r["value"]
        if w in ("restart_count", "get_restarts") and v:
            mark(r["pod"], f"restart count {v}", r)
            if r["pod"] in restarted:
                restarted[r["pod"]]["restarts"] = max(restarted[r["pod"]]["restarts"] or 0, v)
        elif w == "backoff":
            mark(r["pod"], "Back-off restarting failed container", r)
        elif w == "container_log" and v and v >= 1:
            mark(r["pod"], f"container log {v}.log (the container's restart {v})", r, r["ats"])
        elif w == "operator":
            operator = r
    if not restarted:
        return None
    all_ranks = set().union(*pod_ranks.values()) if pod_ranks else set()
    restarted_ranks = set().union(*(pod_ranks.get(p, set()) for p in restarted))
    waiting = sorted(all_ranks - restarted_ranks)
    if not waiting:
        return None   # every pod restarted: the gang restarted whole, it is not broken
    t_fail = _parse(verdict.get("time"))
    restart_at = min((p["restart_at"] for p in restarted.values() if p["restart_at"]), default=None)
    t_from = t_fail or restart_at
    last = con.execute("SELECT max(last_ats) FROM aligned_groups").fetchone()[0]
    # each waiting rank: its next line after the restart (the watchdog), if any; the lines it was
    # still writing when the first failure happened (its own step) are not a sign of life
    quiet_ref = restart_at or (t_from + dt.timedelta(seconds=5) if t_from else None)
    nxt = {r["rank"]: r["t"] for r in rows(con, "SELECT rank, min(ats) AS t FROM aligned_events WHERE rank IN "
                                                "(SELECT unnest(?)) AND ats > ? GROUP BY rank",
                                           [waiting, quiet_ref])} if quiet_ref else {}
    silent = [k for k in waiting if quiet_ref is None or nxt.get(k) is None
              or (nxt[k] - quiet_ref).total_seconds() >= QUIET_S]
    if not silent:
        return None   # the peers kept talking (they noticed and failed at once): not a stuck gang
    t_to = min((nxt[k] for k in silent if nxt.get(k) is not None), default=last)
    waiting_pods = sorted({p for p, ks in pod_ranks.items() if ks & set(silent)} - set(restarted))
    nodes = sorted({pod_host[p] for p in waiting_pods if p in pod_host})
    again = sorted(k for p in restarted for k in pod_ranks.get(p, set()))
    out = {
        "restarted_pods": [{"pod": p["pod"], "node": pod_host.get(p["pod"]), "ranks": sorted(pod_ranks.get(p["pod"], ())),
                            "restarts": p["restarts"], "restart_at": iso(p["restart_at"]), "evidence": p["evidence"]}
                           for p in sorted(restarted.values(), key=lambda p: p["pod"])],
        "restarted_ranks": again, "waiting_ranks": silent, "waiting_pods": waiting_pods, "waiting_nodes": nodes,
        "idle_ranks": len(silent) + len(again), "from": iso(t_from), "to": iso(t_to),
        "idle_s": round((t_to - t_from).total_seconds(), 3) if t_to and t_from else None,
        "operator": {"file": operator["file"], "line": operator["line"]} if operator else None,
    }
    out["summary"] = (f"broken gang: pod {', '.join(p['pod'] for p in out['restarted_pods'])} restarted alone"
                      + (f" at {out['restarted_pods'][0]['restart_at']}" if out["restarted_pods"][0]["restart_at"] else "")
                      + (f", its ranks {', '.join(map(str, again))} starting again" if again else "")
                      + f", while ranks {', '.join(map(str, silent))}"
                      + (f" on {', '.join(nodes)}" if nodes else "")
                      + f" printed nothing from {out['from']} to {out['to']}"
                      + (f" ({out['idle_s']:g} s)" if out["idle_s"] is not None else "")
                      + f": {out['idle_ranks']} ranks idle")
    return out
