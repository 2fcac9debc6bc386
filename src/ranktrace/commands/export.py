"""`ranktrace export perfetto|parquet`: the store in other tools' formats."""

from __future__ import annotations

import sys
from pathlib import Path

from .report import check_output, load_verdict


REDACT_HELP = ("replace hosts, pods, IPs, user names, home paths and secrets with stable placeholders "
               "(host-1, pod-1, ip-1, user-1, secret-1, ...), as `report --redact` does")


def _err(msg: str) -> None:
    print(f"ranktrace export: {msg}", file=sys.stderr)


def _open(db: str):
    from ..store import StoreError, open_readonly
    try:
        return open_readonly(db), None
    except StoreError as exc:
        return None, str(exc)


def cmd_perfetto(args) -> int:
    from ..export.perfetto import MAX_EVENTS, export_perfetto
    if args.output != "-":
        why = check_output(args.output)
        if why:
            _err(f"cannot write {why}")
            return 2
    con, err = _open(args.db)
    if err:
        _err(err)
        return 2
    try:
        verdict = None
        if not args.no_verdict:
            verdict, err = load_verdict(con, args)
            if err:
                _err(f"{err}; exporting without a verdict (logged clocks, no causal chain)")
                verdict = None
        try:
            info = export_perfetto(con, args.output, verdict, max_events=args.max_events or MAX_EVENTS,
                                   redact=args.redact)
        except OSError as exc:
            _err(f"cannot write {args.output}: {exc.strerror or exc}")
            return 2
    finally:
        con.close()
    if args.output != "-":
        print(f"wrote {args.output}: {info['events']:,} events, {info['processes']} nodes, {info['threads']} "
              f"tracks, {info['bytes']:,} bytes" + (" (sampled: see the trace metadata)" if info["sampled"] else "")
              + "; open it in https://ui.perfetto.dev", file=sys.stderr)
    return 0


def cmd_parquet(args) -> int:
    from ..export.parquet import export_parquet
    d = Path(args.dir)
    if d.exists() and not d.is_dir():
        _err(f"{d}: exists and is not a directory")
        return 2
    probe = d if d.exists() else next((p for p in d.absolute().parents if p.exists()), Path("/"))
    import os
    if not os.access(probe, os.W_OK):
        _err(f"cannot write {d}: {probe} is not writable")
        return 2
    from ..store import StoreError
    try:
        info = export_parquet(args.db, args.dir, overwrite=args.overwrite, redact=args.redact)
    except (StoreError, FileExistsError) as exc:
        _err(str(exc))
        return 2
    except OSError as exc:
        _err(f"cannot write {args.dir}: {exc.strerror or exc}")
        return 2
    print(f"wrote {args.dir}: " + ", ".join(f"{t} {n:,}" for t, n in info["tables"].items())
          + f" rows; partitioned by node (host). Read: SELECT * FROM read_parquet('{args.dir}/events/**/*.parquet',"
          " hive_partitioning = true)", file=sys.stderr)
    return 0


def register(sub, db_arg, formats_arg) -> None:
    sp = sub.add_parser("export", help="export the store: perfetto (trace JSON) or parquet (dataset)",
                        description="Export the store to other tools: a Perfetto / Chrome trace of the incident "
                        "on the aligned clock, or a Parquet dataset of the events and fact tables.")
    esub = sp.add_subparsers(dest="target", metavar="TARGET")
    esub.required = True

    pp = esub.add_parser("perfetto", help="Chrome trace-event JSON for ui.perfetto.dev",
                         description="One process per node, one thread per rank, instant events for log lines, "
                         "slices for phases (rendezvous, init, training steps), flow arrows from the verdict "
                         "along the cascade, clock offsets in the metadata. Large stores are sampled "
                         "(--max-events); the metadata says so.")
    db_arg(pp)
    pp.add_argument("-o", "--output", required=True, metavar="FILE",
                    help="trace.json or trace.json.gz (gzip), - for stdout")
    pp.add_argument("--max-events", type=int, default=None, metavar="N",
                    help="at most N log events in the trace (default 200000)")
    pp.add_argument("--offset", action="append", metavar="HOST=SECONDS", help="pin a host's clock offset")
    pp.add_argument("--verdict", metavar="FILE", help="use this verdict JSON instead of diagnosing")
    pp.add_argument("--no-verdict", action="store_true", help="do not diagnose: logged clocks, no causal chain")
    pp.add_argument("--redact", action="store_true", help=REDACT_HELP)
    pp.set_defaults(func=cmd_perfetto)

    pq = esub.add_parser("parquet", help="the events and fact tables as a Parquet dataset",
                         description="Write DIR/events, DIR/<fact table> (partitioned by node = host), "
                         "DIR/files, DIR/kinds and DIR/_ranktrace.json; readable by DuckDB, Spark and Trino.")
    db_arg(pq)
    pq.add_argument("dir", metavar="DIR", help="output directory (created; must be empty unless --overwrite)")
    pq.add_argument("--overwrite", action="store_true", help="write into a non-empty DIR")
    pq.add_argument("--redact", action="store_true", help=REDACT_HELP)
    pq.set_defaults(func=cmd_parquet)
