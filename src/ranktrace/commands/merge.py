"""`ranktrace merge DIR... [--db FILE]`: parts written by `ingest --part` into a store."""

from __future__ import annotations

import sys


def _err(msg: str) -> None:
    print(f"ranktrace merge: {msg}", file=sys.stderr)


def cmd_merge(args) -> int:
    from ..cli import _catalog
    from ..merge import PartError, merge
    cat = _catalog(args)
    try:
        s = merge(args.dirs, args.db, cat)
    except PartError as exc:
        _err(f"{exc}\nnothing was merged")
        return 2
    if not args.quiet:
        print(f"merged {len(s.parts)} part(s), {s.files} file(s), {s.events:,} events in {s.seconds:.1f} s "
              f"into {args.db}" + (f"; {s.duplicates} file(s) already in the store" if s.duplicates else "")
              + (f"; {s.renumbered} file id(s) taken, renumbered" if s.renumbered else ""))
        if s.reference_year:
            print(f"  year-less times placed near {s.reference_year}")
    return 0


def register(sub, db_arg, formats_arg) -> None:
    sp = sub.add_parser("merge", help="merge parts (ingest --part) into the store",
                        description="Merge parts written by `ranktrace ingest PATH... --part DIR` (one per node, "
                        "e.g. one srun task per node) into a DuckDB store, without parsing the logs again. "
                        "DIR is a directory of parts or one part. A file already in the store adds nothing; "
                        "a part of another ranktrace, schema or catalog version is refused.")
    sp.add_argument("dirs", nargs="+", metavar="DIR")
    db_arg(sp)
    formats_arg(sp)
    sp.add_argument("-q", "--quiet", action="store_true", help="no summary")
    sp.set_defaults(func=cmd_merge)
