"""The report document: store + verdict -> sections (pure data, no rendering).

`build_report(con, verdict)` returns the verdict document of design.md
section 4 (verbatim) plus a `report` key holding every section the
renderers need. The renderers (markdown, html, json) only read this
document, and --redact rewrites it before rendering, so every format says
the same thing with the same placeholders.

Deterministic: nothing here reads the clock or the environment; paths are
shown relative to the directory all input files share.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from ..store import EVENT_TABLES
from . import data as D

REPORT_VERSION = 1
MAX_TIMELINE = 60
MAX_EXCERPTS = 12
MAX_STATUS = 64
MAX_LANES = 128
MAX_MARKS = 600
CONTEXT = 3

KIND_PHRASE = {
    "none": "finished without a failure",
    "exception": "raised an error",
    "crash": "crashed",
    "killed": "was killed",
    "oom": "was killed for memory (OOM)",
    "gpu_oom": "ran out of GPU memory",
    "gpu_fault": "hit a GPU fault",
    "cuda_error": "hit a CUDA error",
    "hang": "stopped making progress",
    "node_failure": "failed (the whole node)",
    "rendezvous_timeout": "never assembled (rendezvous timeout)",
    "network_error": "hit a network error",
    "desync": "issued a mismatched collective",
    "time_limit": "reached its time limit",
    "cancelled": "was cancelled",
    "scheduling": "could not be scheduled",
    "unknown": "failed (root cause not established)",
    "control_plane": "was saturated (the etcd / kube-apiserver control plane): nodes were marked NotReady without a fault of their own",
}

# cascade kinds: (phrase for a count of ranks, is it the teardown by agents/scheduler)
CASCADE_PHRASE = {
    "peer_closed": ("lost their peer", False),
    "collective_timeout": ("timed out waiting in a collective", False),
    "watchdog_abort": ("were taken down by the watchdog", False),
    "nccl_error_chain": ("reported NCCL errors", False),
    "store_error": ("lost the c10d store", False),
    "comm_abort": ("aborted their communicator", False),
    "network_error": ("saw transport errors", False),
    "python_exception": ("raised errors", False),
    "process_exit": ("exited non-zero", False),
    "sigterm_sent": ("tore the job down", True),
    "signal_received": ("received a signal and shut down", True),
    "worker_failed": ("reported failed workers", True),
    "failure_summary": ("printed their failure summary", True),
    "task_exit": ("reported tasks exiting", True),
    "step_cancelled": ("cancelled the step", True),
    "step_end": ("ended the step", True),
    "killed_signal": ("were killed", False),
}


def _load_steps() -> dict:
    with open(Path(__file__).with_name("next_steps.toml"), "rb") as fh:
        return tomllib.load(fh)


def confidence_label(c) -> str:
    if c is None:
        return "unknown"
    c = float(c)
    return "high" if c >= 0.8 else "medium" if c >= 0.5 else "low"


def subject(v: dict) -> str:
    rank, host, pod = v.get("rank"), v.get("host"), v.get("pod")
    if rank is not None:
        s = f"rank {rank}"
        if v.get("local_rank") is not None:
            s += f" (local {v['local_rank']})"
        if host:
            s += f" on {host}"
        elif pod:
            s += f" in pod {pod}"
        return s
    if pod:
        return f"pod {pod}" + (f" on {host}" if host else "")
    if host:
        return f"node {host}"
    return "the job"


def is_culprit(host, rank, v: dict) -> bool:
    """Is the lane / row (host, rank) the verdict's culprit? A lane without a
    host matches on the rank alone; a node-level verdict marks the whole node."""
    if v.get("kind") in (None, "none"):
        return False
    if v.get("rank") is not None:
        return rank == v.get("rank") and (host is None or not v.get("host") or host == v.get("host"))
    return bool(v.get("host")) and host == v.get("host")


def _short(path: str | None, root: str) -> str | None:
    if path is None:
        return None
    p = str(path)
    return p[len(root):] if root and p.startswith(root) else p


def _first_line(text: str | None, n: int = 200) -> str:
    if not text:
        return ""
    s = str(text).split("\n", 1)[0].rstrip()
    return s if len(s) <= n else s[: n - 1] + "…"


# ---------------------------------------------------------------- sections

def _attempts(doc: dict) -> dict:
    """The run's attempts as incidents (issue 27): one row per attempt (a failed one with its culprit,
    kind, confidence and cost), nodes that failed again and again, the advice to stop restarting.
    Empty rows for a run of one attempt."""
    att = doc.get("attempts") or []
    rows = []
    if len(att) > 1:
        for a in att:
            v = a.get("verdict") or {}
            cost = (a.get("cost") or {}).get("gpu_hours")
            rows.append({"id": a["id"], "start": a.get("start"), "end": a.get("end"), "outcome": a["outcome"],
                         "kind": v.get("kind"), "who": subject(v) if v else None,
                         "confidence": v.get("confidence"), "gpu_hours": cost,
                         "max_step": (a.get("progress") or {}).get("max_step"),
                         "basis": (a.get("boundary") or {}).get("basis")})
    lead = (doc.get("verdict") or {}).get("attempt")
    return {"rows": rows, "lead": lead, "recurrence": doc.get("recurrence") or [], "stop": doc.get("stop")}


def _culprit(con, v: dict) -> dict:
    c = {k: v.get(k) for k in ("rank", "local_rank", "host", "pod", "pid", "gpu")}
    filled = []
    if c["rank"] is not None:
        where = "rank = ?" + (" AND host = ?" if c["host"] else "")
        params = [c["rank"]] + ([c["host"]] if c["host"] else [])
        for col in ("local_rank", "pid", "host"):
            if c[col] is None:
                vals = [r[0] for r in con.execute(
                    f"SELECT DISTINCT {col} FROM events WHERE {where} AND {col} IS NOT NULL LIMIT 2", params
                ).fetchall()]
                if len(vals) == 1:
                    c[col] = vals[0]
                    filled.append(col)
    c["from_store"] = filled
    return c


def _chain(v: dict, cascade: list[dict], kinds: dict[str, str]) -> list[dict]:
    root_t = D.parse_time(v.get("time"))
    kind = v.get("kind") or "unknown"
    chain = [{
        "time": D.iso(root_t),
        "kind": kind,
        "count": 1,
        "text": f"{subject(v)} {KIND_PHRASE.get(kind, kind)}" + (f" at {D.hms(root_t)}" if root_t else ""),
    }]
    groups: dict[str, list[dict]] = {}
    for c in cascade:
        groups.setdefault(c.get("kind") or "other", []).append(c)

    def first_t(items):
        ts = [t for t in (D.parse_time(i.get("time")) for i in items) if t is not None]
        return (not ts, min(ts) if ts else None)

    for k, items in sorted(groups.items(), key=lambda kv: first_t(kv[1])):
        times = sorted(t for t in (D.parse_time(i.get("time")) for i in items) if t is not None)
        ranks = {i.get("rank") for i in items if i.get("rank") is not None}
        hosts = {i.get("host") for i in items if i.get("host") is not None}
        phrase, teardown = CASCADE_PHRASE.get(k, (None, False))
        if phrase is None:
            desc = kinds.get(k)
            phrase = f"logged {k}" + (f" ({desc})" if desc else "")
        if teardown:
            who = f"agents on {len(hosts)} node{'s' if len(hosts) != 1 else ''}" if hosts else "the launcher"
            text = f"{who} {phrase}" + (f" at {D.hms(times[0])}" if times else "")
        else:
            if ranks:
                who = f"{len(ranks)} rank{'s' if len(ranks) != 1 else ''}"
            elif hosts:
                who = f"{len(hosts)} node{'s' if len(hosts) != 1 else ''}"
            else:
                who = f"{len(items)} event{'s' if len(items) != 1 else ''}"
            if hosts and ranks:
                who += f" on {len(hosts)} node{'s' if len(hosts) != 1 else ''}"
            text = f"{who} {phrase}"
            if times and root_t:
                dt = (times[-1] - root_t).total_seconds()
                text += f" within {dt:.1f} s" if dt >= 0 else f" from {D.hms(times[0])} to {D.hms(times[-1])}"
            elif times:
                text += f" from {D.hms(times[0])} to {D.hms(times[-1])}"
        if len(items) != len(ranks or hosts or items):
            text += f" ({len(items)} events)"
        chain.append({"time": D.iso(times[0]) if times else None, "kind": k, "count": len(items),
                      "ranks": len(ranks), "hosts": len(hosts), "text": text})
    return chain


def _timeline(con, doc: dict, offsets: dict, root: str, src: str = "events") -> list[dict]:
    rows: dict[tuple, dict] = {}

    def add(ev: dict | None, mark: str, fallback: dict | None = None):
        if ev is None and fallback is None:
            return
        if ev is not None:
            key = (ev["file"], int(ev["line"]))
            ats = D.align(ev["ts"], ev.get("host"), offsets)
            row = {"time": D.iso(ats), "logged": D.iso(ev["ts"]), "host": ev.get("host"), "rank": ev.get("rank"),
                   "kind": ev.get("kind"), "role": ev.get("role"),
                   "text": _first_line(ev.get("message") or ev.get("raw")),
                   "file": _short(ev["file"], root), "line": int(ev["line"]), "mark": mark}
        else:
            key = (fallback.get("file"), fallback.get("line"), fallback.get("time"), fallback.get("rank"))
            row = {"time": D.iso(D.parse_time(fallback.get("time"))), "logged": None,
                   "host": fallback.get("host"), "rank": fallback.get("rank"), "kind": fallback.get("kind"),
                   "role": fallback.get("role"), "text": _first_line(fallback.get("text") or ""),
                   "file": _short(fallback.get("file"), root), "line": fallback.get("line"), "mark": mark}
        have = rows.get(key)
        if have is None:
            rows[key] = row
        elif _MARK_RANK[mark] < _MARK_RANK[have["mark"]]:
            have["mark"] = mark

    v = doc.get("verdict") or {}
    for e in doc.get("evidence") or []:
        ev = D.event_at(con, e.get("file"), e.get("line"), src)
        add(ev, "culprit" if e.get("role") == "cause" else "evidence", None if ev else e)
    for c in (doc.get("cascade") or [])[:40]:
        ev = D.event_at(con, c.get("file"), c.get("line"), src)
        add(ev, "cascade", None if ev else c)
    for ev in D.first_events(con, offsets, limit=200, src=src):
        add(ev, "")
    out = list(rows.values())
    if len(out) > MAX_TIMELINE:
        keep = [r for r in out if r["mark"]]
        rest = [r for r in out if not r["mark"]]
        out = keep[:MAX_TIMELINE] + rest[: max(0, MAX_TIMELINE - len(keep))]
    out.sort(key=lambda r: (r["time"] is None, r["time"] or "", r["file"] or "", r["line"] or 0))
    vt = D.parse_time(v.get("time"))
    for r in out:
        t = D.parse_time(r["time"])
        r["dt_s"] = round((t - vt).total_seconds(), 3) if (t and vt) else None
    return out


_MARK_RANK = {"culprit": 0, "evidence": 1, "cascade": 2, "": 3}


def _excerpts(con, doc: dict, root: str) -> list[dict]:
    out = []
    seen = set()
    for e in (doc.get("evidence") or [])[:MAX_EXCERPTS * 2]:
        key = (e.get("file"), e.get("line"))
        if key in seen:
            continue
        seen.add(key)
        lines = D.context(con, e.get("file"), e.get("line"), CONTEXT, CONTEXT) if e.get("line") else []
        ev = D.event_at(con, e.get("file"), e.get("line")) if lines else None
        if not lines:
            text = str(e.get("text") or "")
            lines = [{"line": e.get("line"), "text": t, "hit": True} for t in text.split("\n")]
        out.append({"file": _short(ev["file"] if ev else e.get("file"), root), "line": e.get("line"),
                    "role": e.get("role"), "time": e.get("time"), "found": ev is not None, "lines": lines})
        if len(out) >= MAX_EXCERPTS:
            break
    return out


def _status(con, v: dict, offsets: dict, root: str, src: str = "events") -> dict:
    rows = D.status(con, offsets, src)
    exits = D.agent_exits(con, src)
    for r in rows:
        if r["exit"] is None and r["rank"] is not None:
            r["exit"] = exits.get((r["host"], r["local_rank"]))
    vt = D.parse_time(v.get("time"))
    out = []
    for r in rows:
        culprit = is_culprit(r["host"], r["rank"], v)
        out.append({
            "host": r["host"], "rank": r["rank"], "local_rank": r["local_rank"], "events": r["events"],
            "first": D.iso(r["first_ts"]), "last": D.iso(r["last_ts"]),
            "last_vs_verdict_s": round((r["last_ts"] - vt).total_seconds(), 3) if (vt and r["last_ts"]) else None,
            "last_progress": _first_line(r["last_progress"], 80) or None,
            "last_progress_time": D.iso(r["last_progress_ts"]),
            "last_line": _first_line(r["last_line"], 160),
            "last_at": f"{_short(r['last_file'], root)}:{r['last_line_no']}" if r["last_file"] else None,
            "exit": _first_line(r["exit"], 120) or None,
            "first_cause": r["first_cause"], "causes": r["causes"], "symptoms": r["symptoms"],
            "culprit": bool(culprit),
        })
    if (v.get("host") or v.get("rank") is not None) and v.get("kind") not in (None, "none") \
            and not any(r["culprit"] for r in out):
        out.insert(0, {"host": v.get("host"), "rank": v.get("rank"), "local_rank": v.get("local_rank"), "events": 0,
                       "first": None, "last": None, "last_vs_verdict_s": None, "last_progress": None,
                       "last_progress_time": None, "last_line": "(no line of its own in the logs)", "last_at": None,
                       "exit": None, "first_cause": None, "causes": 0, "symptoms": 0, "culprit": True})
    total = len(out)
    if total > MAX_STATUS:
        pinned = [r for r in out if r["culprit"] or (v.get("host") and r["host"] == v.get("host"))]
        others = sorted((r for r in out if r not in pinned), key=lambda r: (r["last"] is None, r["last"] or ""))
        chosen = pinned[:MAX_STATUS] + others[: max(0, MAX_STATUS - len(pinned))]
        ids = {id(r) for r in chosen}
        out = [r for r in out if id(r) in ids]
    return {"rows": out, "total": total, "shown": len(out)}


def _clock(doc: dict, hosts: list[str]) -> list[dict]:
    out = []
    seen = set()
    for c in doc.get("clock") or []:
        h = c.get("host")
        seen.add(h)
        out.append({"host": h, "offset_s": c.get("offset_s"), "uncertainty_s": c.get("uncertainty_s"),
                    "basis": c.get("basis"), "applied": True})
    for h in hosts:
        if h not in seen:
            out.append({"host": h, "offset_s": 0.0, "uncertainty_s": None,
                        "basis": "no estimate: logged times used as they are", "applied": False})
    return out


_XID = re.compile(r"(?i)\bXid\b[^:\n]*?:\s*(\d{1,3})\b|\bXid\s+(\d{1,3})\b")


def _next_steps(doc: dict, job: str | None, steps_db: dict) -> dict:
    v = doc.get("verdict") or {}
    kind = v.get("kind") or "unknown"
    spec = steps_db["kind"].get(kind) or steps_db["kind"]["unknown"]
    vals = {"host": v.get("host"), "rank": v.get("rank"), "local_rank": v.get("local_rank"), "pid": v.get("pid"),
            "pod": v.get("pod"), "job": job, "gpu": v.get("gpu")}

    def fill(s: str) -> str:
        return re.sub(r"\{(\w+)\}", lambda m: str(vals[m.group(1)]) if vals.get(m.group(1)) is not None
                      else f"<{m.group(1)}>", s)

    steps = [fill(s) for s in spec.get("steps", [])]
    extra = doc.get("next_steps")
    from_verdict = []
    if isinstance(extra, list):
        for s in extra:
            t = s if isinstance(s, str) else (s.get("text") or s.get("step") or s.get("command") or str(s))
            if t and t not in steps:
                from_verdict.append(str(t))
    elif isinstance(extra, str) and extra:
        from_verdict.append(extra)
    xids = []
    seen = set()
    texts = [e.get("text") or "" for e in doc.get("evidence") or []] + [v.get("summary") or ""]
    for t in texts:
        for m in _XID.finditer(str(t)):
            code = m.group(1) or m.group(2)
            if code in seen:
                continue
            seen.add(code)
            x = steps_db.get("xid", {}).get(code)
            xids.append({"xid": int(code), "meaning": x["meaning"] if x else "not in ranktrace's Xid table",
                         "action": x["action"] if x else "see NVIDIA's Xid catalogue"})
    drain = spec.get("drain", "no")
    host = v.get("host")
    if drain == "yes" and host:
        drain_text = (f"Drain {host}: yes. `scontrol update NodeName={host} State=DRAIN "
                      f"Reason=\"ranktrace: {kind}\"` (Kubernetes: `kubectl cordon {host}`)")
    elif drain == "maybe" and host:
        drain_text = f"Drain {host}: not yet; only if the checks below point at the node."
    elif host:
        drain_text = f"Do not drain {host}: {spec.get('why', 'the node is not at fault')}."
    else:
        drain_text = f"No node to drain: {spec.get('why', '')}."
    return {"kind": kind, "why": spec.get("why"), "drain": drain, "drain_text": drain_text, "steps": steps,
            "from_diagnose": from_verdict, "xid": xids}


def _svg_data(con, doc: dict, offsets: dict, src: str = "events") -> dict:
    lanes, marks = D.lanes(con, offsets, max_marks=MAX_MARKS, src=src)
    v = doc.get("verdict") or {}
    casc = {(c.get("host"), c.get("rank"), c.get("kind")) for c in doc.get("cascade") or []}
    casc_lines = {(c.get("file"), c.get("line")) for c in doc.get("cascade") or []}
    ev_lines = {(e.get("file"), e.get("line")) for e in doc.get("evidence") or []}
    total = len(lanes)
    if total > MAX_LANES:
        pin = [ln for ln in lanes if ln["host"] == v.get("host")]
        rest = [ln for ln in lanes if ln["host"] != v.get("host")]
        keep = {id(x) for x in (pin + rest)[:MAX_LANES]}
        lanes = [ln for ln in lanes if id(ln) in keep]
    lane_keys = {(ln["host"], ln["rank"]) for ln in lanes}
    out_marks = []
    for m in marks:
        if (m["host"], m["rank"]) not in lane_keys or m["ats"] is None:
            continue
        tag = ("culprit" if (m["file"], m["line"]) in ev_lines and is_culprit(m["host"], m["rank"], v) else
               "evidence" if (m["file"], m["line"]) in ev_lines else
               "cascade" if (m["file"], m["line"]) in casc_lines or (m["host"], m["rank"], m["kind"]) in casc else
               m["role"])
        out_marks.append({"host": m["host"], "rank": m["rank"], "time": D.iso(m["ats"]), "kind": m["kind"],
                          "tag": tag, "text": _first_line(m["message"], 120)})
    out_lanes = [{"host": ln["host"], "rank": ln["rank"], "local_rank": ln["local_rank"],
                  "first": D.iso(ln["first_ts"]), "last": D.iso(ln["last_ts"]), "events": ln["events"],
                  "culprit": is_culprit(ln["host"], ln["rank"], v)} for ln in lanes]
    if (v.get("host") or v.get("rank") is not None) and not any(ln["culprit"] for ln in out_lanes) \
            and v.get("kind") not in (None, "none"):
        # the culprit left no line of its own: show it anyway (absence is evidence)
        ghost = {"host": v.get("host"), "rank": v.get("rank"), "local_rank": v.get("local_rank"), "first": None,
                 "last": None, "events": 0, "culprit": True}
        at = next((i for i, ln in enumerate(out_lanes) if ln["host"] == v.get("host")), None)
        if at is None:
            at = next((i for i, ln in enumerate(out_lanes)
                       if ln["host"] is None or (v.get("host") and str(ln["host"]) > str(v.get("host")))),
                      len(out_lanes))
        out_lanes.insert(at, ghost)
    return {
        "lanes": out_lanes,
        "lanes_total": total,
        "marks": out_marks,
        "verdict_time": v.get("time"),
    }


# ---------------------------------------------------------------- the document

def build_report(con, verdict_doc: dict) -> dict:
    """The report document: the verdict document plus `report` sections."""
    doc = {k: verdict_doc[k] for k in verdict_doc}
    for k in ("hypotheses", "evidence", "cascade", "clock"):
        doc.setdefault(k, [])
    v = doc.get("verdict") or {}
    offsets = D.offsets_from_verdict(doc)
    job = D.job_info(con)
    root = D.common_root(job["paths"])
    job_id = job["job_ids"][0] if job["job_ids"] else None
    kinds = dict(con.execute("SELECT kind, description FROM kinds").fetchall()) if "kinds" in D.tables(con) else {}
    steps_db = _load_steps()
    src = D.events_source(con)
    kind = v.get("kind") or "unknown"
    vt = D.parse_time(v.get("time"))
    title = (f"Job {job_id}: " if job_id else "Incident: ") + f"{kind}, {subject(v)}"
    report = {
        "version": REPORT_VERSION,
        "title": title,
        "job": {
            "job_id": job_id, "other_job_ids": job["job_ids"][1:], "files": job["files"],
            "events": job["events"], "unparsed": job["unparsed"], "hosts": job["n_hosts"], "ranks": job["n_ranks"],
            "first": D.iso(job["first_ts"]), "last": D.iso(job["last_ts"]), "formats": job["formats"],
            "paths": [_short(p, root) for p in job["paths"]][:200],
        },
        "summary": {
            "text": v.get("summary") or f"{subject(v)} {KIND_PHRASE.get(kind, kind)}",
            "kind": kind, "kind_means": KIND_PHRASE.get(kind, kind), "where": subject(v),
            "time": D.iso(vt), "confidence": v.get("confidence"),
            "confidence_label": confidence_label(v.get("confidence")),
        },
        "attempts": _attempts(doc),
        "culprit": _culprit(con, v),
        "chain": _chain(v, doc.get("cascade") or [], kinds),
        "timeline": _timeline(con, doc, offsets, root, src),
        "excerpts": _excerpts(con, doc, root),
        "status": _status(con, v, offsets, root, src),
        "clock": _clock(doc, job["hosts"]),
        "hypotheses": [{"kind": h.get("kind"), "rank": h.get("rank"), "host": h.get("host"),
                        "score": h.get("score"), "why": h.get("why")} for h in doc.get("hypotheses") or []],
        "next_steps": _next_steps(doc, job_id, steps_db),
        "svg": _svg_data(con, doc, offsets, src),
        "missing": [str(m) for m in (doc.get("missing") or [])] if isinstance(doc.get("missing"), list)
        else ([str(doc["missing"])] if doc.get("missing") else []),
    }
    doc["report"] = report
    return doc


def known_hosts(con) -> list[str]:
    """Every host name the store knows (for --redact)."""
    hs = {r[0] for r in con.execute("SELECT DISTINCT host FROM events WHERE host IS NOT NULL").fetchall()}
    hs |= {r[0] for r in con.execute("SELECT DISTINCT host FROM files WHERE host IS NOT NULL").fetchall()}
    # fact tables that name one node per row (kubectl describe's Node:, torchrun's host, Slurm's node)
    not_facts = ("events", *EVENT_TABLES, "files", "lanes", "lane_buckets", "clock_offsets")
    for t, c in con.execute("SELECT table_name, column_name FROM information_schema.columns "
                            "WHERE table_schema = 'main' AND data_type = 'VARCHAR' "
                            "AND column_name IN ('node', 'host', 'failed_node') "
                            "ORDER BY 1, 2").fetchall():
        if t in not_facts:
            continue
        hs |= {str(r[0]).split("/")[0] for r in con.execute(
            f'SELECT DISTINCT "{c}" FROM "{t}" WHERE "{c}" IS NOT NULL').fetchall()}
    return sorted(h for h in hs if h)


def known_pods(con) -> list[str]:
    """Every Kubernetes pod name the store knows (for --redact)."""
    hs = {r[0] for r in con.execute("SELECT DISTINCT pod FROM events WHERE pod IS NOT NULL").fetchall()}
    hs |= {r[0] for r in con.execute("SELECT DISTINCT pod FROM files WHERE pod IS NOT NULL").fetchall()}
    return sorted(h for h in hs if h)


def verdict_hosts(doc: dict) -> list[str]:
    hs = set()
    v = doc.get("verdict") or {}
    if v.get("host"):
        hs.add(v["host"])
    for sec in ("hypotheses", "cascade", "clock"):
        for it in doc.get(sec) or []:
            if isinstance(it, dict) and it.get("host"):
                hs.add(it["host"])
    return sorted(hs)
