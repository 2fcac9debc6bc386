"""A run of several attempts as a list of incidents (issue 27): one verdict per failed attempt.

Each attempt was diagnosed on its own lines (verdict.diagnose_scope under attempts.scope). Here:
- each attempt's outcome: failed (a failure was seen and named), cancelled (scancel, preemption, or
  a restart without a failure), completed (proof of a normal end), running (the logs end while it
  trains);
- the top-level verdict: the attempt that ended the run when it failed or was cancelled, else the last
  failed one (the run went on), with "N earlier incidents" in its summary;
- the cost of each failure: the GPUs of the job idle from the failure to the next attempt's first
  progress (or to the end of the logs);
- a root cause that recurs on the same node or GPU across attempts (drain it), and a run that keeps
  failing without getting past the step it had reached (stop restarting it).
"""

from __future__ import annotations

import datetime as dt

from ..safe_text import command_safe_node
from .attempts import Attempt
from .util import iso

VERDICT_KEYS = ("kind", "rank", "local_rank", "host", "pod", "pid", "gpu", "time", "confidence", "summary")
HYPOTHESES = 8   # the candidates an attempt lists, most probable first (with their features: why that score)


def outcome(*, failed: bool, ended: bool, cancelled: bool, last: bool) -> str:
    """failed / cancelled / completed / running. An attempt the run went on from without a failure line
    was stopped on purpose (a membership change, a requeue): cancelled."""
    if cancelled:
        return "cancelled"
    if failed:
        return "failed"
    if ended:
        return "completed"
    return "running" if last else "cancelled"


def doc_outcome(doc: dict, last: bool) -> str:
    """The outcome of an attempt from its own verdict."""
    kind = doc["verdict"]["kind"]
    return outcome(failed=bool(doc.get("failure_seen")), ended=kind == "none", cancelled=kind == "cancelled",
                   last=last)


def lead(attempts: list[Attempt], docs: list[dict]) -> int:
    """The index of the attempt whose verdict is the run's: the last one when it failed or was
    cancelled (it ended the run), else the last failed one (the run went on), else the last."""
    outs = [doc_outcome(d, last=i == len(docs) - 1) for i, d in enumerate(docs)]
    if outs[-1] in ("failed", "cancelled"):
        return len(docs) - 1
    return max((i for i, o in enumerate(outs) if o == "failed"), default=len(docs) - 1)


def _cost(doc: dict, a: Attempt, nxt: Attempt | None) -> dict | None:
    """GPU-hours from the failure to the next attempt's first progress (or its end, or the logs' end)."""
    imp = doc.get("impact")
    if not imp:
        return None
    if nxt is None:
        return imp
    t0 = dt.datetime.fromisoformat(imp["from"].replace("Z", "")) if imp.get("from") else None
    t1 = nxt.first_progress or nxt.end
    if t0 is None or t1 is None:
        return imp
    t1 = max(t0, t1)
    secs = (t1 - t0).total_seconds()
    gpu_hours = round(imp["gpus"] * secs / 3600.0, 4) if imp.get("gpus") else None
    return dict(imp, to=iso(t1), seconds=round(secs, 3), gpu_hours=gpu_hours,
                to_basis="the next attempt's first progress" if nxt.first_progress else "the next attempt's end")


def _entry(a: Attempt, doc: dict, out: str, cost: dict | None) -> dict:
    e = {"id": a.id, "start": iso(a.start), "end": iso(a.end), "outcome": out,
         "boundary": {"basis": a.basis, "file": a.file, "line": a.line},
         "progress": {"first": iso(a.first_progress), "last": iso(a.last_progress), "max_step": a.max_step}}
    if out in ("failed", "cancelled"):
        e["verdict"] = {k: doc["verdict"].get(k) for k in VERDICT_KEYS}
        e["hypotheses"] = doc.get("hypotheses", [])[:HYPOTHESES]
        e["cost"] = cost
    return e


def recurrence(entries: list[dict]) -> list[dict]:
    """Nodes (and GPUs) named by the verdicts of two failed attempts or more."""
    by: dict[tuple, list[dict]] = {}
    for e in entries:
        v = e.get("verdict")
        if e["outcome"] != "failed" or not v or not v.get("host"):
            continue
        by.setdefault(("host", v["host"]), []).append(e)
        if v.get("gpu") is not None:
            by.setdefault(("gpu", v["host"], v["gpu"]), []).append(e)
    out = []
    for key, es in sorted(by.items(), key=lambda kv: kv[0]):
        if len(es) < 2:
            continue
        host = key[1]
        kinds = sorted({e["verdict"]["kind"] for e in es})
        r = {"host": host, "gpu": key[2] if key[0] == "gpu" else None, "attempts": [e["id"] for e in es],
             "kinds": kinds}
        node = command_safe_node(host)
        if node and key[0] == "host":
            reason = f"ranktrace: {'/'.join(kinds)} in {len(es)} attempts"
            r["actions"] = [f"scontrol update NodeName={node} State=DRAIN Reason=\"{reason}\"",
                            f"kubectl cordon {node}"]
        out.append(r)
    return out


def stop_advice(attempts: list[Attempt], entries: list[dict]) -> dict | None:
    """STOP when the run's last two attempts or more failed without getting past the step the attempt
    before them had reached (or without any progress): restarting again loses the same GPU-hours."""
    tail = []
    for a, e in zip(reversed(attempts), reversed(entries)):
        if e["outcome"] != "failed":
            break
        tail.append(a)
    if len(tail) < 2 or entries[-1]["outcome"] != "failed":
        return None
    tail.reverse()
    best = None
    stuck = 0
    for a in tail:
        step = a.max_step
        if best is not None and (step is None or step <= best):
            stuck += 1
        best = step if best is None or (step is not None and step > best) else best
    if stuck < 1:
        return None
    return {"action": "stop", "attempts": [a.id for a in tail],
            "why": f"the last {len(tail)} attempts failed and made no progress past step "
                   f"{best if best is not None else '(none logged)'}: restarting again repeats the failure"}


def assemble(con, attempts: list[Attempt], docs: list[dict]) -> dict:
    """The verdict JSON of the run: the top-level verdict (design.md section 4) plus `attempts`."""
    n = len(attempts)
    entries = []
    for i, (a, d) in enumerate(zip(attempts, docs)):
        nxt = attempts[i + 1] if i + 1 < n else None
        out = doc_outcome(d, last=nxt is None)
        entries.append(_entry(a, d, out, _cost(d, a, nxt) if out == "failed" else None))
    top = lead(attempts, docs)
    doc = dict(docs[top])
    doc.pop("failure_seen", None)
    doc["clock"] = docs[0]["clock"]
    doc["attempts"] = entries
    if n > 1:
        doc["verdict"] = dict(doc["verdict"])
        doc["verdict"]["attempt"] = attempts[top].id
        earlier = [e for e in entries[:top] if e["outcome"] == "failed"]
        if earlier:
            doc["verdict"]["summary"] = (doc["verdict"]["summary"] + f" ({len(earlier)} earlier incident"
                                         f"{'s' if len(earlier) > 1 else ''}: attempt"
                                         f"{'s' if len(earlier) > 1 else ''} "
                                         f"{', '.join(str(e['id']) for e in earlier)})")
        if doc.get("impact") and entries[top].get("cost"):
            doc["impact"] = entries[top]["cost"]
    rec = recurrence(entries)
    doc["recurrence"] = rec
    doc["stop"] = stop_advice(attempts, entries)
    from .util import platforms
    from .verdict import for_platforms
    plats = platforms(con)
    for r in rec:
        r["actions"] = for_platforms(r.get("actions", []), plats)
        for act in reversed(r["actions"]):
            doc["next_steps"] = [act + f"   # it failed in attempts {r['attempts']}"] + list(doc.get("next_steps", []))
    return doc
