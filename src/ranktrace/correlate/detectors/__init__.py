"""Detectors: a tuple of pure rules over the aligned view (temp view `aligned_events`).
Each takes a DuckDB connection and returns a list of Finding. SQL lives in queries/detect/."""

from __future__ import annotations

from .absence import named_ranks, silent_ranks, watchdog
from .base import KINDS, Finding
from .causes import first_cause, first_symptom, outside_stops, step_cancels
from .exits import sacct_maxrss, task_exits, worker_exits
from .gpu import xid
from .network import ib_peers, transport_gave_up
from .nodes import half_dead_nodes, node_events
from .rendezvous import rendezvous

RULES = (first_cause, worker_exits, task_exits, sacct_maxrss, named_ranks, watchdog, silent_ranks, half_dead_nodes,
         node_events, rendezvous, xid, ib_peers, transport_gave_up, step_cancels, outside_stops, first_symptom)


def run_all(con) -> list[Finding]:
    out: list[Finding] = []
    for rule in RULES:
        out.extend(rule(con))
    return out


__all__ = ["KINDS", "Finding", "RULES", "run_all"] + [r.__name__ for r in RULES]
