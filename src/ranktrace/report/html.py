"""The report as ONE self-contained HTML file: inline CSS, inline SVG, no
scripts, no fonts, no links to anything outside the file (a test checks).
Tooltips are SVG <title> elements, so the file works offline and in mail."""

from __future__ import annotations

from datetime import timedelta
from html import escape

from . import data as D

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:2em auto;
max-width:1200px;padding:0 1em;color:#1f2328;background:#fff}
h1{font-size:1.6em;border-bottom:1px solid #d0d7de;padding-bottom:.3em}
h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #eaeef2;padding-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0;font-size:13px;display:block;overflow-x:auto;max-width:100%}
td code{white-space:pre-wrap;word-break:break-word}
th,td{border:1px solid #d0d7de;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
tr.culprit td{background:#ffebe9;font-weight:600}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
pre{background:#f6f8fa;padding:.6em .8em;overflow-x:auto;border-radius:6px;border:1px solid #eaeef2}
pre .hit{background:#fff8c5;display:block}
.verdict{border-left:4px solid #cf222e;background:#fff5f5;padding:.6em 1em;font-size:15px}
.muted{color:#656d76}
.mark-culprit{color:#cf222e;font-weight:700}.mark-cascade{color:#bc4c00}.mark-evidence{color:#8250df}
.legend span{margin-right:1.2em}
svg{max-width:100%;height:auto;border:1px solid #eaeef2;border-radius:6px;background:#fff}
"""

COLORS = {"culprit": "#cf222e", "evidence": "#8250df", "cascade": "#fb8f44", "cause": "#a40e26", "symptom": "#fdba74",
          "lifecycle": "#0969da", "info": "#8c959f"}


def _e(v) -> str:
    return "—" if v is None or v == "" else escape(str(v))


def _n(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _t(iso: str | None, date: bool = False) -> str:
    return D.hms(D.parse_time(iso), date=date)


def _table(head: list[str], rows: list[tuple[list[str], str]]) -> str:
    h = "".join(f"<th>{x}</th>" for x in head)
    body = "".join(f"<tr class=\"{cls}\">" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>" for cells, cls in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


# ---------------------------------------------------------------- SVG timeline

def _ticks(t0, t1, n=6):
    span = (t1 - t0).total_seconds()
    if span <= 0:
        return [t0]
    steps = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900,
             1800, 3600, 7200, 14400, 21600, 43200, 86400]
    step = next((s for s in steps if span / s <= n), None) or 86400 * max(1, round(span / n / 86400))
    start = t0.timestamp() if hasattr(t0, "timestamp") else 0
    first = (int(start / step) + 1) * step
    out = []
    k = first
    while k <= start + span:
        out.append(t0 + timedelta(seconds=k - start))
        k += step
    return out


def svg_timeline(svg: dict, window: tuple | None = None, title: str = "") -> str:
    lanes = svg["lanes"]
    if not lanes:
        return ""
    firsts = [D.parse_time(ln["first"]) for ln in lanes if ln["first"]]
    lasts = [D.parse_time(ln["last"]) for ln in lanes if ln["last"]]
    if not firsts or not lasts:
        return ""
    t0, t1 = (window if window else (min(firsts), max(lasts)))
    if t1 <= t0:
        t1 = t0 + timedelta(seconds=1)
    span = (t1 - t0).total_seconds()
    left, right, top, lane_h, group_h = 190, 20, 28, 13, 16
    width = 1160
    plot_w = width - left - right

    def x(t):
        return left + (min(max((t - t0).total_seconds(), 0), span) / span) * plot_w

    rows = []
    y = top
    last_host = object()
    for ln in lanes:
        if ln["host"] != last_host:
            rows.append(("group", ln["host"], y))
            y += group_h
            last_host = ln["host"]
        rows.append(("lane", ln, y))
        y += lane_h
    height = y + 24
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" font-family="ui-monospace,Menlo,Consolas,monospace" '
           f'font-size="10">']
    if title:
        out.append(f"<title>{escape(title)}</title>")
    # axis
    for tk in _ticks(t0, t1):
        xx = x(tk)
        out.append(f'<line x1="{xx:.1f}" y1="{top - 6}" x2="{xx:.1f}" y2="{height - 20}" stroke="#eaeef2"/>')
        out.append(f'<text x="{xx:.1f}" y="{top - 10}" text-anchor="middle" fill="#656d76">'
                   f'{escape(D.hms(tk)[:12] if span < 60 else D.hms(tk)[:8])}</text>')
    lane_y = {}
    for kind, item, yy in rows:
        if kind == "group":
            out.append(f'<rect x="0" y="{yy}" width="{width}" height="{group_h}" fill="#f6f8fa"/>')
            out.append(f'<text x="4" y="{yy + 12}" font-weight="700" fill="#1f2328">'
                       f'{escape(str(item) if item is not None else "(no host)")}</text>')
            continue
        ln = item
        lane_y[(ln["host"], ln["rank"])] = yy
        label = "node" if ln["rank"] is None else f"rank {ln['rank']}" + (
            f" (local {ln['local_rank']})" if ln["local_rank"] is not None else "")
        color = COLORS["culprit"] if ln["culprit"] else "#1f2328"
        weight = ' font-weight="700"' if ln["culprit"] else ""
        if ln["culprit"]:
            out.append(f'<rect x="0" y="{yy}" width="{width}" height="{lane_h}" fill="#ffebe9"/>')
        out.append(f'<text x="14" y="{yy + 10}" fill="{color}"{weight}>{escape(label)}</text>')
        if not ln["events"]:
            out.append(f'<text x="{left + 4}" y="{yy + 10}" fill="{COLORS["culprit"]}">no line of its own in the '
                       f'logs</text>')
        a, b = D.parse_time(ln["first"]), D.parse_time(ln["last"])
        if b and b < t0:  # silent before the window: absence is evidence
            out.append(f'<text x="{left + 4}" y="{yy + 10}" fill="#8c959f">◂ last line {escape(D.hms(b))}</text>')
        elif a and a > t1:
            out.append(f'<text x="{width - right - 4}" y="{yy + 10}" text-anchor="end" fill="#8c959f">'
                       f'first line {escape(D.hms(a))} ▸</text>')
        if a and b and b >= t0 and a <= t1:
            out.append(f'<rect x="{x(a):.1f}" y="{yy + 5}" width="{max(x(b) - x(a), 1):.1f}" height="3" '
                       f'fill="#d0d7de"><title>{escape(label)}: {escape(D.hms(a))} to {escape(D.hms(b))}, '
                       f'{ln["events"]} events</title></rect>')
    order = {"info": 0, "lifecycle": 1, "symptom": 2, "cause": 3, "cascade": 4, "evidence": 5, "culprit": 6}
    for m in sorted(svg["marks"], key=lambda m: order.get(m["tag"], 0)):
        yy = lane_y.get((m["host"], m["rank"]))
        t = D.parse_time(m["time"])
        if yy is None or t is None or t < t0 or t > t1:
            continue
        c = COLORS.get(m["tag"], "#8c959f")
        r = 5 if m["tag"] == "culprit" else 3.5 if m["tag"] in ("cascade", "cause", "evidence") else 2.5
        tip = f"{D.hms(t)} {m['kind']} [{m['tag']}]: {m['text']}"
        shape = (f'<path d="M{x(t):.1f},{yy + 1} l{r},{r + 1} l-{r},{r + 1} l-{r},-{r + 1} z" fill="{c}" '
                 f'stroke="#fff" stroke-width="0.5">' if m["tag"] == "culprit" else
                 f'<circle cx="{x(t):.1f}" cy="{yy + 6.5}" r="{r}" fill="{c}">')
        out.append(shape + f"<title>{escape(tip)}</title>" + ("</path>" if m["tag"] == "culprit" else "</circle>"))
    vt = D.parse_time(svg.get("verdict_time"))
    if vt and t0 <= vt <= t1:
        out.append(f'<line x1="{x(vt):.1f}" y1="{top - 4}" x2="{x(vt):.1f}" y2="{height - 20}" '
                   f'stroke="{COLORS["culprit"]}" stroke-dasharray="4 3"><title>verdict time '
                   f'{escape(D.hms(vt))}</title></line>')
    out.append(f'<text x="{left}" y="{height - 6}" fill="#656d76">aligned clock, UTC; '
               f'{escape(D.hms(t0, date=True))} to {escape(D.hms(t1, date=True))}</text>')
    out.append("</svg>")
    return "".join(out)


def _window(doc: dict) -> tuple | None:
    """Around the failure: the verdict time and the cascade, padded."""
    r = doc["report"]
    ts = [D.parse_time(doc.get("verdict", {}).get("time"))]
    ts += [D.parse_time(c.get("time")) for c in r["chain"]]
    ts += [D.parse_time(t["time"]) for t in r["timeline"] if t["mark"]]
    ts = [t for t in ts if t is not None]
    if not ts:
        return None
    a, b = min(ts), max(ts)
    pad = max((b - a).total_seconds() * 0.15, 5.0)
    return a - timedelta(seconds=pad), b + timedelta(seconds=pad)


# ---------------------------------------------------------------- the page

def render_html(doc: dict) -> str:
    r = doc["report"]
    s = r["summary"]
    j = r["job"]
    p: list[str] = []
    p.append("<!DOCTYPE html>")
    p.append('<html lang="en"><head><meta charset="utf-8">')
    p.append('<meta name="viewport" content="width=device-width, initial-scale=1">')
    p.append(f"<title>{escape(r['title'])}</title><style>{CSS}</style></head><body>")
    p.append(f"<h1>{escape(r['title'])}</h1>")
    p.append(f'<p class="verdict">{escape(s["text"])}</p>')

    p.append("<h2>Summary</h2><ul>")
    p.append(f"<li><b>What:</b> <code>{escape(s['kind'])}</code>: {escape(s['where'])} {escape(s['kind_means'])}</li>")
    p.append(f"<li><b>When:</b> {escape(_t(s['time'], True))} UTC (aligned clock)</li>" if s["time"] else
             "<li><b>When:</b> not established</li>")
    conf = s["confidence"]
    p.append(f"<li><b>Confidence:</b> {conf:.2f} ({escape(s['confidence_label'])})</li>"
             if isinstance(conf, (int, float)) else "<li><b>Confidence:</b> not given</li>")
    from ..correlate.impact import impact_line   # issue 14: what the incident cost
    if impact_line(doc.get("impact")):
        p.append(f"<li><b>Cost:</b> {escape(impact_line(doc.get('impact')))}</li>")
    p.append(f"<li><b>Job:</b> {_e(j['job_id'] or 'no job id in the logs')}</li>")
    p.append(f"<li><b>Logs:</b> {j['files']} files, {j['events']:,} events, {_n(j['hosts'], 'host')}, {_n(j['ranks'], 'rank')}, "
             f"{escape(_t(j['first'], True))} to {escape(_t(j['last'], True))} UTC</li></ul>")

    att = r.get("attempts") or {}
    if att.get("rows"):
        p.append("<h2>Attempts</h2>")
        p.append(f"<p>The run restarted: {_n(len(att['rows']), 'attempt')}; the verdict above is attempt "
                 f"{_e(att['lead'])}'s.</p>")
        p.append(_table(["#", "start (UTC)", "outcome", "root cause", "confidence", "cost (GPU-h)", "step reached"],
                        [([_e(a["id"]), escape(_t(a["start"], True)), _e(a["outcome"]),
                           f"<code>{_e(a['kind'])}</code>: {_e(a['who'])}" if a["kind"] else "",
                           f"{a['confidence']:.2f}" if isinstance(a["confidence"], (int, float)) else "",
                           f"{a['gpu_hours']:g}" if a["gpu_hours"] else "",
                           _e(a["max_step"]) if a["max_step"] is not None else ""], "") for a in att["rows"]]))
        notes = [f"<li><b>Recurs:</b> {_e(rec['host'])} failed in attempts "
                 f"{_e(', '.join(map(str, rec['attempts'])))} ({_e(', '.join(rec['kinds']))}): drain it.</li>"
                 for rec in att["recurrence"]]
        if att.get("stop"):
            notes.append(f"<li><b>Stop:</b> {_e(att['stop']['why'])}.</li>")
        if notes:
            p.append("<ul>" + "".join(notes) + "</ul>")

    c = r["culprit"]
    p.append("<h2>Culprit</h2>")
    p.append(_table(["", ""], [([label, _e(c.get(k)) if c.get(k) is not None else "unknown"], "")
                               for k, label in (("rank", "rank"), ("local_rank", "local rank"), ("host", "host"),
                                                ("pod", "pod"), ("pid", "pid"), ("gpu", "GPU"))]))

    p.append("<h2>Causal chain</h2><ol>")
    for step in r["chain"]:
        p.append(f"<li>{escape(step['text'])}</li>")
    p.append("</ol>")

    p.append("<h2>Timeline</h2>")
    p.append('<p class="legend"><span class="mark-culprit">◆ root cause</span><span class="mark-evidence">● evidence</span><span class="mark-cascade">● cascade'
             '</span><span style="color:#a40e26">● other causes</span><span style="color:#d97706">● symptoms</span>'
             '<span style="color:#0969da">● lifecycle</span><span class="mark-culprit">┆ verdict time</span></p>')
    win = _window(doc)
    if win:
        p.append("<h3>Around the failure</h3>")
        p.append(svg_timeline(r["svg"], win, "around the failure"))
    p.append("<h3>Whole job</h3>")
    p.append(svg_timeline(r["svg"], None, "whole job") or '<p class="muted">No timed events.</p>')
    sv = r["svg"]
    if len(sv["lanes"]) < sv["lanes_total"]:
        p.append(f'<p class="muted">{len(sv["lanes"])} of {sv["lanes_total"]} lanes drawn.</p>')
    if r["timeline"]:
        rows = []
        for t in r["timeline"]:
            mark = {"culprit": '<span class="mark-culprit">root</span>',
                    "evidence": '<span class="mark-evidence">evidence</span>',
                    "cascade": '<span class="mark-cascade">cascade</span>'}.get(t["mark"], "")
            dt = f"{t['dt_s']:+.3f} s" if t.get("dt_s") is not None else "—"
            rows.append(([escape(_t(t["time"])), dt, _e(t["host"]), _e(t["rank"]), _e(t["kind"]), mark,
                          f"<code>{escape(t['text'])}</code>",
                          _e(f"{t['file']}:{t['line']}" if t["file"] else None)],
                         "culprit" if t["mark"] == "culprit" else ""))
        p.append(_table(["time", "Δ verdict", "host", "rank", "kind", "", "event", "file:line"], rows))

    p.append("<h2>Evidence</h2>")
    if not r["excerpts"]:
        p.append('<p class="muted">The diagnosis cites no lines.</p>')
    for ex in r["excerpts"]:
        loc = f"{ex['file']}:{ex['line']}" if ex["line"] is not None else str(ex["file"])
        p.append(f"<p><b>{escape(loc)}</b> <span class=\"muted\">({escape(ex['role'] or 'evidence')}"
                 + (f", {escape(_t(ex['time']))}" if ex.get("time") else "") + ")"
                 + ("" if ex["found"] else " (line not in the store; text as cited)") + "</span></p>")
        width = max(len(str(ln["line"] or "")) for ln in ex["lines"]) if ex["lines"] else 1
        body = "".join(
            (f'<span class="hit">' if ln["hit"] else "<span>")
            + escape(f"{str(ln['line'] if ln['line'] is not None else '').rjust(width)} | {ln['text']}") + "</span>" + ("" if ln["hit"] else "\n")
            for ln in ex["lines"])
        p.append(f"<pre>{body}</pre>")

    st = r["status"]
    p.append("<h2>Status per node and rank</h2>")
    rows = []
    for x in st["rows"]:
        who = "node" if x["rank"] is None else str(x["rank"])
        if x["local_rank"] is not None and x["rank"] is not None:
            who += f" (local {x['local_rank']})"
        gap = f"{x['last_vs_verdict_s']:+.1f} s" if x["last_vs_verdict_s"] is not None else "—"
        prog = (f"{escape(_t(x['last_progress_time']))} {escape(x['last_progress'])}" if x["last_progress"] else "—")
        rows.append(([_e(x["host"]), escape(who), str(x["events"]), escape(_t(x["last"])), gap, prog,
                      f"<code>{escape(x['last_line'] or '')}</code>", _e(x["exit"])],
                     "culprit" if x["culprit"] else ""))
    p.append(_table(["host", "rank", "events", "last line at", "vs verdict", "last progress", "last line", "exit"],
                    rows) if rows else '<p class="muted">No event carries a host or a rank.</p>')
    if st["shown"] < st["total"]:
        p.append(f'<p class="muted">{st["shown"]} of {st["total"]} rows shown.</p>')

    p.append("<h2>Clock offsets</h2>")
    p.append('<p class="muted">Aligned time = logged time - offset.</p>')
    p.append(_table(["host", "offset", "uncertainty", "basis"],
                    [([_e(k["host"]), "—" if k["offset_s"] is None else f"{float(k['offset_s']):+.3f} s",
                       "—" if k["uncertainty_s"] is None else f"±{float(k['uncertainty_s']):.3f} s", _e(k["basis"])],
                      "") for k in r["clock"]]))

    p.append("<h2>Hypotheses</h2>")
    if r["hypotheses"]:
        p.append(_table(["#", "kind", "rank", "host", "score", "why"],
                        [([str(i), _e(h["kind"]), _e(h["rank"]), _e(h["host"]),
                           f"{h['score']:.2f}" if isinstance(h["score"], (int, float)) else "—", _e(h["why"])], "")
                         for i, h in enumerate(r["hypotheses"], 1)]))
    else:
        p.append('<p class="muted">The diagnosis lists no alternatives.</p>')
    if r.get("missing"):
        p.append("<p><b>What the logs do not show</b> (add it to decide):</p><ul>"
                 + "".join(f"<li>{escape(m)}</li>" for m in r["missing"]) + "</ul>")

    ns = r["next_steps"]
    p.append("<h2>Next steps</h2>")
    p.append(f"<p><b>{_md_code(ns['drain_text'])}</b></p><ul>")
    for step in ns["steps"]:
        p.append(f"<li>{_md_code(step)}</li>")
    for step in ns["from_diagnose"]:
        p.append(f"<li>{_md_code(step) if '`' in step else '<code>' + escape(step) + '</code>'}</li>")
    p.append("</ul>")
    if ns["xid"]:
        p.append(_table(["Xid", "meaning", "action"],
                        [([str(x["xid"]), _e(x["meaning"]), _e(x["action"])], "") for x in ns["xid"]]))
    p.append(f'<hr><p class="muted">Generated by ranktrace from {j["files"]} log files; times are UTC on the '
             f'aligned clock. This file is self-contained.</p>')
    p.append("</body></html>")
    return "\n".join(p) + "\n"


def _md_code(s: str) -> str:
    """`code` spans of the next-steps text -> <code>, the rest escaped."""
    parts = str(s).split("`")
    return "".join(f"<code>{escape(x)}</code>" if i % 2 else escape(x) for i, x in enumerate(parts))
