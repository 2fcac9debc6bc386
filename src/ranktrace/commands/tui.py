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
    # The store is opened and the first screen's summary read while Textual loads (DuckDB
    # works without the GIL: on a large store the two overlap).
    import threading
    opened = threading.Event()
    got: dict = {}

    def warm_up() -> None:
        try:
            from ..tui.data import StoreData
            got["store"] = StoreData(db)
        except BaseException as exc:   # re-raised below, in the main thread
            got["error"] = exc
            return
        finally:
            opened.set()
        try:
            got["store"].summary()     # cached for the app; a failure there is the app's to report
        except Exception:
            pass
    warm = threading.Thread(target=warm_up, name="warm-summary", daemon=True)
    warm.start()
    from ..tui.app import RanktraceApp  # textual is imported only here
    opened.wait()
    if "error" in got:
        if isinstance(got["error"], StoreError):   # not a DuckDB file, not a ranktrace store, locked
            print(f"ranktrace tui: {got['error']}", file=sys.stderr)
            return 2
        raise got["error"]
    store = got["store"]
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
