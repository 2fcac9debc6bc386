"""The verdict as text (what on-call reads first at 3 a.m.) and as Markdown."""

from __future__ import annotations

import os


def _common_dir(paths: list[str]) -> str:
    paths = [p for p in paths if p]
    if not paths:
        return ""
    try:
        d = os.path.commonpath([os.path.dirname(p) for p in paths])
    except ValueError:
        return ""
    return d + os.sep if d and d != os.sep else ""


def _rel(p: str | None, base: str) -> str:
    if not p:
        return "?"
    return p[len(base):] if base and p.startswith(base) else p


def _who(v: dict) -> str:
    bits = []
    if v.get("rank") is not None:
        bits.append(f"rank {v['rank']}")
    if v.get("local_rank") is not None:
        bits.append(f"local_rank {v['local_rank']}")
    if v.get("host"):
        bits.append(f"host {v['host']}")
    if v.get("pod"):
        bits.append(f"pod {v['pod']}")
    if v.get("pid") is not None:
        bits.append(f"pid {v['pid']}")
    if v.get("gpu") is not None:
        bits.append(f"gpu {v['gpu']}")
    return ", ".join(bits) or "no single process"


def _cascade_summary(cascade: list[dict]) -> str:
    if not cascade:
        return "none seen"
    kinds: dict[str, int] = {}
    for c in cascade:
        kinds[c["kind"] or "?"] = kinds.get(c["kind"] or "?", 0) + 1
    hosts = sorted({c["host"] for c in cascade if c["host"]})
    pods = sorted({c["pod"] for c in cascade if not c["host"] and c.get("pod")})
    first, last = cascade[0]["time"], cascade[-1]["time"]
    span = f" from {first} to {last}" if first and last else ""
    where = " and ".join(([f"{len(hosts)} host(s)"] if hosts else []) + ([f"{len(pods)} pod(s)"] if pods else [])) \
        or "0 host(s)"
    return (f"{len(cascade)} process(es) on {where} failed after it{span}: "
            + ", ".join(f"{n}x {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])))


def attempt_rows(d: dict) -> list[str]:
    """One line per attempt of a run that restarted (none for a run of one attempt)."""
    att = d.get("attempts") or []
    if len(att) < 2:
        return []
    out = []
    for a in att:
        v = a.get("verdict") or {}
        what = f"{v.get('kind')}: {_who(v)}" if v else ""
        cost = (a.get("cost") or {}).get("gpu_hours")
        step = (a.get("progress") or {}).get("max_step")
        out.append(f"#{a['id']:<3} {a['start'] or '?':<25} {a['outcome']:<10}"
                   + (f" step {step:<7}" if step is not None else " " * 13)
                   + what + (f"  ({cost:g} GPU-h)" if cost else ""))
    return out


def run_notes(d: dict) -> list[str]:
    """The run-level findings: a node that fails again and again, a restart loop to stop."""
    out = []
    for r in d.get("recurrence") or []:
        where = f"GPU {r['gpu']} of {r['host']}" if r.get("gpu") is not None else f"node {r['host']}"
        out.append(f"RECURS: {where} failed in attempts {', '.join(map(str, r['attempts']))} "
                   f"({', '.join(r['kinds'])}): drain it")
    if d.get("stop"):
        out.append(f"STOP: {d['stop']['why']}")
    return out


def render_text(d: dict, color: bool = False) -> str:
    v = d["verdict"]
    B, R, D, X = ("\x1b[1m", "\x1b[31m", "\x1b[2m", "\x1b[0m") if color else ("", "", "", "")
    base = _common_dir([e["file"] for e in d["evidence"]] + [c["file"] for c in d["cascade"]])
    out = []
    conf = v.get("confidence") or 0.0
    tag = "" if conf >= 0.8 else ("  (NOT CERTAIN)" if v["kind"] not in ("none",) else "")
    out.append(f"{B}{R if v['kind'] not in ('none',) else ''}VERDICT: {v['kind'].upper()}{X}{B} — {_who(v)}{X}"
               f"   confidence {conf:.2f}{tag}")
    if v.get("time"):
        out.append(f"  when:    {v['time']} (aligned clock)")
    out.append(f"  summary: {v.get('summary') or ''}")
    from .impact import impact_line   # issue 14: what the incident cost
    if impact_line(d.get("impact")):
        out.append(f"  cost:    {impact_line(d.get('impact'))}")
    if (d.get("gang") or {}).get("summary"):
        out.append(f"  gang:    {d['gang']['summary']}")
    from .controlplane import controlplane_line
    if controlplane_line(d.get("control_plane")):
        out.append(f"  control: {controlplane_line(d.get('control_plane'))}")
    if (d.get("topology") or {}).get("summary"):
        out.append(f"  network: {d['topology']['summary']}")
    if (d.get("stranded") or {}).get("summary"):
        out.append(f"  placed:  {d['stranded']['summary']}")
    if attempt_rows(d):
        out.append("")
        out.append(f"{B}ATTEMPTS{X}  {D}(the run restarted; the verdict above is attempt {v.get('attempt')}'s){X}")
        out += [f"  {r}" for r in attempt_rows(d)]
        out += [f"  {B}{n}{X}" for n in run_notes(d)]
    hyps = d.get("hypotheses") or []
    if hyps:
        out.append("")
        out.append(f"{B}WHY{X}")
        out.append(f"  {hyps[0]['why']}")
        if len(hyps) > 1:
            out.append(f"  other hypotheses:")
            for h in hyps[1:5]:
                who = " ".join(x for x in (f"rank {h['rank']}" if h["rank"] is not None else "",
                                           h["host"] or "") if x) or "job"
                out.append(f"    {h['score']:.2f}  {h['kind']:<18} {who:<24} {D}{h['why'][:110]}{X}")
    if d["evidence"]:
        out.append("")
        out.append(f"{B}EVIDENCE{X}" + (f"  {D}(paths under {base}){X}" if base else ""))
        for e in d["evidence"]:
            out.append(f"  [{e['role']:<11}] {_rel(e['file'], base)}:{e['line']}  {D}{e['time'] or '(no time)'}{X}")
            out.append(f"      {e['text']}")
    out.append("")
    out.append(f"{B}CASCADE{X}  {_cascade_summary(d['cascade'])}")
    for c in d["cascade"][:6]:
        who = c["host"] or (f"pod {c['pod']}" if c.get("pod") else "?")
        out.append(f"  {c['time'] or '(no time)':<25} {who:<14} rank {c['rank'] if c['rank'] is not None else '?':<4} "
                   f"{c['kind'] or '?':<18} {_rel(c['file'], base)}:{c['line']}")
    if len(d["cascade"]) > 6:
        out.append(f"  ... {len(d['cascade']) - 6} more")
    out.append("")
    out.append(f"{B}CLOCK{X}")
    for c in d["clock"]:
        u = "unknown" if c["uncertainty_s"] is None else f"±{c['uncertainty_s']:.3f}s"
        out.append(f"  {c['host']:<20} {c['offset_s']:+9.3f}s {u:<10} {D}{c['basis']}{X}")
    if not d["clock"]:
        out.append("  (no host names in the logs: no alignment)")
    if d.get("missing"):
        out.append("")
        out.append(f"{B}MISSING{X}")
        for m in d["missing"]:
            out.append(f"  - {m}")
    if d.get("next_steps"):
        out.append("")
        out.append(f"{B}NEXT{X}")
        for s in d["next_steps"]:
            out.append(f"  $ {s}")
    return "\n".join(out) + "\n"


def render_md(d: dict) -> str:
    v = d["verdict"]
    base = _common_dir([e["file"] for e in d["evidence"]] + [c["file"] for c in d["cascade"]])
    out = [f"# Verdict: `{v['kind']}` — {_who(v)}", "",
           f"**Confidence** {v.get('confidence', 0):.2f}" + (f" · **time** {v['time']}" if v.get("time") else ""), "",
           v.get("summary") or "", ""]
    if attempt_rows(d):
        out += ["## Attempts", "", "```"] + attempt_rows(d) + ["```", ""] + [f"**{n}**  " for n in run_notes(d)] + [""]
    if d.get("hypotheses"):
        out += ["## Hypotheses", "", "| score | kind | rank | host | why |", "|---|---|---|---|---|"]
        for h in d["hypotheses"]:
            out.append(f"| {h['score']:.2f} | {h['kind']} | {h['rank'] if h['rank'] is not None else ''} | "
                       f"{h['host'] or ''} | {h['why'].replace('|', '/')[:200]} |")
        out.append("")
    if d["evidence"]:
        out += ["## Evidence", ""]
        for e in d["evidence"]:
            out.append(f"- **{e['role']}** `{_rel(e['file'], base)}:{e['line']}` {e['time'] or ''}  ")
            out.append(f"  `{e['text'].replace('`', chr(39))}`")
        out.append("")
    out += ["## Cascade", "", _cascade_summary(d["cascade"]), ""]
    out += ["## Clock", "", "| host | offset_s | uncertainty_s | basis |", "|---|---|---|---|"]
    for c in d["clock"]:
        out.append(f"| {c['host']} | {c['offset_s']:+.3f} | {'' if c['uncertainty_s'] is None else c['uncertainty_s']} "
                   f"| {c['basis']} |")
    out.append("")
    if d.get("missing"):
        out += ["## Missing", ""] + [f"- {m}" for m in d["missing"]] + [""]
    if d.get("next_steps"):
        out += ["## Next steps", "", "```"] + d["next_steps"] + ["```", ""]
    return "\n".join(out)
