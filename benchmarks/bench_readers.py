"""What readers of a store wait for: diagnose, the TUI's first screen, the
README's queries; and the store's size against its input.

    python benchmarks/bench_readers.py STORE [--input-bytes N]

Every figure comes with a peer measured in the same run, for a ratio that
survives a noisy machine:
  - store scan: DuckDB reading every event's raw text once (a fresh read-only
    connection, `SELECT count(*), sum(strlen(raw)) FROM events`): the peer of
    diagnose, the queries and the Parquet export;
  - the TUI on a tiny store (0.2 MB of the same corpus): Python, Textual and
    DuckDB starting, the peer of the TUI's first screen on the big one;
  - `ranktrace sql "SELECT 1"`: the CLI's own start, the peer of the
    README's queries run through `ranktrace sql`.
benchmarks/run_all.py runs this on the store it ingests.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import bench_ingest
import measure

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
SCAN_SQL = "SELECT count(*), sum(strlen(raw)) FROM events"


def make_tiny_store(work: Path) -> Path:
    """A store of 0.2 MB of the benchmark's corpus: the TUI's peer."""
    corpus = work / "tiny-corpus"
    bench_ingest.generate(corpus, 0.2)
    db = work / "tiny-store"
    measure.run([bench_ingest.ranktrace_exe(), "ingest", str(corpus), "--db", str(db), "-q"]).check()
    return db


def tui_first_screen(db: Path, cwd: Path) -> tuple[float, str]:
    return measure.first_screen([bench_ingest.ranktrace_exe(), "tui", "--db", str(db)], measure.tui_ready,
                                cwd=cwd)


def bench_readers(db: Path, work: Path, *, input_bytes: int | None = None, readme: Path = README,
                  tiny_db: Path | None = None, repeat: int = 1) -> dict:
    """repeat > 1: diagnose, the TUI and their peers run that many rounds (each figure beside its
    peer of the same round); the round of the fastest diagnose and the fastest TUI are reported,
    every round under "rounds"."""
    exe = bench_ingest.ranktrace_exe()
    work.mkdir(parents=True, exist_ok=True)
    tiny_db = tiny_db or make_tiny_store(work)
    rounds = []
    for _ in range(max(1, repeat)):
        scan = measure.time_queries(db, [SCAN_SQL])[0]
        diag = measure.run([exe, "diagnose", "--db", str(db)]).check()
        tui_s, tui_screen = tui_first_screen(db, work)
        tiny_s, _ = tui_first_screen(tiny_db, work)
        rounds.append({"scan": scan, "diag": diag, "tui_s": tui_s, "tui_screen": tui_screen, "tiny_s": tiny_s})
    best = min(rounds, key=lambda r: r["diag"].wall_s)
    scan, diag = best["scan"], best["diag"]
    best_tui = min(rounds, key=lambda r: r["tui_s"])
    tui_s, tui_screen, tiny_s = best_tui["tui_s"], best_tui["tui_screen"], best_tui["tiny_s"]
    store_bytes = bench_ingest.dir_bytes(db)
    queries, export_dir = measure.readme_queries(readme)
    # The README's queries as `cd STORE && duckdb ranktrace.duckdb` runs them: in the store's
    # directory, where the README's export (ds/) is written too.
    export = None
    if export_dir:
        export = measure.run([exe, "export", "parquet", "--db", ".", "--overwrite", export_dir], cwd=db).check()
    timed = measure.time_queries(db, [q for _, q in queries])
    floor = measure.run([exe, "sql", "SELECT 1", "--db", str(db)], cwd=db).check()
    qres = []
    for (name, sql), t in zip(queries, timed):
        files = ["--allow-files"] if "read_" in sql else []   # the Parquet query reads the export
        cli = measure.run([exe, "sql", sql, "--db", ".", *files], cwd=db).check()
        qres.append({"name": name, "sql": sql, "s": t["s"], "rows": t["rows"], "first_row": t["first"],
                     "cli_s": cli.wall_s, "vs_scan": t["s"] / scan["s"], "cli_vs_cli_floor": cli.wall_s / floor.wall_s})
    verdict = next((ln for ln in diag.stdout.splitlines() if ln.startswith("VERDICT")), diag.stdout[:200])
    res = {
        "store": {"path": str(db), "bytes": store_bytes, "input_bytes": input_bytes,
                  "vs_input": store_bytes / input_bytes if input_bytes else None},
        "scan": {"sql": SCAN_SQL, "s": scan["s"], "events": int(scan["first"][0])},
        "diagnose": {"s": diag.wall_s, "cpu_s": diag.cpu_s, "peak_rss_mib": diag.peak_rss_mib, "load_1m": diag.load_1m,
                     "verdict": verdict.strip(), "vs_scan": diag.wall_s / scan["s"]},
        "tui": {"first_screen_s": tui_s, "tiny_store_first_screen_s": tiny_s, "vs_tiny_store": tui_s / tiny_s,
                "screen": tui_screen},
        "queries": qres,
        "cli_floor_s": floor.wall_s,
        "export_parquet": None if export is None else {"dir": export_dir, "s": export.wall_s,
                                                       "vs_scan": export.wall_s / scan["s"]},
        "rounds": [{"scan_s": r["scan"]["s"], "diagnose_s": r["diag"].wall_s, "diagnose_cpu_s": r["diag"].cpu_s,
                    "diagnose_vs_scan": r["diag"].wall_s / r["scan"]["s"], "load_1m": r["diag"].load_1m,
                    "tui_first_screen_s": r["tui_s"], "tiny_store_first_screen_s": r["tiny_s"],
                    "tui_vs_tiny_store": r["tui_s"] / r["tiny_s"]} for r in rounds],
    }
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path, help="a store made by ranktrace ingest (alone in its directory)")
    ap.add_argument("--input-bytes", type=int, help="the size of the logs it was made from")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of diagnose and TUI with their peers (noisy machine)")
    args = ap.parse_args()
    if not args.store.exists():
        sys.exit(f"{args.store}: no such store (make one with `ranktrace ingest` or run_all.py --keep)")
    with tempfile.TemporaryDirectory(prefix="rt-bench-readers-") as tmp:
        print(json.dumps(bench_readers(args.store, Path(tmp), input_bytes=args.input_bytes,
                                                repeat=args.repeat), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
