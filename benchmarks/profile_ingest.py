"""Where an ingest's CPU seconds go: the scan (the engine's parse and its Parquet writes) apart from
the end of ingest (merge: the store's tables, year inference, every summary), and each DuckDB
statement of that end timed.

    .venv/bin/python benchmarks/profile_ingest.py INPUT... --work DIR [--part-only | --merge-only]

1. `ranktrace ingest INPUT --part DIR/part` in a subprocess under GNU time: the parser threads (the
   engine, its lines written as Parquet, classes and facts as Parquet): CPU-s and peak RSS. A part is
   exactly what a plain ingest writes into its store before it merges it.
2. `merge` of that part into DIR/store, in this process: every DuckDB `execute` through a proxy
   connection, timed in process CPU (DuckDB's threads included: one statement runs at a time), each
   keyed by the function that ran it and the statement's first words; the steps of merge_into and
   refresh_summaries timed whole. Prints the steps, then the statements above --min CPU-s.

CPU-s, not wall: the machines are shared. The merge here links the part's files instead of finding
them in place: the same statements as a plain ingest's end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path


def timed(cmd: list[str], env=None) -> dict:
    """A command under GNU time: wall, CPU-s (user + sys), peak RSS (MiB)."""
    out = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", *cmd], capture_output=True, text=True, env=env)
    if out.returncode:
        sys.exit(f"{cmd}: failed\n{out.stderr[-2000:]}")
    wall, user, sys_, rss = out.stderr.strip().splitlines()[-1].split()
    return {"wall": float(wall), "user": float(user), "sys": float(sys_), "cpu": float(user) + float(sys_),
            "rss_mib": int(rss) / 1024}


class Timer:
    def __init__(self):
        self.stmts: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
        self.steps: list[tuple[int, str, float, float]] = []
        self.depth = 0

    def step(self, name: str, fn):
        def run(*a, **k):
            c, w = time.process_time(), time.perf_counter()
            self.depth += 1
            try:
                return fn(*a, **k)
            finally:
                self.depth -= 1
                self.steps.append((self.depth, name, time.process_time() - c, time.perf_counter() - w))
        return run


def _label(sql: str) -> str:
    m = re.search(r"--\s*name:\s*(\S+)", sql)
    if m:
        return m.group(1) + ".sql"
    text = " ".join(line for line in sql.splitlines() if not line.strip().startswith("--"))
    return re.sub(r"\s+", " ", text).strip()[:90]


class Proxy:
    """A DuckDB connection whose execute/executemany are timed (the rest passes through)."""

    def __init__(self, con, timer: Timer):
        object.__setattr__(self, "_con", con)
        object.__setattr__(self, "_timer", timer)
        con.execute("SET python_scan_all_frames = true")   # (replacement scans: the caller's frame is not ours)

    def __getattr__(self, name):
        return getattr(self._con, name)

    def _timed(self, name, sql, *a, **k):
        caller = sys._getframe(2)
        where = f"{Path(caller.f_code.co_filename).stem}.{caller.f_code.co_name}"
        c, w = time.process_time(), time.perf_counter()
        try:
            getattr(self._con, name)(sql, *a, **k)
        finally:
            s = self._timer.stmts[(where, _label(str(sql)))]
            s[0] += time.process_time() - c
            s[1] += time.perf_counter() - w
            s[2] += 1
        return self

    def execute(self, sql, *a, **k):
        return self._timed("execute", sql, *a, **k)

    def executemany(self, sql, *a, **k):
        return self._timed("executemany", sql, *a, **k)

    def sql(self, sql, *a, **k):
        caller = sys._getframe(1)
        where = f"{Path(caller.f_code.co_filename).stem}.{caller.f_code.co_name}"
        return RelProxy(self._con.sql(sql, *a, **k), self._timer.stmts[(where, _label(str(sql)))])

    # execute returns the connection: its results are read through the proxy
    def fetchall(self):
        return self._con.fetchall()

    def fetchone(self):
        return self._con.fetchone()

    @property
    def description(self):
        return self._con.description

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._con.close()


class RelProxy:
    """A relation of con.sql(): it runs when read (to_arrow_table, fetchall, ...), timed then."""

    def __init__(self, rel, slot):
        self._rel, self._slot = rel, slot

    def __getattr__(self, name):
        f = getattr(self._rel, name)
        if not callable(f):
            return f

        def run(*a, **k):
            c, w = time.process_time(), time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                self._slot[0] += time.process_time() - c
                self._slot[1] += time.perf_counter() - w
                self._slot[2] += 1
        return run


def merge_profiled(part: Path, db: Path, top: int, min_cpu: float) -> dict:
    from ranktrace import merge, store
    from ranktrace.formats import load_catalog
    timer = Timer()
    real_open = store.open_store
    store.open_store = lambda *a, **k: Proxy(real_open(*a, **k), timer)
    for mod, names in ((merge, ("_merge_parts",)),
                       (store, ("imply_ranks", "infer_years", "refresh_summaries", "store_clock_offsets",
                                "store_attempts"))):
        for n in names:
            setattr(mod, n, timer.step(n, getattr(mod, n)))
    from ranktrace.correlate import attempts, clock, identity
    for mod, n in ((clock, "estimate_offsets"), (clock, "store_line_sets"), (identity, "store_groups"),
                   (identity, "build_identity"), (attempts, "store_attempts"), (attempts, "collect"),
                   (attempts, "apply"), (attempts, "line_outcomes"), (identity, "regroup"), (attempts, "find_attempts"),
                   (clock, "anchor_rows"), (clock, "_hot_events")):
        setattr(mod, n, timer.step(f"{mod.__name__.rsplit('.', 1)[1]}.{n}", getattr(mod, n)))
    cat = load_catalog([], check_samples="drop")
    c, w = time.process_time(), time.perf_counter()
    merge.merge([str(part)], str(db), cat)
    total = (time.process_time() - c, time.perf_counter() - w)
    print(f"\nmerge (end of ingest): {total[0]:.1f} CPU-s, {total[1]:.1f} s wall")
    print("steps (CPU-s, wall s; nested steps indented, inside their parent's figure):")
    for depth, name, cpu, wall in sorted(timer.steps, key=lambda s: -s[2]):
        if cpu >= min_cpu:
            print(f"  {'  ' * depth}{name:40s} {cpu:7.2f} {wall:7.2f}")
    print(f"statements >= {min_cpu} CPU-s (CPU-s, wall s, count, where, what):")
    stmts = sorted(timer.stmts.items(), key=lambda kv: -kv[1][0])
    for (where, what), (cpu, wall, n) in stmts[:top]:
        if cpu >= min_cpu:
            print(f"  {cpu:7.2f} {wall:7.2f} {n:5d}  {where:36s} {what}")
    rest = sum(v[0] for v in timer.stmts.values())
    print(f"  (all statements: {rest:.1f} CPU-s; Python and fetches: {total[0] - rest:.1f})")
    return {"merge_cpu": total[0], "merge_wall": total[1],
            "statements": [{"where": k[0], "what": k[1], "cpu": v[0], "wall": v[1], "n": v[2]} for k, v in stmts],
            "steps": [{"depth": d, "name": n, "cpu": c, "wall": w} for d, n, c, w in timer.steps]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--work", required=True, help="a directory for the part and the store (emptied)")
    ap.add_argument("--part-only", action="store_true")
    ap.add_argument("--merge-only", action="store_true", help="merge the part left in --work by an earlier run")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--min", type=float, default=0.1, dest="min_cpu")
    ap.add_argument("--json", help="write the figures here too")
    a = ap.parse_args()
    work = Path(a.work)
    part, db = work / "part", work / "store"
    out: dict = {}
    if not a.merge_only:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        exe = Path(sys.executable).parent / "ranktrace"
        r = timed([str(exe), "ingest", *a.inputs, "--part", str(part)])
        size = sum(f.stat().st_size for i in a.inputs for f in ([Path(i)] if Path(i).is_file() else Path(i).rglob("*"))
                   if f.is_file())
        print(f"scan (ingest --part): {r['cpu']:.1f} CPU-s ({r['user']:.1f} + {r['sys']:.1f}), {r['wall']:.1f} s "
              f"wall, {r['rss_mib']:.0f} MiB; {size / 1e9:.3f} GB in: {r['cpu'] / (size / 1e9):.1f} CPU-s/GB")
        out["scan"] = r
        out["bytes"] = size
    if not a.part_only:
        shutil.rmtree(db, ignore_errors=True)
        out.update(merge_profiled(part, db, a.top, a.min_cpu))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    os.environ.setdefault("RANKTRACE_NO_PROGRESS", "1")
    main()
