"""Network topology: each host's leaf and spine switch, from Slurm's topology.conf / `scontrol show
topology` and from Kubernetes node topology labels (queries/detect/topology.sql).

Says how many leaf switches the job's nodes span, and when the failing nodes (the verdict's and
those of the node-level hypotheses) sit under one leaf switch, names it: two nodes failing at
once under one switch points at the switch, not at the nodes. Pure over the store.
"""

from __future__ import annotations

from collections import defaultdict

from .detectors.base import query
from .hostlist import expand_hostlist
from .util import has_columns, rows

NODE_KINDS = {"node_failure", "gpu_fault", "network_error", "hang", "killed", "unknown"}
# K8s labels, nearest the node first: (leaf labels, spine labels)
K8S_LEAF = ("topology.k8s.aws/network-node-layer-3", "cloud.google.com/gce-topology-subblock",
            "network.topology.kubernetes.io/leaf")
K8S_SPINE = ("topology.k8s.aws/network-node-layer-2", "cloud.google.com/gce-topology-block",
             "network.topology.kubernetes.io/spine")


def _expand(spec: str | None) -> list[str]:
    if not spec:
        return []
    try:
        return expand_hostlist(spec)
    except (ValueError, IndexError):
        return []


def tables(con) -> tuple[dict[str, str], dict[str, str]]:
    """(leaf_of: host -> leaf switch, parent_of: switch -> the switch above it)."""
    leaf_of: dict[str, str] = {}
    parent_of: dict[str, str] = {}
    k8s: dict[str, dict[str, str]] = defaultdict(dict)
    for r in query(con, "topology"):
        if not r["switch"]:
            continue
        if r["source"] == "slurm":
            if r["nodes"] and (r["level"] == 0 or (r["level"] is None and not r["switches"])):
                for h in _expand(r["nodes"]):
                    leaf_of.setdefault(h, r["switch"])
            for s in _expand(r["switches"]):
                parent_of.setdefault(s, r["switch"])
        elif r["host"] and r["label"]:
            k8s[r["host"]].setdefault(r["label"], r["switch"])
    for host, labels in k8s.items():
        leaf = next((labels[k] for k in K8S_LEAF if k in labels), None)
        spine = next((labels[k] for k in K8S_SPINE if k in labels), None)
        if leaf and host not in leaf_of:
            leaf_of[host] = leaf
            if spine:
                parent_of.setdefault(leaf, spine)
    return leaf_of, parent_of


def topology(con, doc: dict) -> dict | None:
    """The "topology" key: per job node its leaf and spine, the leaves spanned, a shared leaf."""
    leaf_of, parent_of = tables(con)
    if not leaf_of:
        return None
    job = sorted(r["host"] for r in rows(con, "SELECT DISTINCT host FROM aligned_groups WHERE host IS NOT NULL "
                                              "AND rank IS NOT NULL"))
    if has_columns(con, "slurm_job_state", "nodelist"):   # the job's allocation, when Slurm reports it
        for r in rows(con, "SELECT DISTINCT nodelist FROM slurm_job_state WHERE nodelist IS NOT NULL "
                           "AND nodelist <> 'None assigned'"):
            job = sorted(set(job) | set(_expand(r["nodelist"])))
    if not job:   # no rank names its host: the job's nodes are the ones the logs name that have a leaf
        job = sorted(r["host"] for r in rows(con, "SELECT DISTINCT host FROM aligned_groups WHERE host IS NOT NULL")
                     if r["host"] in leaf_of)
    nodes = {h: {"leaf": leaf_of.get(h), "spine": parent_of.get(leaf_of.get(h) or "")} for h in job}
    leaves = sorted({n["leaf"] for n in nodes.values() if n["leaf"]})
    v = doc.get("verdict") or {}
    failing = {v["host"]} if v.get("host") and v.get("kind") in NODE_KINDS else set()
    failing |= {h["host"] for h in doc.get("hypotheses") or []
                if h.get("host") and h.get("kind") in NODE_KINDS and (h.get("score") or 0) >= 0.5}
    # hosts whose own lines say the node, its GPU or its network failed (node-level causes)
    failing |= {r["host"] for r in rows(con, "SELECT DISTINCT e.host FROM aligned_groups e LEFT JOIN kinds k USING (kind) "
                                             "WHERE e.role = 'cause' AND e.host IS NOT NULL AND coalesce(k.failure, e.kind) IN "
                                             "('node_failure', 'gpu_fault', 'network_error')")}
    failing = sorted(h for h in failing if h in leaf_of)
    shared = None
    if len(failing) >= 2 and len({leaf_of[h] for h in failing}) == 1:
        shared = leaf_of[failing[0]]
    out = {"nodes": nodes, "leaf_switches": leaves, "spanned": len(leaves), "failing_nodes": failing,
           "shared_leaf": shared, "unmapped": [h for h in job if h not in leaf_of]}
    out["summary"] = (f"the job's {len(job)} node(s) span {len(leaves)} leaf switch(es)"
                      + (f" ({', '.join(leaves)})" if leaves else "")
                      + (f"; the failing nodes {', '.join(failing)} all sit under leaf switch {shared}"
                         + (f" (spine {parent_of[shared]})" if shared in parent_of else "")
                         + ": check that switch" if shared else ""))
    return out
