"""Helpers shared by the test suites (a unique module name: several
conftest.py files exist under tests/, so `from conftest import` is ambiguous)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from ranktrace.store import connect as store_connect

REPO = Path(__file__).resolve().parent.parent
SHAPES = Path(os.environ.get("RANKTRACE_SHAPES", REPO.parent / "shared" / "real_log_shapes"))


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# ---------------------------------------------------------------- parts (ingest --part, merge)

def split_by_host(bundle: Path, db: str, out: Path, groups: list[list[str]]) -> list[Path]:
    """Copy the bundle's files into one directory per group of hosts
    (out/<i>/<bundle name>/...), each file to the group of the host its
    path names (files.host in the store `db`, a direct ingest of it); files
    of no host (the controller's, the job's output, the answers) to the
    first group. The display paths stay those of the bundle; modification
    times are kept (year-less logs take theirs as a fallback)."""
    import shutil

    import duckdb
    con = store_connect(db)
    host_of = dict(con.execute("SELECT path, host FROM files").fetchall())
    con.close()
    group_of = {h: i for i, g in enumerate(groups) for h in g}
    dirs = [out / str(i) / bundle.name for i in range(len(groups))]
    for f in sorted(p for p in bundle.rglob("*") if p.is_file()):
        rel = f.relative_to(bundle)
        dest = dirs[group_of.get(host_of.get(f"{bundle.name}/{rel}"), 0)] / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, dest)
    return dirs


def store_differences(a_db: str, b_db: str, ignored: dict[str, set[str]]) -> dict[str, tuple[int, int, int, int]]:
    """The tables and views of two stores that differ: (rows in a, rows in
    b, a EXCEPT ALL b, b EXCEPT ALL a), leaving out the `ignored` columns of a
    table (and tables lines_files, fact_files: where each store keeps its parts' files); a
    table in one store only is (-1, -1, -1, -1). Empty: the stores are equal.
    Each store's relations are first copied out through a connection of its
    own (its views read its own lines files, by paths relative to it: two
    stores cannot be attached to one connection)."""
    import tempfile

    import duckdb
    with tempfile.TemporaryDirectory(prefix="rt-store-diff-") as tmp:
        rels = [_dump_relations(db, Path(tmp) / s) for s, db in (("a", a_db), ("b", b_db))]
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
        con.execute("SET enable_progress_bar = false")
        ta, tb = set(rels[0]), set(rels[1])
        out = {t: (-1, -1, -1, -1) for t in ta ^ tb}
        for t in sorted(ta & tb):
            cols = [c for c in rels[0][t] if c not in ignored.get(t, ())]
            sel = ", ".join(f'"{c}"' for c in cols)
            src = {s: f"read_parquet('{tmp}/{s}/{t}.parquet')" for s in ("a", "b")}
            n = [con.execute(f"SELECT count(*) FROM {src[s]}").fetchone()[0] for s in ("a", "b")]
            d = [con.execute(f"SELECT count(*) FROM (SELECT {sel} FROM {src[x]} EXCEPT ALL SELECT {sel} FROM {src[y]})"
                             ).fetchone()[0] for x, y in (("a", "b"), ("b", "a"))]
            if n[0] != n[1] or any(d):
                out[t] = (*n, *d)
        con.close()
    return out


def _dump_relations(db: str, out: Path) -> dict[str, list[str]]:
    """Every table and view of store `db` (but lines_files and fact_files: where it keeps its parts' files)
    as out/<name>.parquet; their columns."""
    out.mkdir(parents=True)
    con = store_connect(db)
    con.execute("SET enable_progress_bar = false")
    cols: dict[str, list[str]] = {}
    for (t,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                            "AND table_name NOT IN ('lines_files', 'fact_files') ORDER BY 1").fetchall():
        cols[t] = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                             "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
                                             [t]).fetchall()]
        con.execute(f"COPY (SELECT * FROM \"{t}\") TO '{out}/{t}.parquet' (FORMAT parquet)")
    con.close()
    return cols


def halved_copy(db: str, dst: str):
    """A writable copy of store `db` at `dst` whose view event_lines holds half of its lines (table
    kept_lines: the lines are the parts' files, so the view is pointed elsewhere; what the ingest
    stored beside them stays): a store whose stored summaries no longer hold."""
    import shutil
    shutil.copytree(db, dst)
    con = store_connect(dst, read_only=False)
    con.execute("CREATE TABLE kept_lines AS SELECT * FROM event_lines WHERE line % 2 <> 0")
    con.execute("CREATE OR REPLACE VIEW event_lines AS SELECT * FROM kept_lines")
    return con


# ---------------------------------------------------------------- echoes

def echoes_oracle_sql(table: str = "echoes_oracle") -> str:
    """queries/store/echoes.sql without its prechecks (the definition they must agree with): every
    (rank, message) seen in two files, whenever their lines were written."""
    from ranktrace.correlate.util import sql_file
    text = sql_file("store/echoes.sql")
    tail = text[text.index("\ng AS (") + 1:]
    return (f"CREATE OR REPLACE TABLE {table} AS\nWITH multi AS (\n"
            "    SELECT rank, message FROM events WHERE rank IS NOT NULL AND message IS NOT NULL AND message <> ''\n"
            "    GROUP BY rank, message HAVING count(DISTINCT file_id) > 1\n),\n" + tail)


# ---------------------------------------------------------------- a sample bundle, aligned

def aligned(db: Path):
    """A connection to the store `db` (a sample incident's: sample_diagnosis), its kind catalogue loaded
    and aligned (clock.align): what diagnose reads before its detectors. Read-only: its own temp tables."""
    from ranktrace.correlate.clock import align
    from ranktrace.correlate.util import ensure_kind_catalog
    c = store_connect(db)
    ensure_kind_catalog(c)
    align(c)
    return c


# ---------------------------------------------------------------- the sample incidents, diagnosed once a run

SAMPLE_NOT_LOGS = {"truth.json", "expected_verdict.json", "README.md", "manifest.json"}


def run_dir(tmp_path_factory) -> Path:
    """A directory every pytest-xdist worker of this run shares (the run's base temp; a worker's own is
    one level down)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def sample_files(bundle: Path) -> list[str]:
    """The log files of a sample incident, relative to its parent (its answers left out): what a user
    ingests with `ranktrace ingest bundle/` from sample_logs/."""
    return sorted(str(f.relative_to(bundle.parent)) for f in bundle.rglob("*")
                  if f.is_file() and f.name not in SAMPLE_NOT_LOGS and not f.name.startswith("."))


def ingest_sample(bundle: Path, db: Path, catalog) -> Path:
    """A store of the bundle's log files (sample_files), ingested as a user in its parent directory does:
    the store's paths do not depend on where the checkout is."""
    from ranktrace.ingest.pipeline import ingest
    cwd = os.getcwd()
    os.chdir(bundle.parent)
    try:
        ingest(sample_files(bundle), str(db), catalog, warn=lambda m: None)
    finally:
        os.chdir(cwd)
    return db


def diagnosed_sample(bundle: Path, root: Path, catalog) -> tuple[Path, dict]:
    """(store, diagnosis) of a sample incident, made by whichever process of the run asks first (the
    others wait on its lock, then read what it left): the report, export and verdict tests read the
    same ~5 CPU-s of each bundle. The store is the tests' to read only."""
    import fcntl
    import pickle

    from ranktrace.correlate import diagnose
    out = root / "sample-diagnoses" / bundle.name
    out.parent.mkdir(parents=True, exist_ok=True)
    db, doc = out / "store", out / "diagnosis.pickle"
    with open(out.parent / f"{bundle.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not doc.exists():
            shutil.rmtree(out, ignore_errors=True)   # (a process that died half-way)
            out.mkdir()
            ingest_sample(bundle, db, catalog)
            con = store_connect(db)
            try:
                made = diagnose(con)
            finally:
                con.close()
            (out / "diagnosis.tmp").write_bytes(pickle.dumps(made))
            (out / "diagnosis.tmp").rename(doc)
    return db, pickle.loads(doc.read_bytes())
