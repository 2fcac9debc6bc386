"""The JSON verdict of `ranktrace diagnose` for many stores, to prove that a change to the
correlator leaves every verdict as it was.

    python benchmarks/verdicts.py OUT_DIR [--stores DIR] [--big STORE.duckdb ...]
    diff -r BEFORE_DIR AFTER_DIR        # nothing printed: the same verdicts

Stores are made once under --stores (default /tmp/rt-verdict-stores; kept, reused) from
sample_logs/*/ (one store per bundle, ingested from sample_logs/ as the tests do),
tests/correlate/heldout/*.log and ../shared/real_log_shapes/* (one store per file). Each
store's verdict (diagnose + fold_echoes, as the CLI prints it with --format json) goes to
OUT_DIR/<name>.json; --big adds already ingested stores (the 1 GB benchmark store).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# beside the checkout (/work/main -> /work/shared), or two levels up from a worktree (/work/wt/NAME)
SHAPES = Path(os.environ.get("RANKTRACE_SHAPES") or next(
    (str(p / "shared" / "real_log_shapes") for p in (REPO.parent, REPO.parent.parent)
     if (p / "shared" / "real_log_shapes").is_dir()), REPO.parent / "shared" / "real_log_shapes"))
TRUTH_FILES = {"truth.json", "expected_verdict.json", "README.md", "heldout.json", "manifest.json"}


def inputs() -> list[tuple[str, Path, list[str]]]:
    """(name, directory to ingest from, files relative to it)."""
    out = []
    for b in sorted((REPO / "sample_logs").iterdir()):
        if b.is_dir():
            files = sorted(str(p.relative_to(b.parent)) for p in b.rglob("*")
                           if p.is_file() and p.name not in TRUTH_FILES)
            out.append((f"sample-{b.name}", b.parent, files))
    for d, tag in ((REPO / "tests" / "correlate" / "heldout", "heldout"), (SHAPES, "shape")):
        if d.is_dir():
            for p in sorted(d.iterdir()):
                if p.is_file() and p.name not in TRUTH_FILES and not p.name.endswith(".json"):
                    out.append((f"{tag}-{p.name}", d, [p.name]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--stores", type=Path, default=Path("/tmp/rt-verdict-stores"))
    ap.add_argument("--big", type=Path, action="append", default=[])
    args = ap.parse_args()
    from ranktrace.correlate import diagnose
    from ranktrace.formats import load_catalog
    from ranktrace.ingest.pipeline import ingest
    from ranktrace.report.verdict import fold_echoes
    from ranktrace.store import open_readonly
    args.out.mkdir(parents=True, exist_ok=True)
    args.stores.mkdir(parents=True, exist_ok=True)
    catalog = None
    todo = [(n, None, d, f) for n, d, f in inputs()] + [(p.stem, p, None, None) for p in args.big]
    for name, db, d, files in todo:
        if db is None:
            db = args.stores / f"{name}.duckdb"
            if not db.exists():
                catalog = catalog or load_catalog(check_samples=False)
                cwd = os.getcwd()
                os.chdir(d)
                try:
                    ingest(files, str(db), catalog)
                finally:
                    os.chdir(cwd)
        con = open_readonly(str(db))
        try:
            doc = fold_echoes(con, diagnose(con))
        finally:
            con.close()
        (args.out / f"{name}.json").write_text(json.dumps(doc, indent=2, default=str, sort_keys=True) + "\n")
        print(f"{name}: {doc['verdict']['kind']} {doc['verdict']['confidence']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
