"""Control-plane saturation: etcd (slow fdatasync, slow applies, leader changes, lost quorum,
failed requests) and kube-apiserver (etcd errors, slow traced requests), and what they did to
the nodes: kubelets that could not write their status or lease, nodes then marked NotReady.

When a node went NotReady (or a status write failed) while etcd was saturated, and the node
itself shows no fault of its own (no kernel panic, Xid, OOM, hung task on it), the node is not
the culprit: the verdict becomes `control_plane`, naming the etcd member whose disk or requests
were slow, and the node's verdict stays as an alternative hypothesis.

Lines come from queries/detect/controlplane.sql. Pure over the store.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter

from .detectors.base import query
from .util import iso, short, top_score

GRACE_S = 60.0       # a node marked NotReady this long after the last etcd trouble is still its effect
MIN_TROUBLE = 3      # etcd/apiserver lines needed to call the control plane saturated
STRONG = ("etcd_slow_disk", "etcd_slow_request", "etcd_request_failed", "apiserver_etcd_error", "apiserver_slow_request")
NODE_FAULTS = ("gpu_xid", "host_oom", "kernel_panic", "kernel_hung_task", "kernel_lockup", "gpu_unhealthy", "machine_check")


def _parse(t):
    if not t:
        return None
    x = dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    return x.astimezone(dt.timezone.utc).replace(tzinfo=None) if x.tzinfo else x


def controlplane(con) -> dict | None:
    """The "control_plane" key: the saturation window, what etcd/apiserver said, the nodes it hit."""
    rs = query(con, "controlplane")
    trouble = [r for r in rs if r["what"] in ("etcd", "apiserver") and r["ats"] is not None and not _bootstrap(r)]
    strong = [r for r in trouble if r["kind"] in STRONG]
    if len(trouble) < MIN_TROUBLE or not strong:
        return None
    # the window: from the first strong sign (slow disk / request, failed request, apiserver error);
    # leader changes and lost peers alone also happen when members start or stop on purpose
    t0, t1 = min(r["ats"] for r in strong), max(r["ats"] for r in trouble)
    lo, hi = t0 - dt.timedelta(seconds=10), t1 + dt.timedelta(seconds=GRACE_S)
    effects = [r for r in rs if r["what"] in ("status_write", "notready")
               and (r["ats"] is None or lo <= r["ats"] <= hi)]
    kinds = Counter(r["kind"] for r in trouble)
    slow = [r for r in trouble if r["kind"] in ("etcd_slow_disk", "etcd_slow_request") and r["took_s"]]
    by_member = Counter(r["host"] for r in trouble if r["what"] == "etcd" and r["kind"] == "etcd_slow_disk" and r["host"])
    worst = by_member.most_common(1)[0][0] if by_member else None
    nodes = sorted({r["node"] for r in effects if r["node"]})
    notready = sorted({r["node"] for r in effects if r["what"] == "notready" and r["node"]})
    first = {}
    for r in trouble + effects:
        first.setdefault(r["kind"] or r["what"], r)
    return {
        "saturated": True, "from": iso(t0), "to": iso(t1),
        "etcd": {"slow_fdatasync": kinds["etcd_slow_disk"], "slow_requests": kinds["etcd_slow_request"],
                 "leader_changes": kinds["etcd_leader_change"], "peer_trouble": kinds["etcd_peer_unhealthy"],
                 "failed_requests": kinds["etcd_request_failed"],
                 "max_took_s": round(max((r["took_s"] for r in slow), default=0.0), 3) or None,
                 "slow_disk_member": worst},
        "apiserver": {"etcd_errors": kinds["apiserver_etcd_error"], "slow_requests": kinds["apiserver_slow_request"]},
        "status_write_failures": sum(1 for r in effects if r["what"] == "status_write"),
        "affected_nodes": nodes, "notready_nodes": notready,
        "evidence": [{"file": r["file"], "line": r["line"], "time": iso(r["ats"]), "text": short(r["message"], 200)}
                     for r in sorted(first.values(), key=lambda r: (r["ats"] is None, r["ats"] or dt.datetime.max))][:8],
    }


def _bootstrap(r: dict) -> bool:
    """The elections of a cluster that is starting (terms 1-2) are not trouble."""
    m = re.search(r"at term (\d+)", r["message"] or "")
    return r["kind"] == "etcd_leader_change" and m is not None and int(m.group(1)) <= 2


def _node_fault(con, host: str) -> bool:
    return con.execute("SELECT count(*) FROM aligned_groups WHERE host = ? AND role = 'cause' AND kind IN "
                       "(SELECT unnest(?))", [host, list(NODE_FAULTS)]).fetchone()[0] > 0


def apply(con, doc: dict) -> None:
    """Add doc["control_plane"]; when the verdict blames a node (node_failure / unknown) that went
    NotReady or failed to write its status inside the saturation window, and the node shows no
    fault of its own, re-attribute the verdict to the control plane (kind control_plane)."""
    cp = controlplane(con)
    doc["control_plane"] = cp
    if not cp:
        return
    v = doc["verdict"]
    t = _parse(v.get("time"))
    lo = _parse(cp["from"]) - dt.timedelta(seconds=10)
    hi = _parse(cp["to"]) + dt.timedelta(seconds=GRACE_S)
    host = v.get("host")
    hit = host in cp["affected_nodes"] if host else bool(cp["affected_nodes"])
    if v.get("kind") not in ("node_failure", "unknown") or not hit or (t is not None and not lo <= t <= hi):
        cp["blamed"] = False
        return
    if host and _node_fault(con, host):
        cp["blamed"] = False
        return
    cp["blamed"] = True
    old = dict(v)
    e = cp["etcd"]
    what = []
    if e["slow_fdatasync"]:
        what.append(f"{e['slow_fdatasync']} slow fdatasync" + (f" on {e['slow_disk_member']}" if e["slow_disk_member"] else "")
                    + (f" (up to {e['max_took_s']:g} s)" if e["max_took_s"] else ""))
    if e["slow_requests"]:
        what.append(f"{e['slow_requests']} slow applies/reads")
    if e["leader_changes"]:
        what.append(f"{e['leader_changes']} leader-change lines")
    if e["failed_requests"] or cp["apiserver"]["etcd_errors"]:
        what.append(f"{e['failed_requests'] + cp['apiserver']['etcd_errors']} failed requests (etcdserver: request timed out ...)")
    nodes = ", ".join(cp["notready_nodes"] or cp["affected_nodes"])
    v.update(kind="control_plane", rank=None, local_rank=None, pod=None, pid=None, gpu=None,
             host=e["slow_disk_member"], time=cp["from"], confidence=round(min(max(old.get("confidence") or 0.0, 0.7), 0.85), 2),
             summary=(f"control_plane: etcd was saturated from {cp['from']} to {cp['to']} ({'; '.join(what)}); "
                      f"{cp['status_write_failures']} node/pod status write(s) failed and {nodes} went NotReady "
                      f"at {old.get('time')}: the node is a victim, not the cause")[:400])
    # the node's own candidate is part of this explanation: it ranks at least as high as that one
    doc.setdefault("hypotheses", []).insert(0, {"kind": "control_plane", "rank": None, "host": v["host"],
                                                "score": top_score(doc, v["confidence"]), "why": v["summary"]})
    for h in doc["hypotheses"][1:]:
        if h.get("kind") == old.get("kind") and h.get("host") == host:
            h["why"] = "(the node's own logs show no fault; its NotReady came while etcd was saturated) " + h["why"]
    doc["evidence"] = [dict(x, role="cause") for x in cp["evidence"]] + list(doc.get("evidence") or [])
    doc["next_steps"] = ["etcdctl endpoint status -w table; etcdctl check perf   # leader, DB size, disk latency",
                         "check the etcd members' disks: WAL fsync p99 must stay under 10 ms "
                         "(etcd_disk_wal_fsync_duration_seconds; fio --fdatasync=1)",
                         "kubectl get --raw /metrics | grep apiserver_storage  # apiserver to etcd latency",
                         f"kubectl describe node {host or 'NODE'}   # the node itself: was it healthy? (Ready again?)"]
    doc["missing"] = [m for m in (doc.get("missing") or []) if "node" not in m.lower()]


def controlplane_line(cp: dict | None) -> str:
    if not cp:
        return ""
    e = cp["etcd"]
    return (f"etcd saturated {cp['from']} to {cp['to']}: {e['slow_fdatasync']} slow fdatasync, {e['slow_requests']} slow "
            f"requests, {e['leader_changes']} leader changes, {e['failed_requests']} failed; apiserver "
            f"{cp['apiserver']['etcd_errors']} etcd errors; {cp['status_write_failures']} status writes failed"
            + (f"; NotReady: {', '.join(cp['notready_nodes'])}" if cp["notready_nodes"] else ""))

