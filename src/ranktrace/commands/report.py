"""`ranktrace report`: the postmortem for the ticket (md, html, json)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

FORMAT_BY_SUFFIX = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".json": "json"}


def _err(msg: str) -> None:
    print(f"ranktrace report: {msg}", file=sys.stderr)


def check_output(path: str) -> str | None:
    """Why `path` cannot be written (None: it can), checked before any work."""
    p = Path(path)
    if p.is_dir():
        return f"{p}: is a directory; give a file name"
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        return f"{p}: directory {parent} does not exist"
    if not os.access(parent, os.W_OK):
        return f"{p}: directory {parent} is not writable"
    if p.exists() and not os.access(p, os.W_OK):
        return f"{p}: file is not writable"
    return None


def write_text(path: str, text: str) -> None:
    """Write `text` to `path` through a temp file in the same directory: a
    failed run never leaves a half-written report."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, p)
    finally:
        if tmp.exists():
            tmp.unlink()


def load_verdict(con, args):
    """The verdict document: --verdict FILE, else diagnose() on the store.
    Returns (doc, None) or (None, error message)."""
    from ..report.verdict import VerdictUnavailable, get_verdict, parse_offsets
    if getattr(args, "verdict", None):
        try:
            src = sys.stdin.read() if args.verdict == "-" else Path(args.verdict).read_text()
            doc = json.loads(src)
        except OSError as exc:
            return None, f"--verdict {args.verdict}: {exc.strerror or exc}"
        except json.JSONDecodeError as exc:
            return None, f"--verdict {args.verdict}: not JSON ({exc})"
        if not isinstance(doc, dict) or not isinstance(doc.get("verdict"), dict):
            return None, f"--verdict {args.verdict}: no \"verdict\" object (expected `ranktrace diagnose --format json`)"
        return doc, None
    try:
        offsets = parse_offsets(getattr(args, "offset", None))
    except ValueError as exc:
        return None, str(exc)
    try:
        return get_verdict(con, offsets), None
    except VerdictUnavailable as exc:
        return None, f"{exc}; give a verdict file with --verdict FILE"


def cmd_report(args) -> int:
    from ..report import FORMATS, build_report, redact, render
    from ..store import StoreError, open_readonly
    fmt = args.format
    if fmt is None:
        fmt = FORMAT_BY_SUFFIX.get(Path(args.output).suffix.lower(), "md") if args.output else "md"
    if fmt not in FORMATS:
        _err(f"unknown format {fmt!r}")
        return 2
    if args.output and args.output != "-":
        why = check_output(args.output)
        if why:
            _err(f"cannot write {why}")
            return 2
    try:
        con = open_readonly(args.db)   # missing, not DuckDB, not a store, locked: StoreError says which
    except StoreError as exc:
        _err(str(exc))
        return 2
    try:
        verdict, err = load_verdict(con, args)
        if err:
            _err(err)
            return 2
        doc = build_report(con, verdict)
        if args.redact:
            doc = redact(con, doc)
        text = render(doc, fmt)
    finally:
        con.close()
    if not args.output or args.output == "-":
        sys.stdout.write(text)
        return 0
    try:
        write_text(args.output, text)
    except OSError as exc:
        _err(f"cannot write {args.output}: {exc.strerror or exc}")
        return 2
    print(f"wrote {args.output} ({fmt}, {len(text.encode()):,} bytes)"
          + (" redacted" if args.redact else ""), file=sys.stderr)
    return 0


def register(sub, db_arg, formats_arg) -> None:
    sp = sub.add_parser(
        "report", help="the postmortem for the ticket (md, html, json)",
        description="Write the incident report: verdict, culprit, causal chain, timeline on the aligned clock, "
        "evidence with file:line, status per node and rank, clock offsets, hypotheses and next steps. "
        "Markdown for GitHub/Jira, one self-contained HTML file (inline SVG timeline), or JSON (the verdict "
        "document plus the report sections). Writes to stdout unless -o is given.")
    db_arg(sp)
    sp.add_argument("--format", choices=["md", "html", "json"], default=None,
                    help="output format (default: from the -o suffix, else md)")
    sp.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    sp.add_argument("--redact", action="store_true",
                    help="replace hosts, IPs, user names, home paths and secrets with stable placeholders "
                    "(host-1, ip-1, user-1, secret-1, ...)")
    sp.add_argument("--offset", action="append", metavar="HOST=SECONDS",
                    help="pin a host's clock offset (repeatable), passed to the diagnosis")
    sp.add_argument("--verdict", metavar="FILE",
                    help="use this verdict JSON (`ranktrace diagnose --format json`, or - for stdin) "
                    "instead of diagnosing the store")
    sp.set_defaults(func=cmd_report)
