"""`ranktrace diagnose`: the verdict for a store (text | json | md)."""

from __future__ import annotations

import json
import sys


def _offset(s: str) -> tuple[str, float]:
    import argparse
    if "=" not in s:
        raise argparse.ArgumentTypeError(f"--offset wants HOST=SECONDS, got {s!r}")
    h, v = s.rsplit("=", 1)
    try:
        return h.strip(), float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--offset {s!r}: SECONDS must be a number (e.g. node3=+37.5)") from None


def cmd_diagnose(args) -> int:
    from ..correlate import diagnose
    from ..correlate.render import render_md, render_text
    from ..store import StoreError, open_readonly
    try:
        con = open_readonly(args.db)
    except StoreError as exc:
        print(f"ranktrace diagnose: {exc}", file=sys.stderr)
        return 2
    try:
        from ..report.verdict import fold_echoes
        d = fold_echoes(con, diagnose(con, offsets=dict(args.offset or [])))   # --tee copies cited once
    finally:
        con.close()
    from ..safe_text import safe, safe_tree
    # Text from the logs is data: escaped for the terminal (text) and for HTML
    # in Markdown (no tag can open); JSON escapes every non-ASCII and control character itself.
    if args.format == "json":
        json.dump(d, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    elif args.format == "md":
        sys.stdout.write(render_md(safe_tree(d, lambda s: safe(s).replace("<", "&lt;"))))
    else:
        sys.stdout.write(render_text(safe_tree(d), color=sys.stdout.isatty()))
    return 0


def register(sub, db_arg, formats_arg) -> None:
    sp = sub.add_parser("diagnose", help="name the rank / node / rendezvous that killed the job",
                        description="Correlate the store: identity, clock alignment, root cause vs cascade. "
                        "Prints the verdict, why, the evidence lines, the cascade, the clock offsets used and "
                        "what to run next. --format json gives the verdict contract (README).")
    db_arg(sp)
    sp.add_argument("--format", choices=["text", "json", "md"], default="text")
    sp.add_argument("--offset", action="append", type=_offset, metavar="HOST=SECONDS",
                    help="pin a host's clock offset (seconds its clock runs ahead of the reference); repeatable")
    sp.set_defaults(func=cmd_diagnose)
