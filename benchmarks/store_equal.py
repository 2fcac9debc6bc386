"""Two ranktrace versions' stores of the same logs, proven equal relation by relation.

    python benchmarks/store_equal.py OLD_PYTHON INPUT... [--work DIR]
    python benchmarks/store_equal.py OLD_PYTHON --stores OLD_STORE NEW_STORE

The second form compares two stores made already (e.g. of a long run, each ingested by its own
version: no second ingest), and `diagnose --format json` of OLD_STORE by OLD_PYTHON with NEW_STORE's
by this python.

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
# rows that differ by design: the schema version, the new store's year reference (the old
# store moved its lines' times instead: store.infer_years) and the stamps of the summaries it keeps (a hash of the SQL and code that made them: any change of
# either changes them; the summaries themselves are compared) and the marks' spec (marks.spec_json, kept since
# session 20: a store of an older version has none; the fingerprint row 'marks' is compared)
IGNORED_ROWS = {"meta": "key NOT IN ('schema_version', 'year_reference', 'marks_spec') AND NOT ends_with(key, '_stamp')"}
BOOKKEEPING = {"lines_files", "fact_files"}   # where the new store keeps its lines and facts files: nothing of the logs


def relations(con, tables_only: bool = False) -> dict[str, list[str]]:
    rels = {}
    # (with --tables-only, the fact tables a store keeps in its parts, views over them: store.PART_FACTS)
    kind = (" AND (table_type = 'BASE TABLE' OR table_name IN ("
            + ", ".join(repr(t) for t in store.PART_FACTS) + "))") if tables_only else ""
    for (t,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
                            f"{kind} ORDER BY 1").fetchall():
        rels[t] = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns WHERE "
                                             "table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
                                             [t]).fetchall()]
    return rels


def dump(con, rels: dict[str, list[str]], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    con.execute("SET enable_progress_bar = false")
    for t in rels:
        con.execute(f"COPY (SELECT * FROM \"{t}\") TO '{out}/{t}.parquet' (FORMAT parquet)")


def compare(old_db: Path, new_db: Path, tmp: Path, tables_only: bool = False, bits: dict[str, int] | None = None) -> list[str]:
    """`bits`: integer columns (of any relation) where the new version sets these bits on purpose (a new
    mark, parsers/marks.toml): the old store has none of them, the new one's without them equal the old
    one's; meta's row 'marks' (the marks file's fingerprint) is then left out too."""
    bits = bits or {}
    # (a store of the directory layout: its views read lines files relative to it)
    a = store.connect(old_db) if Path(old_db).is_dir() else duckdb.connect(str(old_db), read_only=True)
    a.execute("SET TimeZone = 'UTC'")
    ra = {t: c for t, c in relations(a, tables_only).items() if t not in BOOKKEEPING}
    dump(a, ra, tmp / "old")
    a.close()
    b = store.connect(new_db)
    b.execute("SET TimeZone = 'UTC'")
    rb = {t: c for t, c in relations(b, tables_only).items() if t not in BOOKKEEPING}
    dump(b, rb, tmp / "new")
    b.close()
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    diffs = [f"{t}: in the old store only" for t in sorted(set(ra) - set(rb))]
    diffs += [f"{t}: in the new store only" for t in sorted(set(rb) - set(ra))]
    for t in sorted(set(ra) & set(rb)):
        cols = [c for c in ra[t] if c in rb[t] and c not in IGNORED.get(t, ())]
        only = sorted((set(ra[t]) ^ set(rb[t])) - IGNORED.get(t, set()))
        sel = {"old": ", ".join(f'"{c}"' for c in cols),
               "new": ", ".join(f'("{c}" & {~bits[c]}) AS "{c}"' if c in bits else f'"{c}"' for c in cols)}
        where = [w for w in (IGNORED_ROWS.get(t), "key <> 'marks'" if t == "meta" and bits else None) if w]
        where = f" WHERE {' AND '.join(where)}" if where else ""
        src = {s: f"(SELECT * FROM read_parquet('{tmp}/{s}/{t}.parquet'){where})" for s in ("old", "new")}
        n = [con.execute(f"SELECT count(*) FROM {src[s]}").fetchone()[0] for s in ("old", "new")]
        d = [con.execute(f"SELECT count(*) FROM (SELECT {sel[x]} FROM {src[x]} EXCEPT ALL SELECT {sel[y]} FROM {src[y]})"
                         ).fetchone()[0] for x, y in (("old", "new"), ("new", "old"))]
        if n[0] != n[1] or any(d):
            diffs.append(f"{t}: rows {n[0]} / {n[1]}, old-new {d[0]}, new-old {d[1]}")
        for c in (c for c in cols if c in bits):
            had = con.execute(f'SELECT count(*) FROM {src["old"]} WHERE "{c}" & {bits[c]} <> 0').fetchone()[0]
            if had:
                diffs.append(f"{t}: {had} rows of the old store set bits {bits[c]} of {c}")
        if only:
            diffs.append(f"{t}: columns in one store only (not compared): {only}")
    con.close()
    return diffs


def compare_stores(old_python: str, old: Path, new: Path, work: Path | None, tables_only: bool,
                   bits: dict[str, int] | None = None) -> int:
    """Two stores made already: every relation (every table only: what an end of ingest writes, when
    both stores were merged from the same part, whose lines they share), and each version's
    `diagnose --format json` of its own. (Every view of a 15 M-line store dumped took 15 GB.)"""
    with tempfile.TemporaryDirectory(prefix="rt-store-equal-") as t:
        diffs = compare(old, new, (work or Path(t)) / "dump", tables_only, bits)
        verdicts = [subprocess.run([py, "-m", "ranktrace.cli", "diagnose", "--db", str(db), "--format", "json"],
                                   capture_output=True).stdout for py, db in ((old_python, old), (sys.executable, new))]
    real = [x for x in diffs if "not compared" not in x]
    if verdicts[0] != verdicts[1]:
        real.append("diagnose --format json differs")
    if not verdicts[0]:
        real.append("the old version gave no verdict")
    print(f"{'EQUAL' if not real else 'DIFFERENT'}  {old} / {new}" + "".join(f"\n    {x}" for x in real + [
        x for x in diffs if x not in real]))
    return 1 if real else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old_python")
    ap.add_argument("inputs", nargs="*")
    ap.add_argument("--work", type=Path)
    ap.add_argument("--stores", nargs=2, type=Path, metavar=("OLD_STORE", "NEW_STORE"))
    ap.add_argument("--tables-only", action="store_true", help="with --stores: the DuckDB tables, not the views")
    ap.add_argument("--bits", default="", help="COL=MASK,...: bits of integer columns the new version sets on "
                    "purpose (a new mark): none in the old store, the rest compared")
    args = ap.parse_args()
    bits = {c: int(m, 0) for c, m in (x.split("=") for x in args.bits.split(",") if x)}
    if args.stores:
        return compare_stores(args.old_python, *args.stores, args.work, args.tables_only, bits)
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
            diffs = compare(old, new, d / "dump", bits=bits)
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
