"""The report as Markdown: GitHub-flavoured tables and fenced code blocks,
nothing else (renders on GitHub, GitLab, and Jira's Markdown paste)."""

from __future__ import annotations

import re

from . import data as D

# Markdown renderers pass raw HTML through: text from the logs (a line, a
# directory name) must not become a <script> or an <img onerror>. Outside code
# spans and fences, < becomes &lt; (no tag can open); inside them nothing is HTML.
_HTML = str.maketrans({"<": "&lt;"})
_SPAN = re.compile(r"(`+)(.+?)\1", re.S)


def _html(s: str) -> str:
    return s.translate(_HTML)


def _md_text(v) -> str:
    """Free text that may hold `code` spans (next steps): HTML escaped outside them."""
    s = "" if v is None else str(v)
    out, pos = [], 0
    for m in _SPAN.finditer(s):
        out.append(_html(s[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_html(s[pos:]))
    return "".join(out)


def _cell(v, n: int = 120) -> str:
    if v is None or v == "":
        return "—"
    s = str(v).replace("\r", " ").replace("\n", " ")
    if len(s) > n:
        s = s[: n - 1] + "…"
    return _html(s.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'"))


def _code(s, table: bool = True) -> str:
    if s is None or s == "":
        return "—"
    s = str(s).replace("\n", " ")
    if table:
        s = s.replace("|", "\\|")
    tick = "``" if "`" in s else "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{tick}{pad}{s}{pad}{tick}"


def _table(head: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        out.append("| " + " | ".join(r) + " |")
    return out


def _n(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _t(iso: str | None, date: bool = False) -> str:
    return D.hms(D.parse_time(iso), date=date)


def _fence(lines: list[str]) -> list[str]:
    body = "\n".join(lines)
    fence = "```"
    while fence in body:
        fence += "`"
    return [fence + "text", body, fence]


def render_markdown(doc: dict) -> str:
    r = doc["report"]
    v = doc.get("verdict") or {}
    s = r["summary"]
    out: list[str] = []
    out.append(f"# {_md_text(r['title'])}")
    out.append("")
    out.append(f"> {_md_text(s['text'])}")
    out.append("")

    # ---- summary
    out.append("## Summary")
    out.append("")
    out.append(f"- **What:** `{s['kind']}`: {_md_text(s['where'])} {_md_text(s['kind_means'])}")
    out.append(f"- **When:** {_t(s['time'], date=True)} UTC (aligned clock)" if s["time"] else
               "- **When:** not established")
    conf = s["confidence"]
    out.append(f"- **Confidence:** {conf:.2f} ({s['confidence_label']})" if isinstance(conf, (int, float))
               else "- **Confidence:** not given")
    from ..correlate.impact import impact_line   # issue 14: what the incident cost
    if impact_line(doc.get("impact")):
        out.append(f"- **Cost:** {_cell(impact_line(doc.get('impact')), 400)}")
    if (doc.get("topology") or {}).get("summary"):
        out.append(f"- **Network:** {_cell(doc['topology']['summary'], 400)}")
    j = r["job"]
    out.append(f"- **Job:** {_md_text(j['job_id'] or 'no job id in the logs')}"
               + (f" (also seen: {_md_text(', '.join(j['other_job_ids']))})" if j["other_job_ids"] else ""))
    out.append(f"- **Logs:** {j['files']} files, {j['events']:,} events, {_n(j['hosts'], 'host')}, {_n(j['ranks'], 'rank')}, "
               f"{_t(j['first'], True)} to {_t(j['last'], True)} UTC")
    out.append("")

    # ---- attempts (a run that restarted: one incident per failed attempt)
    att = r.get("attempts") or {}
    if att.get("rows"):
        out.append("## Attempts")
        out.append("")
        out.append(f"The run restarted: {_n(len(att['rows']), 'attempt')}; the verdict above is attempt "
                   f"{att['lead']}'s.")
        out.append("")
        out += _table(["#", "start (UTC)", "outcome", "root cause", "confidence", "cost (GPU-h)", "step reached"],
                      [[str(a["id"]), _t(a["start"], True), a["outcome"],
                        f"`{a['kind']}`: {_cell(a['who'])}" if a["kind"] else "",
                        f"{a['confidence']:.2f}" if isinstance(a["confidence"], (int, float)) else "",
                        f"{a['gpu_hours']:g}" if a["gpu_hours"] else "",
                        str(a["max_step"]) if a["max_step"] is not None else ""] for a in att["rows"]])
        out.append("")
        for rec in att["recurrence"]:
            where = f"GPU {rec['gpu']} of node {rec['host']}" if rec.get("gpu") is not None else f"node {rec['host']}"
            out.append(f"- **Recurs:** {_md_text(where)} failed in attempts {', '.join(map(str, rec['attempts']))} "
                       f"({_md_text(', '.join(rec['kinds']))}): drain it.")
        if att.get("stop"):
            out.append(f"- **Stop:** {_md_text(att['stop']['why'])}.")
        out.append("")

    # ---- culprit
    c = r["culprit"]
    out.append("## Culprit")
    out.append("")
    rows = []
    for k, label in (("rank", "rank"), ("local_rank", "local rank"), ("host", "host"), ("pod", "pod"),
                     ("pid", "pid"), ("gpu", "GPU")):
        val = c.get(k)
        shown = _cell(val) if val is not None else "unknown"
        if k in (c.get("from_store") or []):
            shown += " (from the store)"
        rows.append([label, shown])
    out += _table(["", ""], rows)
    out.append("")

    # ---- causal chain
    out.append("## Causal chain")
    out.append("")
    for i, step in enumerate(r["chain"], 1):
        out.append(f"{i}. {_md_text(step['text'])}")
    if len(r["chain"]) == 1:
        out.append("")
        out.append("_No cascade recorded by the diagnosis._")
    out.append("")

    # ---- timeline
    out.append("## Timeline (aligned clock, UTC)")
    out.append("")
    if r["timeline"]:
        rows = []
        for t in r["timeline"]:
            mark = {"culprit": "**root**", "evidence": "evidence", "cascade": "cascade"}.get(t["mark"], "")
            dt = f"{t['dt_s']:+.3f} s" if t.get("dt_s") is not None else "—"
            rows.append([_t(t["time"]), dt, _cell(t["host"]), _cell(t["rank"]), _cell(t["kind"]), mark,
                         _code(t["text"][:140]), _cell(f"{t['file']}:{t['line']}" if t["file"] else None)])
        out += _table(["time", "Δ verdict", "host", "rank", "kind", "", "event", "file:line"], rows)
    else:
        out.append("_No timed events in the store._")
    out.append("")

    # ---- evidence
    out.append("## Evidence")
    out.append("")
    if not r["excerpts"]:
        out.append("_The diagnosis cites no lines._")
        out.append("")
    for ex in r["excerpts"]:
        loc = f"{ex['file']}:{ex['line']}" if ex["line"] is not None else str(ex["file"])
        out.append(f"**{_cell(loc, 400)}** ({_md_text(ex['role'] or 'evidence')}"
                   + (f", {_t(ex['time'])}" if ex.get("time") else "") + ")"
                   + ("" if ex["found"] else " (line not in the store; text as cited)"))
        out.append("")
        width = max(len(str(ln["line"] or "")) for ln in ex["lines"]) if ex["lines"] else 1
        out += _fence([f"{'>' if ln['hit'] else ' '} {str(ln['line'] if ln['line'] is not None else '').rjust(width)} | {ln['text']}"
                       for ln in ex["lines"]])
        out.append("")

    # ---- status
    st = r["status"]
    out.append("## Status per node and rank")
    out.append("")
    if st["rows"]:
        rows = []
        for x in st["rows"]:
            who = "node" if x["rank"] is None else str(x["rank"])
            if x["local_rank"] is not None and x["rank"] is not None:
                who += f" (local {x['local_rank']})"
            if x["culprit"]:
                who = f"**{who}** ◀"
            gap = f"{x['last_vs_verdict_s']:+.1f} s" if x["last_vs_verdict_s"] is not None else "—"
            prog = (f"{_t(x['last_progress_time'])} {_cell(x['last_progress'], 50)}" if x["last_progress"] else "—")
            rows.append([_cell(x["host"]), who, str(x["events"]), _t(x["last"]), gap, prog,
                         _code((x["last_line"] or "")[:100]), _cell(x["exit"], 80)])
        out += _table(["host", "rank", "events", "last line at", "vs verdict", "last progress", "last line",
                       "exit"], rows)
        if st["shown"] < st["total"]:
            out.append("")
            out.append(f"_{st['shown']} of {st['total']} rows shown (the culprit's node and the ranks that went "
                       f"silent first). All of them: `ranktrace sql \"SELECT host, rank, max(ats) FROM events_aligned "
                       f"GROUP BY ALL ORDER BY 3\"`._")
    else:
        out.append("_No event carries a host or a rank._")
    out.append("")

    # ---- clock
    out.append("## Clock offsets")
    out.append("")
    out.append("Aligned time = logged time - offset (offset: how far the host's clock runs ahead of the reference).")
    out.append("")
    out += _table(["host", "offset", "uncertainty", "basis"],
                  [[_cell(c["host"]), _off(c["offset_s"]), ("±" + f"{float(c['uncertainty_s']):.3f} s")
                    if c["uncertainty_s"] is not None else "—", _cell(c["basis"])] for c in r["clock"]]
                  ) if r["clock"] else ["_No host names in the logs: no offsets._"]
    out.append("")

    # ---- hypotheses
    out.append("## Hypotheses")
    out.append("")
    if r["hypotheses"]:
        out += _table(["#", "kind", "rank", "host", "score", "why"],
                      [[str(i), _cell(h["kind"]), _cell(h["rank"]), _cell(h["host"]),
                        f"{h['score']:.2f}" if isinstance(h["score"], (int, float)) else "—", _cell(h["why"], 300)]
                       for i, h in enumerate(r["hypotheses"], 1)])
    else:
        out.append("_The diagnosis lists no alternatives._")
    out.append("")
    if r.get("missing"):
        out.append("**What the logs do not show** (add it to decide):")
        out.append("")
        for m in r["missing"]:
            out.append(f"- {_md_text(m)}")
        out.append("")

    # ---- next steps
    ns = r["next_steps"]
    out.append("## Next steps")
    out.append("")
    out.append(f"**{_md_text(ns['drain_text'])}**")
    out.append("")
    for step in ns["steps"]:
        out.append(f"- {_md_text(step)}")
    for step in ns["from_diagnose"]:
        out.append(f"- {_md_text(step)}" if "`" in step else f"- {_code(step, table=False)}")
    if ns["xid"]:
        out.append("")
        out += _table(["Xid", "meaning", "action"],
                      [[str(x["xid"]), _cell(x["meaning"]), _cell(x["action"], 200)] for x in ns["xid"]])
    out.append("")
    out.append("---")
    out.append(f"_Generated by ranktrace from {j['files']} log files; times are UTC on the aligned clock._")
    out.append("")
    return "\n".join(out)


def _off(o) -> str:
    return "—" if o is None else f"{float(o):+.3f} s"
