"""`ranktrace demo`: a bundled real incident, end to end."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from ..resources import data_dir

DEFAULT_BUNDLE = "demo_sigkill_4node"
# A bundle's answer and its description are not logs: never ingest them.
ANSWER_FILES = ["README.md", "truth.json", "expected_verdict.json"]


def bundles() -> dict[str, Path]:
    root = data_dir("sample_logs")
    return {p.name: p for p in sorted(root.iterdir()) if p.is_dir() and (p / "expected_verdict.json").exists()}


def register(sub, db_arg, formats_arg) -> None:
    sp = sub.add_parser("demo", help="run ranktrace on a bundled real incident",
                        description="Ingest a bundled incident (sample_logs/) into a temporary store, print "
                        "the diagnosis, and say how to explore it. --list shows the bundles.")
    sp.add_argument("bundle", nargs="?", default=DEFAULT_BUNDLE, help=f"bundle name (default {DEFAULT_BUNDLE})")
    sp.add_argument("--list", action="store_true", help="list the bundled incidents")
    sp.add_argument("--db", help="keep the store here (default: a new temporary directory)")
    sp.set_defaults(func=run)


def run(args) -> int:
    from ..formats import load_catalog
    from ..ingest.pipeline import ingest
    found = bundles()
    if args.list:
        for name, path in found.items():
            kind = json.loads((path / "expected_verdict.json").read_text()).get("verdict", {}).get("kind")
            print(f"{name:<32} expected: {kind}")
        return 0
    if args.bundle not in found:
        print(f"ranktrace demo: no bundled incident {args.bundle!r}; try one of: {', '.join(found) or 'none'}",
              file=sys.stderr)
        return 2
    bundle = found[args.bundle]
    db = args.db or str(Path(tempfile.mkdtemp(prefix="ranktrace-demo-")) / "demo.store")
    readme = bundle / "README.md"
    print(f"== incident: {args.bundle}")
    if readme.exists():
        first = [ln for ln in readme.read_text().splitlines() if ln.strip() and not ln.startswith("#")][:3]
        for ln in first:
            print(f"   {ln}")
    cat = load_catalog(check_samples="drop")
    from ..store import StoreError
    try:
        s = ingest([str(bundle)], db, cat, warn=lambda m: print(f"ranktrace: {m}", file=sys.stderr),
                   exclude=ANSWER_FILES)
    except StoreError as exc:   # --db: not DuckDB, locked, no such directory
        print(f"ranktrace demo: {exc}", file=sys.stderr)
        return 2
    files = [f for f in s.files if f.status in ("ingested", "duplicate")]
    events = sum(f.events for f in files)
    print(f"== ingested {len(files)} files, {events:,} events into {db} in {s.seconds:.1f} s")
    try:
        from ..correlate import diagnose
    except ImportError:
        print("== (diagnose is not available in this build)")
    else:
        from ..store import open_readonly
        con = open_readonly(db)
        try:
            from ..report.verdict import fold_echoes
            verdict = fold_echoes(con, diagnose(con))
        finally:
            con.close()
        print("== diagnosis")
        from ..correlate.render import render_text
        from ..safe_text import safe_tree
        print(render_text(safe_tree(verdict), color=sys.stdout.isatty()))
        expected = json.loads((bundle / "expected_verdict.json").read_text()).get("verdict", {})
        print(f"== expected (from the capture's ground truth): kind={expected.get('kind')} "
              f"rank={expected.get('rank')} host={expected.get('host')}")
    print("== explore it")
    print(f"   ranktrace tui --db {db}")
    print(f"   ranktrace sql \"SELECT host, rank, max(ats) AS last_line FROM events_aligned GROUP BY ALL ORDER BY 3\" --db {db}")
    print(f"   ranktrace report --db {db} --format md")
    return 0
