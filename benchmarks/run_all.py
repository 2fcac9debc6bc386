"""Every benchmark in one run: a markdown table, and benchmarks/results/latest.json.

    python benchmarks/run_all.py                      # ingest at 512 MB and 2 GB, readers on the 1 GB store
    python benchmarks/run_all.py --sizes 512 --store-mb 512
    python benchmarks/run_all.py --quick              # 3 MB, well under a minute: CI

Each figure sits beside a peer measured in the same run, as a ratio (these
machines are noisy):
  - ingest (`ranktrace ingest`, the CLI in a subprocess: MB/s, lines/s, peak
    RSS) beside `wc -l` and lnav (Debian's package, installed when missing)
    on the same files (benchmarks/bench_ingest.py);
  - on the store of --store-mb: diagnose, the TUI's first screen (a real
    terminal, tmux), every query in README.md (taken from the README), the
    Parquet export, and the store's size against its input
    (benchmarks/bench_readers.py).
Corpora (benchmarks/gen_corpus.py) and stores go in a temporary directory
under /tmp (or --work), removed at the end unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import bench_ingest
import bench_readers
import measure

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TARGETS = {  # issue 12, "Done means"
    "ingest_mb_s": ">= 300 MB/s, > lnav",
    "peak_rss": "<= 1024 MiB (2 GB input)",
    "diagnose": "< 10 s (1 GB store)",
    "tui": "< 1 s",
    "query": "< 1 s",
}


def _meta(lnav: str) -> dict:
    def out(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO).stdout.strip()
        except OSError:
            return ""
    import duckdb
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    return {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": out(["git", "rev-parse", "HEAD"]),
        "dirty": bool(out(["git", "status", "--porcelain", "--untracked-files=no"])),
        "ranktrace": out([bench_ingest.ranktrace_exe(), "--version"]),
        "catalog_precomputed": bench_ingest.warn_if_catalog_stale(),
        "python": platform.python_version(), "duckdb": duckdb.__version__,
        "lnav": measure.lnav_version(lnav), "tmux": out(["tmux", "-V"]),
        "cpus": os.cpu_count(), "cpu_model": cpu, "load_avg_start": os.getloadavg(),
    }


def run(sizes: list[float], store_mb: float, work: Path, keep: bool, seed: int) -> dict:
    lnav = measure.ensure_tool("lnav", "lnav", "the peer of ingest, measured in the same run")
    measure.ensure_tool("tmux", "tmux", "the terminal the TUI is timed in")
    report = {"meta": _meta(lnav), "ingest": [], "readers": None}
    t_start = time.perf_counter()
    plan = list(dict.fromkeys([*sizes, store_mb]))   # the readers' store is one of the ingests
    reader_store = None
    for mb in plan:
        corpus = work / f"corpus-{mb:g}mb"
        print(f"[run_all] generating {mb:g} MB in {corpus}", file=sys.stderr, flush=True)
        bench_ingest.generate(corpus, mb, seed)
        print(f"[run_all] wc -l, lnav, ranktrace ingest on {mb:g} MB", file=sys.stderr, flush=True)
        store_dir = work / f"store-{mb:g}mb"
        res = bench_ingest.bench_ingest(corpus, store_dir, lnav)
        res["size_mb"] = mb
        if mb in sizes:
            report["ingest"].append(res)
        if mb == store_mb:
            reader_store = (store_dir, res["corpus"]["bytes"])
        elif not keep:
            shutil.rmtree(store_dir, ignore_errors=True)
        if not keep:
            shutil.rmtree(corpus, ignore_errors=True)
    print(f"[run_all] readers on the {store_mb:g} MB store", file=sys.stderr, flush=True)
    db, input_bytes = reader_store
    report["readers"] = bench_readers.bench_readers(db, work / "readers", input_bytes=input_bytes)
    report["readers"]["store_mb"] = store_mb
    report["meta"]["load_avg_end"] = os.getloadavg()
    report["meta"]["total_s"] = time.perf_counter() - t_start
    return report


def _f(v: float, unit: str = "") -> str:
    if v is None:
        return "-"
    if abs(v) >= 100:
        s = f"{v:,.0f}"
    elif abs(v) >= 1:
        s = f"{v:.2f}"
    else:
        s = f"{v:.3f}"
    return f"{s} {unit}".strip()


def markdown(rep: dict) -> str:
    m = rep["meta"]
    rows = [("metric", "ranktrace", "peer", "peer value", "ratio", "target (issue 12)"),
            ("---",) * 6]
    for r in rep["ingest"]:
        s = f"ingest {r['size_mb']:g} MB"
        i, ln, wc = r["ingest"], r["lnav"], r["wc"]
        rows += [
            (f"{s}: MB/s", _f(i["mb_s"]), "lnav", _f(ln["mb_s"]), _f(r["ratios"]["ingest_mb_s_vs_lnav"]),
             TARGETS["ingest_mb_s"]),
            (f"{s}: MB/s", _f(i["mb_s"]), "wc -l", _f(wc["mb_s"]), _f(r["ratios"]["ingest_mb_s_vs_wc"]), ""),
            (f"{s}: lines/s", _f(i["lines_s"]), "lnav", _f(ln["lines_s"]), _f(i["lines_s"] / ln["lines_s"]), ""),
            (f"{s}: lines read", f"{i['lines']:,}", "wc -l (lnav)", f"{wc['lines']:,} ({ln['lines']:,})",
             _f(i["lines"] / wc["lines"]), "= wc -l"),
            (f"{s}: peak RSS MiB", _f(i["peak_rss_mib"]), "lnav", _f(ln["peak_rss_mib"]),
             _f(r["ratios"]["ingest_rss_vs_lnav"]), TARGETS["peak_rss"]),
            (f"{s}: wall s", _f(i["s"]), "lnav", _f(ln["s"]), _f(i["s"] / ln["s"]), ""),
            (f"{s}: CPU s (less noisy)", _f(i["cpu_s"]), "lnav", _f(ln["cpu_s"]), _f(i["cpu_s"] / ln["cpu_s"]), ""),
            (f"{s}: store MB", _f(i["store_bytes"] / 1e6), "input MB", _f(r["corpus"]["mb"]),
             _f(r["ratios"]["store_vs_input"]), ""),
        ]
    rd = rep["readers"]
    st = f"{rd['store_mb']:g} MB store"
    scan = rd["scan"]["s"]
    if rd["store_mb"] not in [r["size_mb"] for r in rep["ingest"]]:   # else its ingest row says it
        rows.append((f"{st}: store MB", _f(rd["store"]["bytes"] / 1e6), "input MB",
                     _f(rd["store"]["input_bytes"] / 1e6), _f(rd["store"]["vs_input"]), ""))
    rows += [
        (f"{st}: diagnose s (CPU s)", f"{_f(rd['diagnose']['s'])} ({_f(rd['diagnose']['cpu_s'])})", "store scan s",
         _f(scan), _f(rd["diagnose"]["vs_scan"]), TARGETS["diagnose"]),
        (f"{st}: TUI first screen s", _f(rd["tui"]["first_screen_s"]), "TUI on a tiny store s",
         _f(rd["tui"]["tiny_store_first_screen_s"]), _f(rd["tui"]["vs_tiny_store"]), TARGETS["tui"]),
    ]
    for q in rd["queries"]:
        rows += [
            (f"{st}: {q['name']} s", _f(q["s"]), "store scan s", _f(scan), _f(q["vs_scan"]), TARGETS["query"]),
            (f"{st}: {q['name']} via `ranktrace sql` s", _f(q["cli_s"]), "`ranktrace sql \"SELECT 1\"` s",
             _f(rd["cli_floor_s"]), _f(q["cli_vs_cli_floor"]), ""),
        ]
    if rd["export_parquet"]:
        e = rd["export_parquet"]
        rows.append((f"{st}: export parquet s", _f(e["s"]), "store scan s", _f(scan), _f(e["vs_scan"]), ""))
    head = (f"ranktrace benchmarks, {m['date_utc']}, commit {m['commit'][:12]}{' (dirty)' if m['dirty'] else ''}, "
            f"{m['cpus']} CPUs ({m['cpu_model']}), load {m['load_avg_start'][0]:.2f} -> {m['load_avg_end'][0]:.2f}, "
            f"{m['lnav']}, {m['total_s']:.0f} s in all\n\n")
    if not m.get("catalog_precomputed", True):
        head += ("**The catalog was not precomputed** (a stale editable install): every command below paid "
                 "~1 s loading it, which a built ranktrace does not.\n\n")
    return head + "\n".join("| " + " | ".join(r) + " |" for r in rows) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="512,2048", help="ingest corpus sizes in MB, comma-separated (512,2048)")
    ap.add_argument("--store-mb", type=float, default=1000, help="the corpus size of the readers' store (1000)")
    ap.add_argument("--quick", action="store_true", help="one 3 MB corpus for everything (CI; ~20 s)")
    ap.add_argument("--work", type=Path, help="where corpora and stores go (default: a new directory in /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep corpora and stores")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path, default=HERE / "results" / "latest.json", help="where the results go")
    args = ap.parse_args()
    try:
        sizes = [float(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        sys.exit(f"run_all: --sizes {args.sizes!r}: expected MB numbers separated by commas, e.g. 512,2048")
    store_mb = args.store_mb
    if args.quick:
        sizes, store_mb = [3.0], 3.0
    if not sizes or min(sizes) <= 0 or store_mb <= 0:
        sys.exit("run_all: sizes must be positive MB")
    work = args.work or Path(tempfile.mkdtemp(prefix="ranktrace-bench-", dir="/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        rep = run(sizes, store_mb, work, args.keep, args.seed)
    finally:
        if args.keep:
            print(f"[run_all] kept {work}", file=sys.stderr)
        elif args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    rep["meta"]["args"] = {"sizes": sizes, "store_mb": store_mb, "quick": args.quick}
    text = markdown(rep)
    rep["markdown"] = text
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rep, indent=2) + "\n")
    print(text)
    print(f"[run_all] wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
