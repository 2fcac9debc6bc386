"""`ranktrace tui [--db FILE]`: the incident timeline in the terminal."""

from __future__ import annotations

import sys
from pathlib import Path


def cmd_tui(args) -> int:
    from ..store import StoreError
    db = Path(args.db)
    if not db.exists():
        print(f"ranktrace tui: {db}: no such store; create it with `ranktrace ingest PATH --db {db}`",
              file=sys.stderr)
        return 2
    if not sys.stdout.isatty() and not args.force:
        print("ranktrace tui: needs a terminal (use `ranktrace diagnose` for plain output)", file=sys.stderr)
        return 2
    try:
        from ..tui.data import StoreData
        store = StoreData(db)
    except StoreError as exc:  # not a DuckDB file, not a ranktrace store, locked for writing
        print(f"ranktrace tui: {exc}", file=sys.stderr)
        return 2
    # The first screen's summary is read while Textual loads and starts.
    import threading
    warm = threading.Thread(target=store.summary, name="warm-summary", daemon=True)
    warm.start()
    from ..tui.app import RanktraceApp  # textual is imported only here
    app = RanktraceApp(str(db), store=store, warm=warm)
    try:
        app.run()
    finally:
        store.close()
    return 0


def register(sub, db_arg, formats_arg) -> None:
    sp = sub.add_parser("tui", help="the incident timeline in the terminal",
                        description="Open the store in an interactive terminal view: the verdict, a "
                        "timeline of ranks grouped by node on aligned time, the events, the evidence and "
                        "a SQL console. Press ? inside for the keys, q to quit.")
    db_arg(sp)
    sp.add_argument("--force", action="store_true", help=argparse_suppress())
    sp.set_defaults(func=cmd_tui)


def argparse_suppress():
    import argparse
    return argparse.SUPPRESS
