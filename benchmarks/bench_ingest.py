"""Ingest throughput and peak memory, beside `wc -l` and lnav on the same files.

    python benchmarks/bench_ingest.py [--mb 1000] [--corpus DIR] [--keep]

Generates the corpus (benchmarks/gen_corpus.py) unless --corpus is given,
then in this one run: `wc -l` on its files (twice: the first run only puts
them in the page cache, for all three), lnav indexing them headless (after a
first start on one line, which writes lnav's config files), and
`ranktrace ingest` as users run it (the CLI, in a subprocess). Prints MB/s,
lines/s and peak RSS of each, and ingest's as ratios to lnav's and wc's.
benchmarks/run_all.py runs this at several sizes with the readers' benchmark.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

import measure

HERE = Path(__file__).resolve().parent


def corpus_files(d: Path) -> list[Path]:
    return sorted(p for p in d.rglob("*") if p.is_file())


def generate(out: Path, mb: float, seed: int = 7) -> None:
    """The corpus of `mb` and `seed` in `out`; one made by the same generator
    with the same arguments is reused (run_all --work DIR --keep, twice)."""
    stamp = out.with_name(out.name + ".corpus.json")   # beside it: the corpus holds only logs
    want = {"mb": mb, "seed": seed, "generator": hashlib.sha256((HERE / "gen_corpus.py").read_bytes()).hexdigest()}
    if out.is_dir() and stamp.exists() and json.loads(stamp.read_text()) == want:
        return
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([sys.executable, str(HERE / "gen_corpus.py"), str(out), "--mb", str(mb), "--seed", str(seed)],
                   check=True, stdout=subprocess.DEVNULL)
    stamp.write_text(json.dumps(want))


def ranktrace_exe() -> str:
    """The console script next to this interpreter (the venv's), else PATH's."""
    here = Path(sys.executable).parent / "ranktrace"
    return str(here) if here.exists() else (shutil.which("ranktrace") or sys.exit(
        "benchmark: no `ranktrace` console script next to this Python or on PATH; "
        "install the project (pip install -e .) into this interpreter's environment"))


# The installed ranktrace's own answer: is its bundled catalog the build's
# precomputed one (ranktrace.formats.precomputed)? An editable install whose
# formats or loader changed since `pip install -e .` loads and checks the
# catalog on every command instead, ~1 s that users of a built ranktrace never wait.
_CATALOG_CHECK = ("from ranktrace.formats import format_dirs, precomputed; "
                  "print(precomputed(format_dirs()[0]) is not None)")


def catalog_precomputed() -> bool:
    exe = Path(ranktrace_exe()).resolve().parent / "python"
    py = str(exe) if exe.exists() else sys.executable
    env = {k: v for k, v in os.environ.items() if k != "RANKTRACE_FORMATS"}
    got = subprocess.run([py, "-c", _CATALOG_CHECK], capture_output=True, text=True, env=env)
    return got.stdout.strip() == "True"


def warn_if_catalog_stale() -> bool:
    """Say so on stderr when the figures would include loading the catalog; the answer goes in the results."""
    ok = catalog_precomputed()
    if not ok:
        print("benchmark: WARNING: the installed ranktrace loads and checks its bundled catalog on every "
              "command (~1 s each: its precomputed catalog is missing or stale, as in an editable install "
              "edited since `pip install -e .`); run `pip install -e .` again for figures users would see",
              file=sys.stderr)
    return ok


def dir_bytes(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def _rate(size: int, lines: int, r: measure.Run) -> dict:
    return {"s": r.wall_s, "cpu_s": r.cpu_s, "mb_s": size / 1e6 / r.wall_s, "lines_s": lines / r.wall_s,
            "peak_rss_mib": r.peak_rss_mib, "peak_tree_rss_mib": r.peak_tree_rss_mib, "load_1m": r.load_1m}


def bench_ingest(corpus: Path, store_dir: Path, lnav: str) -> dict:
    """wc -l, lnav and `ranktrace ingest` on the files of corpus, in this order;
    the store is store_dir (a store is a directory, so
    its size is the store's, whatever files the store keeps beside it)."""
    files = corpus_files(corpus)
    size = sum(p.stat().st_size for p in files)
    wc_cmd = ["wc", "-l", *map(str, files)]
    measure.run(wc_cmd).check()                       # page cache, for all three
    wc = measure.run(wc_cmd).check()
    lines = int(wc.stdout.strip().splitlines()[-1].split()[0])
    home = store_dir.parent / f"lnav-home-{store_dir.name}"
    home.mkdir(parents=True, exist_ok=True)
    (home / "warm-up.log").write_text("warm-up\n")
    measure.lnav_index(lnav, [home / "warm-up.log"], home)   # lnav's first start writes its config files
    ln, ln_files, ln_lines = measure.lnav_index(lnav, files, home)
    # a fresh store: ingest skips the files a kept store holds already (run_all --keep, twice)
    shutil.rmtree(store_dir, ignore_errors=True)
    store_dir.parent.mkdir(parents=True, exist_ok=True)
    db = store_dir    # a store is a directory
    ing = measure.run([ranktrace_exe(), "ingest", str(corpus), "--db", str(db), "-q"]).check()
    from ranktrace.store import connect
    con = connect(db)
    rt_files, rt_lines, events = con.execute(
        "SELECT count(*), sum(lines_read), (SELECT count(*) FROM events) FROM files").fetchone()
    con.close()
    store = dir_bytes(store_dir)
    res = {
        "corpus": {"files": len(files), "bytes": size, "mb": size / 1e6, "lines": lines},
        "wc": {**_rate(size, lines, wc), "lines": lines},
        "lnav": {**_rate(size, lines, ln), "files": ln_files, "lines": ln_lines},
        "ingest": {**_rate(size, lines, ing), "files": rt_files, "lines": int(rt_lines or 0), "events": events,
                   "store_bytes": store},
    }
    i, n, w = res["ingest"], res["lnav"], res["wc"]
    res["ratios"] = {
        "ingest_mb_s_vs_lnav": i["mb_s"] / n["mb_s"],
        "ingest_mb_s_vs_wc": i["mb_s"] / w["mb_s"],
        # CPU-s for the same bytes (issue 29's "CPU per GB <= 2x lnav's"): what a loaded machine's wall hides
        "ingest_cpu_vs_lnav": i["cpu_s"] / n["cpu_s"],
        "ingest_rss_vs_lnav": i["peak_rss_mib"] / n["peak_rss_mib"],
        "store_vs_input": store / size,
    }
    return res


def print_one(res: dict) -> None:
    c = res["corpus"]
    print(f"corpus      {c['files']} files, {c['mb']:,.0f} MB, {c['lines']:,} lines")
    for name in ("wc", "lnav", "ingest"):
        r = res[name]
        print(f"{name:10s}  {r['s']:7.2f} s  {r['mb_s']:8.1f} MB/s  {r['lines_s']:12,.0f} lines/s  "
              f"{r['cpu_s']:6.2f} CPU-s ({r['cpu_s'] / (c['bytes'] / 1e9):5.2f} per GB)  "
              f"peak RSS {r['peak_rss_mib']:,.0f} MiB  lines {r['lines']:,}")
    print(f"store       {res['ingest']['store_bytes'] / 1e6:,.0f} MB ({res['ratios']['store_vs_input']:.2f} x input)")
    print("ratios      " + "  ".join(f"{k} {v:.3f}" for k, v in res["ratios"].items()))
    print(f"machine     {os.cpu_count()} cores")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=1000)
    ap.add_argument("--corpus", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep the generated corpus and store")
    args = ap.parse_args()
    lnav = measure.ensure_tool("lnav", "lnav", "the peer of ingest, measured in the same run")
    warn_if_catalog_stale()
    work = Path(tempfile.mkdtemp(prefix="ranktrace-bench-"))
    try:
        corpus = args.corpus
        if corpus is None:
            corpus = work / "corpus"
            generate(corpus, args.mb)
        print_one(bench_ingest(corpus, work / "store", lnav))
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
