"""Where `diagnose`'s CPU seconds go: every DuckDB statement timed (process CPU, DuckDB's threads
included: one statement runs at a time), keyed by the correlator function that ran it (the first
frame outside the small helpers rows / query / table_exists) and the statement's name (a SQL file's
`-- name:`) or first words; the main steps timed whole; cProfile's top functions on request.

    .venv/bin/python benchmarks/profile_diagnose.py STORE [--top 40] [--min 0.05] [--cprofile N] [--json F]

STORE is a store directory or its ranktrace.duckdb. The diagnosis is the CLI's (read-only store,
`fold_echoes` after), without its start-up. CPU-s, not wall: the machines are shared.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_ingest import Proxy, RelProxy, Timer, _label  # noqa: E402

HELPERS = {"rows", "query", "table_exists", "columns", "has_columns", "_run", "_timed", "sql", "kept_rows",
           "run", "execute", "fetchone", "fetchall"}


def _where(depth: int = 3) -> str:
    f = sys._getframe(depth)
    while f is not None and (f.f_code.co_name in HELPERS or f.f_code.co_filename.endswith("profile_ingest.py")):
        f = f.f_back
    if f is None:
        return "?"
    return f"{Path(f.f_code.co_filename).stem}.{f.f_code.co_name}"


class DiagProxy(Proxy):
    def _timed(self, name, sql, *a, **k):
        where = _where()
        c, w = time.process_time(), time.perf_counter()
        try:
            getattr(self._con, name)(sql, *a, **k)
        finally:
            s = self._timer.stmts[(where, _label(str(sql)))]
            object.__setattr__(self, "_last", s)
            s[0] += time.process_time() - c
            s[1] += time.perf_counter() - w
            s[2] += 1
        return self

    def fetchall(self):
        c, w = time.process_time(), time.perf_counter()
        out = self._con.fetchall()
        if self._last is not None:   # fetching is part of the statement (and its rows are counted)
            self._last[0] += time.process_time() - c
            self._last[1] += time.perf_counter() - w
            self._timer.rows[id(self._last)] = self._timer.rows.get(id(self._last), 0) + len(out)
        return out

    def sql(self, sql, *a, **k):
        return RelProxy(self._con.sql(sql, *a, **k), self._timer.stmts[(_where(2), _label(str(sql)))])

    def cursor(self):
        cur = DiagProxy(self._con.cursor(), self._timer)
        object.__setattr__(cur, "_last", None)
        return cur


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--min", type=float, default=0.05, dest="min_cpu")
    ap.add_argument("--cprofile", type=int, default=0, help="also print cProfile's top N functions (cumulative)")
    ap.add_argument("--json", help="write the figures here too")
    a = ap.parse_args()
    from ranktrace.correlate import attempts, clock, identity, verdict
    from ranktrace.correlate import diagnose
    from ranktrace.report.verdict import fold_echoes
    from ranktrace.store import open_readonly
    timer = Timer()
    timer.rows = {}
    steps = ((clock, "align"), (attempts, "find_attempts"), (attempts, "collect"), (attempts, "apply"),
             (attempts, "scope"), (identity, "regroup"), (verdict, "diagnose_scope"))
    for mod, n in steps:
        setattr(mod, n, timer.step(f"{mod.__name__.rsplit('.', 1)[1]}.{n}", getattr(mod, n)))
    from ranktrace.correlate import detectors
    detectors.RULES = tuple(timer.step(f"rule.{r.__name__}", r) for r in detectors.RULES)
    for name in ("demote_survived", "_complete", "_cascade", "_failure_seen", "_controlplane", "_impact", "_gang",
                 "_topology", "_stranded", "_review_names", "no_failure_verdict", "coverage_caps",
                 "uncorroborated_port_errors", "ended_normally", "features"):
        if hasattr(verdict, name):
            setattr(verdict, name, timer.step(f"verdict.{name}", getattr(verdict, name)))
    store = Path(a.store)
    db = store / "ranktrace.duckdb" if store.is_dir() else store
    con = DiagProxy(open_readonly(str(db)), timer)
    object.__setattr__(con, "_last", None)
    prof = cProfile.Profile() if a.cprofile else None
    c, w = time.process_time(), time.perf_counter()
    if prof:
        prof.enable()
    d = fold_echoes(con, diagnose(con))
    if prof:
        prof.disable()
    total = (time.process_time() - c, time.perf_counter() - w)
    print(f"diagnose: {total[0]:.1f} CPU-s, {total[1]:.1f} s wall; verdict {d['verdict']['kind']} "
          f"rank {d['verdict']['rank']} host {d['verdict']['host']}")
    agg: dict[tuple, list] = defaultdict(lambda: [0.0, 0.0, 0])
    for depth, name, cpu, wall in timer.steps:
        s = agg[(depth, name)]
        s[0] += cpu
        s[1] += wall
        s[2] += 1
    print("steps (CPU-s, wall s, calls; nested steps indented, inside their parent's figure):")
    for (depth, name), (cpu, wall, n) in sorted(agg.items(), key=lambda kv: -kv[1][0]):
        if cpu >= a.min_cpu:
            print(f"  {'  ' * depth}{name:40s} {cpu:7.2f} {wall:7.2f} {n:4d}")
    print(f"statements >= {a.min_cpu} CPU-s (CPU-s, wall s, count, rows fetched, where, what; a statement's"
          " fetchall counted in it):")
    stmts = sorted(timer.stmts.items(), key=lambda kv: -kv[1][0])
    for (where, what), v in stmts[:a.top]:
        cpu, wall, n = v
        if cpu >= a.min_cpu:
            print(f"  {cpu:7.2f} {wall:7.2f} {n:5d} {timer.rows.get(id(v), 0):8d}  {where:36s} {what}")
    by_where: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for (where, _), (cpu, _, n) in timer.stmts.items():
        by_where[where][0] += cpu
        by_where[where][1] += n
    print("statements by function (CPU-s, count):")
    for where, (cpu, n) in sorted(by_where.items(), key=lambda kv: -kv[1][0])[:a.top]:
        if cpu >= a.min_cpu:
            print(f"  {cpu:7.2f} {n:5d}  {where}")
    rest = sum(v[0] for v in timer.stmts.values())
    n_all = sum(v[2] for v in timer.stmts.values())
    print(f"  (all {n_all} statements: {rest:.1f} CPU-s; Python and fetches: {total[0] - rest:.1f})")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(a.cprofile)
    if a.json:
        Path(a.json).write_text(json.dumps({
            "cpu": total[0], "wall": total[1],
            "statements": [{"where": k[0], "what": k[1], "cpu": v[0], "wall": v[1], "n": v[2]} for k, v in stmts],
            "steps": [{"depth": d_, "name": n, "cpu": c_, "wall": w_, "n": k}
                      for (d_, n), (c_, w_, k) in agg.items()]}, indent=1))


if __name__ == "__main__":
    main()
