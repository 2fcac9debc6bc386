"""Two ranktrace versions' stores of the same logs, proven equal relation by relation.

    python benchmarks/store_equal.py OLD_PYTHON INPUT... [--work DIR]

OLD_PYTHON is the python of another ranktrace install (e.g. a checkout of the
commit before a store change, with its own venv). Each INPUT (a bundle, a
file) is ingested by both versions, into stores of their own; then every
table and view a user can query in the old store (view events,
events_aligned, event_rows, event_lines, the fact tables, the summaries...)
is compared with the new store's of the same name, over the columns both
have: EXCEPT ALL both ways, and row counts. Columns that differ by design:
files.ingested_at (when), meta's schema_version and year_reference. `diagnose --format json` of both must be byte-identical.
Prints one line per input, and the differences; exits 1 if any.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

from ranktrace import store

IGNORED = {"files": {"ingested_at"}}
# rows that differ by design: the schema version, and the new store's year reference (the old
# store moved its lines' times instead: store.infer_years)
IGNORED_ROWS = {"meta": "key NOT IN ('schema_version', 'year_reference')"}
BOOKKEEPING = {"lines_files"}   # where the new store keeps its lines files: nothing of the logs


def relations(con) -> dict[str, list[str]]:
    rels = {}
    for (t,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                            "ORDER BY 1").fetchall():
        rels[t] = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns WHERE "
                                             "table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
                                             [t]).fetchall()]
    return rels


def dump(con, rels: dict[str, list[str]], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    con.execute("SET enable_progress_bar = false")
    for t in rels:
        con.execute(f"COPY (SELECT * FROM \"{t}\") TO '{out}/{t}.parquet' (FORMAT parquet)")


def compare(old_db: Path, new_db: Path, tmp: Path) -> list[str]:
    a = duckdb.connect(str(old_db), read_only=True)
    a.execute("SET TimeZone = 'UTC'")
    ra = relations(a)
    dump(a, ra, tmp / "old")
    a.close()
    b = store.connect(new_db)
    b.execute("SET TimeZone = 'UTC'")
    rb = {t: c for t, c in relations(b).items() if t not in BOOKKEEPING}
    dump(b, rb, tmp / "new")
    b.close()
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    diffs = [f"{t}: in the old store only" for t in sorted(set(ra) - set(rb))]
    diffs += [f"{t}: in the new store only" for t in sorted(set(rb) - set(ra))]
    for t in sorted(set(ra) & set(rb)):
        cols = [c for c in ra[t] if c in rb[t] and c not in IGNORED.get(t, ())]
        only = sorted((set(ra[t]) ^ set(rb[t])) - IGNORED.get(t, set()))
        sel = ", ".join(f'"{c}"' for c in cols)
        where = f" WHERE {IGNORED_ROWS[t]}" if t in IGNORED_ROWS else ""
        src = {s: f"(SELECT * FROM read_parquet('{tmp}/{s}/{t}.parquet'){where})" for s in ("old", "new")}
        n = [con.execute(f"SELECT count(*) FROM {src[s]}").fetchone()[0] for s in ("old", "new")]
        d = [con.execute(f"SELECT count(*) FROM (SELECT {sel} FROM {src[x]} EXCEPT ALL SELECT {sel} FROM {src[y]})"
                         ).fetchone()[0] for x, y in (("old", "new"), ("new", "old"))]
        if n[0] != n[1] or any(d):
            diffs.append(f"{t}: rows {n[0]} / {n[1]}, old-new {d[0]}, new-old {d[1]}")
        if only:
            diffs.append(f"{t}: columns in one store only (not compared): {only}")
    con.close()
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old_python")
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--work", type=Path)
    args = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="rt-store-equal-") as t:
        work = args.work or Path(t)
        for i, inp in enumerate(args.inputs):
            d = work / f"{i:03d}"
            d.mkdir(parents=True, exist_ok=True)
            old, new = d / "old.duckdb", d / "new.store"
            for py, db in ((args.old_python, old), (sys.executable, new)):
                subprocess.run([py, "-m", "ranktrace.cli", "ingest", inp, "--db", str(db), "-q"],
                               capture_output=True, text=True)
            verdicts = [subprocess.run([py, "-m", "ranktrace.cli", "diagnose", "--db", str(db), "--format", "json"],
                                       capture_output=True).stdout for py, db in ((args.old_python, old),
                                                                                  (sys.executable, new))]
            diffs = compare(old, new, d / "dump")
            only_cols = [x for x in diffs if "not compared" in x]
            real = [x for x in diffs if x not in only_cols]
            if verdicts[0] != verdicts[1]:
                real.append("diagnose --format json differs")
            if not verdicts[0]:
                real.append("the old version gave no verdict")
            print(f"{'EQUAL' if not real else 'DIFFERENT'}  {inp}" + "".join(f"\n    {x}" for x in real), flush=True)
            failed += bool(real)
            if i == 0 and only_cols:
                print("  by design (every input):" + "".join(f"\n    {x}" for x in only_cols))
    print(f"{len(args.inputs) - failed} of {len(args.inputs)} inputs EQUAL")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
