"""Ingest throughput and peak memory, beside `wc -l` on the same files.

    python benchmarks/bench_ingest.py [--mb 1000] [--corpus DIR] [--keep]

Generates the corpus (benchmarks/gen_corpus.py) unless --corpus is given,
runs `wc -l` and `ranktrace ingest` on it in this run, and prints MB/s,
lines/s and peak RSS of the ingest process (its whole process tree).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def corpus_files(d: Path) -> list[Path]:
    return sorted(p for p in d.rglob("*") if p.is_file())


def timed(cmd: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (KiB) of the child tree, stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return dt, max(rss, before), p.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=1000)
    ap.add_argument("--corpus", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep the generated corpus and store")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ranktrace-bench-"))
    try:
        corpus = args.corpus
        if corpus is None:
            corpus = work / "corpus"
            subprocess.run([sys.executable, str(HERE / "gen_corpus.py"), str(corpus), "--mb", str(args.mb)],
                           check=True)
        files = corpus_files(corpus)
        size = sum(p.stat().st_size for p in files)
        wc_s, _, wc_out = timed(["wc", "-l", *map(str, files)])
        lines = int(wc_out.strip().splitlines()[-1].split()[0])
        db = work / "bench.duckdb"
        exe = shutil.which("ranktrace") or str(Path(sys.executable).parent / "ranktrace")
        ing_s, rss_kib, _ = timed([exe, "ingest", str(corpus), "--db", str(db), "-q"])
        print(f"corpus      {len(files)} files, {size / 1e6:,.0f} MB, {lines:,} lines")
        print(f"wc -l       {wc_s:7.2f} s  {size / 1e6 / wc_s:8.1f} MB/s  {lines / wc_s:12,.0f} lines/s")
        print(f"ingest      {ing_s:7.2f} s  {size / 1e6 / ing_s:8.1f} MB/s  {lines / ing_s:12,.0f} lines/s  "
              f"peak RSS {rss_kib / 1024:,.0f} MiB  store {db.stat().st_size / 1e6:,.0f} MB")
        print(f"machine     {os.cpu_count()} cores")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
