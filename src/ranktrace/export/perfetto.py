"""Chrome trace-event JSON for Perfetto: the incident on the aligned clock.

- one process per node (process_name, process_sort_index), in natural host
  order; events without a host go to a process "(no host)";
- one thread per rank, named "rank 5 (local 1)" (thread_sort_index = rank);
  node-level lines (agents, daemons, kernel) on a thread "node";
- instant events for log events, args = raw line, file:line, kind, role,
  severity, logged time;
- complete slices for phases: rendezvous (first join -> completion), init
  (completion / worker start -> first progress), training (first -> last
  progress) and one slice per step when progress markers exist;
- the causal chain: a "verdict" slice on the culprit's thread at the verdict
  time, a slice per cascade event, and flow arrows from the verdict to each;
- a process "ranktrace" with the verdict and the clock offsets (also in the
  top-level "metadata");
- bounded size: at most `max_events` log events; past that every non-info
  event is kept, info events are sampled per lane (every k-th, plus each
  lane's last line) and the metadata says so.

Times are microseconds since the epoch on the aligned clock
(aligned = logged - offset_s of the host, design.md section 4).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from datetime import datetime, timedelta
from pathlib import Path

from ..report import data as D

MAX_EVENTS = 200_000
MAX_RAW = 2000
MAX_FLOWS = 256
MAX_STEP_SLICES = 20_000
WRITE_EVENTS = 4096                  # events encoded at a time


def _natural(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(s))]


_EPOCH = datetime(1970, 1, 1)


def _us(dt) -> int:
    # naive UTC datetime -> epoch microseconds (no local time zone involved)
    return (dt - _EPOCH) // timedelta(microseconds=1) if dt is not None else None


def _select_events(con, offsets: dict, max_events: int, src: str = "events") -> tuple[list[dict], dict]:
    cte, params = D._off_cte(offsets)
    total, untimed, info = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE NOT coalesce({D.TIMED}, false)), "
        f"count(*) FILTER (WHERE {D.TIMED} AND role = 'info' AND coalesce(kind, '') <> 'progress') "
        "FROM events e").fetchone()
    timed = total - untimed
    base = f"""
        WITH {cte},
        ev AS (
            SELECT e.event_id, e.file, e.line, e.ts, e.host, e.rank, e.local_rank, e.kind, e.role, e.severity,
                   left(e.raw, {MAX_RAW}) AS raw, {D.ATS} AS ats
            FROM {src} e {D.OFF_JOIN}
            WHERE {D.TIMED}
        )"""
    # (no message: an instant shows its raw line; a second copy of the text held 200k events' worth)
    cols = "event_id, file, line, ts, host, rank, local_rank, kind, role, severity, raw, ats"
    if timed <= max_events:
        rows = D._rows(con, f"{base} SELECT {cols} FROM ev ORDER BY ats, file, line", params)
        return rows, {"sampled": False, "events_in_store": total, "events_in_trace": len(rows),
                      "events_without_time": untimed}
    # keep every event that is not plain info (capped), sample the info lines
    important = timed - info
    keep_imp = min(important, max_events)
    room = max(max_events - keep_imp, 0)
    k = max(1, math.ceil(info / room)) if room else 0
    sql = f"""{base},
        imp AS (SELECT * FROM ev WHERE NOT (role = 'info' AND coalesce(kind, '') <> 'progress')
                ORDER BY (role = 'cause') DESC, (role = 'symptom') DESC, ats, file, line LIMIT {keep_imp}),
        -- the info lines are numbered on their keys alone, then the chosen ones' text is read:
        -- numbered with their text, they were all held in memory (1.1 GB for a 512 MB corpus)
        inf AS (SELECT event_id, row_number() OVER (PARTITION BY host, rank ORDER BY ats, file, line) AS rn,
                          count(*) OVER (PARTITION BY host, rank) AS n
                FROM (SELECT event_id, host, rank, ats, file, line FROM ev
                      WHERE role = 'info' AND coalesce(kind, '') <> 'progress')),
        chosen AS (SELECT event_id FROM inf WHERE {('(rn % ' + str(k) + ' = 0 OR rn = n)') if k else 'false'})
        SELECT {cols} FROM imp
        UNION ALL
        SELECT {cols} FROM ev SEMI JOIN chosen USING (event_id)
        ORDER BY ats, file, line"""
    rows = D._rows(con, sql, params)
    if len(rows) > max_events:
        rows = rows[:max_events]
    return rows, {"sampled": True, "events_in_store": total, "events_in_trace": len(rows),
                  "events_without_time": untimed,
                  "rule": (f"all non-info events (up to {max_events:,}); info lines: every {k}th per rank plus "
                           f"each rank's last line" if k else f"the first {max_events:,} non-info events only"),
                  "max_events": max_events}


def build_trace(con, verdict_doc: dict | None = None, *, max_events: int = MAX_EVENTS) -> dict:
    """The trace as a dict ({"traceEvents": [...], "metadata": {...}})."""
    vdoc = verdict_doc or {}
    v = vdoc.get("verdict") or {}
    offsets = D.offsets_from_verdict(vdoc)
    src = D.events_source(con)
    rows, sampling = _select_events(con, offsets, max_events, src)
    lanes, _ = D.lanes(con, offsets, max_marks=0, src=src)

    hosts = sorted({ln["host"] for ln in lanes if ln["host"] is not None} | {r["host"] for r in rows
                                                                             if r["host"] is not None}, key=_natural)
    pid_of = {h: i + 1 for i, h in enumerate(hosts)}
    NOHOST = len(hosts) + 1
    META_PID = len(hosts) + 2
    NODE_TID = 1_000_000

    def pid(host):
        return pid_of.get(host, NOHOST)

    def tid(rank):
        return NODE_TID if rank is None else int(rank) + 1

    out: list[dict] = []
    threads: dict[tuple, dict] = {}
    for ln in lanes:
        threads[(pid(ln["host"]), tid(ln["rank"]))] = {"rank": ln["rank"], "local_rank": ln["local_rank"]}
    for r in rows:
        threads.setdefault((pid(r["host"]), tid(r["rank"])), {"rank": r["rank"], "local_rank": r["local_rank"]})

    used_pids = sorted({p for p, _ in threads})
    for p in used_pids:
        name = next((h for h, i in pid_of.items() if i == p), "(no host)")
        culprit = " ◀ culprit" if (v.get("host") and name == v.get("host")) else ""
        out.append({"ph": "M", "name": "process_name", "pid": p, "tid": 0, "args": {"name": f"{name}{culprit}"}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": p, "tid": 0, "args": {"sort_index": p}})
    for (p, t), info in sorted(threads.items()):
        if info["rank"] is None:
            name = "node (agents, daemons, kernel)"
        else:
            name = f"rank {info['rank']}" + (f" (local {info['local_rank']})" if info["local_rank"] is not None else "")
        out.append({"ph": "M", "name": "thread_name", "pid": p, "tid": t, "args": {"name": name}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": p, "tid": t,
                    "args": {"sort_index": -1 if info["rank"] is None else int(info["rank"])}})

    # ---- the causal chain: which events become slices with flows
    chain_keys: dict[tuple, str] = {}
    for e in vdoc.get("evidence") or []:
        if e.get("file") is not None and e.get("line") is not None:
            ev = D.event_at(con, e["file"], e["line"])
            if ev:
                chain_keys[(ev["file"], int(ev["line"]))] = "evidence:" + str(e.get("role") or "")
    cascade_events = []
    for c in (vdoc.get("cascade") or [])[:MAX_FLOWS]:
        ev = D.event_at(con, c.get("file"), c.get("line")) if c.get("file") is not None else None
        if ev and ev["ts"] is not None:
            chain_keys[(ev["file"], int(ev["line"]))] = "cascade"
            cascade_events.append(ev)

    # ---- instants (and chain slices)
    for r in rows:
        key = (r["file"], int(r["line"]))
        args = {"raw": r["raw"], "at": f"{r['file']}:{r['line']}", "kind": r["kind"], "role": r["role"],
                "severity": r["severity"], "logged": D.iso(r["ts"])}
        ev = {"name": r["kind"] or "log", "cat": r["role"] or "info", "ts": _us(r["ats"]), "pid": pid(r["host"]),
              "tid": tid(r["rank"]), "args": {k: a for k, a in args.items() if a is not None}}
        if key in chain_keys:
            ev.update(ph="X", dur=1, name=f"{r['kind'] or 'log'} [{chain_keys[key]}]")
        else:
            ev.update(ph="i", s="t")
        out.append(ev)
    seen_keys = {(r["file"], int(r["line"])) for r in rows}
    for ev in cascade_events:  # chain events cut by sampling still go in
        if (ev["file"], int(ev["line"])) not in seen_keys:
            ats = D.align(ev["ts"], ev["host"], offsets)
            if ats is None:   # no time, or a bogus year: nowhere to draw it
                continue
            out.append({"ph": "X", "dur": 1, "name": f"{ev['kind'] or 'log'} [cascade]", "cat": ev["role"],
                        "ts": _us(ats), "pid": pid(ev["host"]), "tid": tid(ev["rank"]),
                        "args": {"raw": str(ev["raw"])[:MAX_RAW], "at": f"{ev['file']}:{ev['line']}"}})

    # ---- phases per lane
    out += _phases(con, offsets, pid, tid, src)

    # ---- verdict slice and flows
    vt = D.parse_time(v.get("time"))
    if vt is None:
        cause = next((D.event_at(con, e["file"], e["line"]) for e in vdoc.get("evidence") or []
                      if e.get("role") == "cause" and e.get("file") is not None), None)
        if cause and cause["ts"] is not None:
            vt = D.align(cause["ts"], cause["host"], offsets)
    vpid, vtid = pid(v.get("host")), tid(v.get("rank"))
    if v and vt is not None and v.get("kind") not in (None, "none"):
        threads.setdefault((vpid, vtid), {"rank": v.get("rank"), "local_rank": v.get("local_rank")})
        if (vpid, vtid) not in {(e["pid"], e["tid"]) for e in out if e.get("ph") == "M" and e["name"] == "thread_name"}:
            out.append({"ph": "M", "name": "thread_name", "pid": vpid, "tid": vtid,
                        "args": {"name": "node" if v.get("rank") is None else f"rank {v.get('rank')}"}})
        vus = _us(vt)
        out.append({"ph": "X", "name": f"VERDICT: {v.get('kind')}", "cat": "verdict", "ts": vus, "dur": 2,
                    "pid": vpid, "tid": vtid,
                    "args": {"summary": v.get("summary"), "confidence": v.get("confidence"),
                             "kind": v.get("kind"), "rank": v.get("rank"), "host": v.get("host")}})
        for i, ev in enumerate(cascade_events, 1):
            ats = _us(D.align(ev["ts"], ev["host"], offsets))
            if ats is None:
                continue
            out.append({"ph": "s", "id": i, "name": "cascade", "cat": "causal", "ts": vus + 1, "pid": vpid,
                        "tid": vtid})
            out.append({"ph": "f", "bp": "e", "id": i, "name": "cascade", "cat": "causal", "ts": ats,
                        "pid": pid(ev["host"]), "tid": tid(ev["rank"])})

    # ---- metadata: a process with the verdict and the clock
    clock = [{"host": c.get("host"), "offset_s": c.get("offset_s"), "uncertainty_s": c.get("uncertainty_s"),
              "basis": c.get("basis")} for c in vdoc.get("clock") or []]
    meta = {"generator": "ranktrace", "clock": "aligned: logged time - offset_s per host",
            "clock_offsets": clock, "verdict": v or None, "sampling": sampling,
            "events_without_time_skipped": sampling["events_without_time"]}
    t_first = min((e["ts"] for e in out if e.get("ph") != "M" and e.get("ts") is not None), default=0)
    out.append({"ph": "M", "name": "process_name", "pid": META_PID, "tid": 0, "args": {"name": "ranktrace"}})
    out.append({"ph": "M", "name": "process_sort_index", "pid": META_PID, "tid": 0, "args": {"sort_index": -1}})
    out.append({"ph": "M", "name": "thread_name", "pid": META_PID, "tid": 1, "args": {"name": "metadata"}})
    out.append({"ph": "i", "s": "p", "name": "clock offsets and sampling", "cat": "metadata", "ts": t_first,
                "pid": META_PID, "tid": 1,
                "args": {"clock_offsets": json.dumps(clock), "sampling": json.dumps(sampling, default=str),
                         "verdict": json.dumps(v, default=str)}})
    meta_events = [e for e in out if e.get("ph") == "M"]
    rest = sorted((e for e in out if e.get("ph") != "M"),
                  key=lambda e: (e["ts"], e["pid"], e["tid"], e.get("ph"), e.get("name")))
    return {"traceEvents": meta_events + rest, "displayTimeUnit": "ms", "metadata": {"ranktrace": meta}}


def _phases(con, offsets, pid, tid, src: str = "events") -> list[dict]:
    cte, params = D._off_cte(offsets)
    rows = D._rows(con, f"""
        WITH {cte},
        ev AS (SELECT e.host, e.rank, CASE WHEN {D.PROGRESS} THEN 'progress' ELSE e.kind END AS kind, e.message,
                      {D.ATS} AS ats
               FROM {src} e {D.OFF_JOIN}
               WHERE {D.TIMED} AND (e.kind IN ('rdzv_join', 'rdzv_complete', 'worker_start', 'comm_init',
                                                     'step_start') OR {D.PROGRESS}))
        SELECT host, rank,
               min(ats) FILTER (WHERE kind = 'rdzv_join') AS join_t,
               min(ats) FILTER (WHERE kind = 'rdzv_complete') AS rdzv_t,
               min(ats) FILTER (WHERE kind = 'worker_start') AS start_t,
               min(ats) FILTER (WHERE kind = 'comm_init') AS comm_t,
               min(ats) FILTER (WHERE kind = 'progress') AS p0,
               max(ats) FILTER (WHERE kind = 'progress') AS p1,
               count(*) FILTER (WHERE kind = 'progress') AS steps
        FROM ev GROUP BY host, rank ORDER BY host, rank""", params)
    out = []

    def sl(name, a, b, r, args=None):
        if a is None or b is None or b < a:
            return
        out.append({"ph": "X", "name": name, "cat": "phase", "ts": _us(a), "dur": max(_us(b) - _us(a), 1),
                    "pid": pid(r["host"]), "tid": tid(r["rank"]), "args": args or {}})

    total_steps = sum(r["steps"] or 0 for r in rows)
    node_ready = {r["host"]: r["rdzv_t"] or r["start_t"] for r in rows if r["rank"] is None}
    for r in rows:
        if r["join_t"] and r["rdzv_t"]:
            sl("rendezvous", r["join_t"], r["rdzv_t"], r)
        # a rank's init runs from its node's rendezvous (the agent's line) to its first step
        init_from = r["rdzv_t"] or r["start_t"] or r["comm_t"] or node_ready.get(r["host"])
        if init_from and r["p0"] and r["p0"] > init_from:
            sl("init", init_from, r["p0"], r)
        if r["p0"] and r["p1"] and r["p1"] > r["p0"]:
            sl("training", r["p0"], r["p1"] + timedelta(milliseconds=1), r, {"progress_markers": r["steps"]})
    if 0 < total_steps <= MAX_STEP_SLICES:
        steps = D._rows(con, f"""
            WITH {cte}
            SELECT e.host, e.rank, e.message, {D.ATS} AS ats,
                   lag({D.ATS}) OVER (PARTITION BY e.host, e.rank ORDER BY {D.ATS}, e.line) AS prev
            FROM {src} e {D.OFF_JOIN}
            WHERE {D.TIMED} AND {D.PROGRESS}
            ORDER BY e.host, e.rank, ats""", params)
        for s in steps:
            if s["prev"] is not None and s["ats"] > s["prev"]:
                m = re.search(r"(?i)\b(?:step|iter(?:ation)?|it)\s*[:=#]?\s*(\d+)", s["message"] or "")
                sl(f"step {m.group(1)}" if m else "step", s["prev"], s["ats"], s, {"marker": s["message"]})
    return out


def write_trace(trace: dict, path: str) -> int:
    """Write JSON (gzip when the name ends in .gz, mtime 0: byte-stable). Returns bytes written.
    The events are encoded and written WRITE_EVENTS at a time: the whole text at once was three copies
    of it in memory (the JSON, its inert form, its bytes) beside the trace itself."""
    if path == "-":
        import sys
        return _write_json(trace, sys.stdout.buffer)
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            if p.name.endswith(".gz"):
                with gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
                    _write_json(trace, gz)
            else:
                _write_json(trace, fh)
        os.replace(tmp, p)
    finally:
        if tmp.exists():
            tmp.unlink()
    return p.stat().st_size


def _write_json(trace: dict, out) -> int:
    """`trace` as json.dumps(trace, separators=(",", ":")) would write it, in pieces (the same
    bytes), C1 controls and bidi overrides as \\uXXXX (inert on a terminal: -o -). Returns bytes written."""
    from ..report import json_inert

    def dump(obj) -> str:
        return json_inert(json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=str))
    n = 0

    def put(text: str) -> None:
        nonlocal n
        data = text.encode()
        out.write(data)
        n += len(data)
    for i, (key, value) in enumerate(trace.items()):
        put(("{" if i == 0 else ",") + dump(key) + ":")
        if key == "traceEvents":   # a list's JSON is its items' joined by ",": WRITE_EVENTS of them at a time
            for j in range(0, len(value), WRITE_EVENTS):
                put(("[" if j == 0 else ",") + dump(value[j:j + WRITE_EVENTS])[1:-1])
            put("]" if value else "[]")
        else:
            put(dump(value))
    put("}" if trace else "{}")
    return n


def export_perfetto(con, path: str, verdict_doc: dict | None = None, *, max_events: int = MAX_EVENTS,
                    redact: bool = False) -> dict:
    trace = build_trace(con, verdict_doc, max_events=max_events)
    if redact:
        # The report's redactor (report/redact.py) over the whole trace: names,
        # args, the embedded verdict and clock offsets get the same placeholders.
        from ..report import known_hosts, known_pods, verdict_hosts
        from ..report.redact import redact_document
        trace, r = redact_document(trace, hosts=known_hosts(con) + verdict_hosts(verdict_doc or {}),
                                   pods=known_pods(con))
        trace["metadata"]["ranktrace"]["redacted"] = r.summary()
    n = write_trace(trace, path)
    meta = trace["metadata"]["ranktrace"]
    return {"path": path, "bytes": n, "events": meta["sampling"]["events_in_trace"],
            "sampled": meta["sampling"]["sampled"],
            "processes": sum(1 for e in trace["traceEvents"] if e.get("name") == "process_name"
                             and e["args"]["name"] != "ranktrace"),
            "threads": sum(1 for e in trace["traceEvents"] if e.get("name") == "thread_name")}
