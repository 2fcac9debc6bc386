"""`ranktrace action`: what to do to a node after a GPU fault (drain it on Slurm, cordon and
taint it on Kubernetes), from the Xids in the store and queries/data/xid_catalog.csv.

Safe by default: it prints the commands. Only `--execute` runs them, and it runs nothing
but `scontrol update NodeName=... State=DRAIN Reason=...` (argv, no shell), never kubectl.
Meant for a Slurm Epilog or a health check: scripts/slurm_epilog_ranktrace.sh.

Which Xids call for it is the catalogue's `action` column: `drain_node` and `reset_gpu`
(a GPU reset needs the node free of jobs, so it is drained first) do; `restart_app` and
`check_app` (application-side errors, the GPU is fine) do not.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import subprocess
import sys

from ..safe_text import command_safe_node

DRAIN_ACTIONS = {"drain_node": "node reboot / hardware check", "reset_gpu": "GPU reset"}
_TAINT_KEY = "ranktrace/xid"
MAX_REASON = 120


def _clean(text: str, n: int = MAX_REASON) -> str:
    """Printable ASCII only (a log's control characters never reach a terminal or scontrol)."""
    s = "".join(c if " " <= c <= "~" else "?" for c in str(text))
    return s[:n]


def plan(con, *, node: str | None = None, since: dt.datetime | None = None,
         platform: str = "auto") -> dict:
    """The node actions the store calls for. `node`: the logs are this node's (lines without a
    host count for it; lines naming another host are left alone). `since` (UTC, naive): only
    Xids at or after it (an epilog passes the job's start, so an old, handled Xid does not
    drain the node again). Pure over the store: reads nothing else, runs nothing."""
    from ..correlate import diagnose
    from ..correlate.detectors.base import query
    from ..correlate.detectors.gpu import xid_catalog
    from ..correlate.util import iso, platforms
    d = diagnose(con)
    v = d["verdict"]
    cat = xid_catalog()
    plats = {"slurm", "k8s"} if platform == "auto" else {platform}
    if platform == "auto":
        plats = platforms(con) or {"slurm", "k8s"}
    per_node: dict[str, dict] = {}
    skipped: list[dict] = []
    for r in query(con, "xid"):
        if r["xid"] is None:
            continue
        host = r["host"] or node
        when = r["ats"]
        info = cat.get(r["xid"], {})
        action = info.get("action") or "unknown"
        item = {"node": host, "xid": r["xid"], "name": info.get("name") or f"Xid {r['xid']}",
                "action": action, "gpu": r["pci"] or None, "time": iso(when), "file": r["file"], "line": r["line"]}
        if node is not None and r["host"] not in (None, node):
            skipped.append(dict(item, why=f"names host {r['host']}, not {node} (--node)"))
            continue
        if since is not None and (when is None or when < since):
            skipped.append(dict(item, why=f"before {iso(since)} (--since)"))
            continue
        if action not in DRAIN_ACTIONS:
            skipped.append(dict(item, why=f"catalogue action {action}: an application-side error, the GPU "
                                          "itself is usually fine" if action in ("restart_app", "check_app")
                                else f"Xid {r['xid']} is not in queries/data/xid_catalog.csv"))
            continue
        if host is None:
            skipped.append(dict(item, why="the line names no host: give --node NAME (whose logs these are)"))
            continue
        if command_safe_node(host) is None:
            skipped.append(dict(item, node=_clean(host, 64), why="the host name from the log is not a plain "
                                                                 "node name; refused to put it in a command"))
            continue
        per_node.setdefault(host, item)   # the earliest Xid of the node gives the reason
    actions = []
    for host in sorted(per_node):
        it = per_node[host]
        reason = _clean(f"ranktrace: Xid {it['xid']} {it['name']}" + (f" GPU {it['gpu']}" if it["gpu"] else "")
                        + (f" at {it['time']}" if it["time"] else "") + f" ({DRAIN_ACTIONS[it['action']]})")
        cmds = {}
        if "slurm" in plats:
            cmds["slurm"] = [["scontrol", "update", f"NodeName={host}", "State=DRAIN", f"Reason={reason}"]]
        if "k8s" in plats:
            cmds["k8s"] = [["kubectl", "cordon", host],
                           ["kubectl", "taint", "nodes", host, f"{_TAINT_KEY}={it['xid']}:NoSchedule", "--overwrite"]]
        actions.append(dict(it, reason=reason, commands=cmds))
    return {"verdict": {k: v.get(k) for k in ("kind", "host", "rank", "gpu", "time", "confidence", "summary")},
            "platforms": sorted(plats), "actions": actions, "skipped": skipped}


def execute(p: dict, run=subprocess.run) -> list[dict]:
    """Run the Slurm drain commands of plan `p` (argv lists, no shell). Returns one result per
    command: argv, returncode, output."""
    out = []
    for a in p["actions"]:
        for argv in a["commands"].get("slurm", []):
            try:
                r = run(argv, capture_output=True, text=True, timeout=30)
                out.append({"argv": argv, "returncode": r.returncode, "output": _clean((r.stdout + r.stderr).strip(), 400)})
            except FileNotFoundError:
                out.append({"argv": argv, "returncode": 127,
                            "output": "scontrol not found on PATH: run this on a Slurm node (or a login node)"})
            except subprocess.TimeoutExpired:
                out.append({"argv": argv, "returncode": 124, "output": "scontrol did not answer in 30 s: is "
                                                                        "slurmctld up? (scontrol ping)"})
    return out


def render_text(p: dict, results: list[dict] | None) -> str:
    v = p["verdict"]
    lines = [f"verdict: {v['kind']}" + (f" on {_clean(v['host'], 64)}" if v.get("host") else "")
             + f" (confidence {v['confidence']})"]
    if not p["actions"]:
        lines.append("no node action: no Xid in the logs calls for a drain or a GPU reset")
    for a in p["actions"]:
        lines.append(f"\ndrain {a['node']}: Xid {a['xid']} ({_clean(a['name'], 80)})"
                     + (f" on GPU {a['gpu']}" if a["gpu"] else "") + (f" at {a['time']}" if a["time"] else "")
                     + f"; catalogue action {a['action']}  [{_clean(a['file'], 120)}:{a['line']}]")
        for plat in ("slurm", "k8s"):
            for argv in a["commands"].get(plat, []):
                lines.append(f"  $ {shlex.join(argv)}" + ("   # Kubernetes" if plat == "k8s" else ""))
    for s in p["skipped"]:
        lines.append(f"not acted on: Xid {s['xid']} ({_clean(s['name'], 60)})"
                     + (f" on {_clean(s['node'], 64)}" if s.get("node") else "") + f": {s['why']}")
    if results is None:
        if any("slurm" in a["commands"] for a in p["actions"]):
            lines.append("\n(printed only: --execute runs the scontrol commands)")
    else:
        for r in results:
            lines.append(f"ran: {shlex.join(r['argv'])} -> exit {r['returncode']}"
                         + (f": {r['output']}" if r["output"] else ""))
    return "\n".join(lines) + "\n"


def _since(s: str) -> dt.datetime:
    import argparse
    try:
        t = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--since {s!r}: give an ISO time, e.g. 2026-03-02T03:10:00Z") from None
    if t.tzinfo is None:
        raise argparse.ArgumentTypeError(f"--since {s!r}: say its zone (a Z or +01:00 at the end)")
    return t.astimezone(dt.timezone.utc).replace(tzinfo=None)


def cmd_action(args) -> int:
    from ..store import StoreError, open_readonly
    if args.node is not None and command_safe_node(args.node) is None:
        print(f"ranktrace action: --node {args.node!r} is not a plain node name", file=sys.stderr)
        return 2
    try:
        con = open_readonly(args.db)
    except StoreError as exc:   # missing, not DuckDB, not a store, locked
        print(f"ranktrace action: {exc}", file=sys.stderr)
        return 2
    try:
        p = plan(con, node=args.node, since=args.since, platform=args.platform)
    finally:
        con.close()
    results = None
    if args.execute:
        if "slurm" not in p["platforms"]:
            print("ranktrace action: --execute runs scontrol only, and this store shows no Slurm job: run the "
                  "printed kubectl commands yourself, or pass --platform slurm", file=sys.stderr)
            results = []
        else:
            results = execute(p)
    if args.format == "json":
        json.dump(dict(p, executed=results), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(p, results))
    return 1 if results and any(r["returncode"] != 0 for r in results) else 0


def register(sub, db_arg, formats_arg) -> None:
    sp = sub.add_parser("action", help="drain / cordon the node of a GPU fault (prints; --execute drains)",
                        description="The node actions the store calls for: for every node with an NVIDIA Xid "
                        "whose catalogue action is drain_node or reset_gpu (queries/data/xid_catalog.csv), the "
                        "Slurm drain (scontrol update NodeName=... State=DRAIN Reason=...) and the Kubernetes "
                        "cordon and taint. Prints them; --execute runs the scontrol commands (never kubectl). "
                        "For a Slurm Epilog see scripts/slurm_epilog_ranktrace.sh.")
    db_arg(sp)
    sp.add_argument("--node", metavar="NAME", help="the logs are this node's: lines without a host count for it, "
                    "lines naming another host are left alone (an epilog passes $SLURMD_NODENAME)")
    sp.add_argument("--since", type=_since, metavar="TIME",
                    help="only Xids at or after TIME (ISO, with zone), e.g. the job's start")
    sp.add_argument("--platform", choices=["auto", "slurm", "k8s"], default="auto",
                    help="which commands to give (auto: what the store shows; both when it shows neither)")
    sp.add_argument("--execute", action="store_true", help="run the scontrol drain commands (default: print)")
    sp.add_argument("--format", choices=["text", "json"], default="text")
    sp.set_defaults(func=cmd_action)
