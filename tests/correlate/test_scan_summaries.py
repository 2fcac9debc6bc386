"""The summaries' per-line text tests are decided by the engine as it parses (columns step, says_step,
nranks, teardown of the lines: crates/engine/src/summary.rs). On every sample bundle and every real
log shape, each line's columns are what the SQL that computed them before gave (queries/align/
event_groups.sql and anchors.sql, verbatim with their prefilters, but the mark 'summary', which was only
a prefilter of these tests and is gone with them), and what ranktrace.store's
SQL for hand-made stores (SCAN_SUMMARIES) gives. So are the training positions the engine writes beside
them from each line's progress facts (progress_lo, progress_hi): what SQL over fact table progress gives
(store.progress_positions)."""

from __future__ import annotations

import pytest

from ranktrace.ingest.pipeline import ingest
from ranktrace.store import connect as store_connect, progress_positions, scan_summaries
from rt_testlib import SHAPES

from rt_testlib import sample_files as _files
from .test_sample_bundles import BUNDLES

# The expressions of event_groups.sql before the engine decided them (its CTEs c, m and e).
PROGRESS_KIND = "(kind = 'progress' OR (kind IS NULL AND severity IN ('info', 'debug', 'notice')))"
MAYBE_STEP = ("CASE WHEN (kind IS NULL OR kind = 'progress') "
              "AND (message ILIKE '%tep%' OR message ILIKE '%iter%') THEN true END")
OLD = {
    "step": (f"CASE WHEN ({MAYBE_STEP}) AND {PROGRESS_KIND} THEN TRY_CAST(regexp_extract(message, "
             r"'(?i)\b(?:global[_ ])?(?:step|iter|iteration)\s*[=:#]?\s*\[?(\d+)', 1) AS BIGINT) END"),
    "says_step": (f"coalesce(CASE WHEN ({MAYBE_STEP}) AND kind IS NULL THEN regexp_matches(message, "
                  r"'(?i)\b(?:step|iter|iteration)\s*[=:#]?\s*\d+') END, false)"),
    "nranks": ("CASE WHEN (message LIKE '%nranks %') "
               "AND (raw LIKE '%nranks %' OR raw LIKE '%gres/gpu%' OR raw LIKE '%nvidia.com/gpu%' OR raw LIKE '%world_size%' "
               "OR raw LIKE '%WORLD_SIZE%' OR raw LIKE '%PET_NNODES%' OR raw LIKE '%NumNodes=%' "
               "OR raw LIKE '%#SBATCH%' OR raw LIKE '%TresPerNode=%' OR raw LIKE '%local_ranks=[%') "
               r"THEN TRY_CAST(regexp_extract(message, '\bnranks (\d+)', 1) AS INTEGER) END"),
    "teardown": ("CASE WHEN (message LIKE '%failed (exitcode:%' "
                 "OR message LIKE '%closing signal SIGTERM%') THEN true ELSE false END"),
}
ENGINE = {"step": "step", "says_step": "coalesce(says_step, false)", "nranks": "nranks", "teardown": "teardown"}


def _inputs() -> list[tuple[str, list[str], str]]:
    """(name, files, the directory they are relative to): every sample bundle in one ingest, every real log
    shape in another. The columns are each line's own (its text and the class its file's format gave it), so
    one store of many files holds the same columns as a store per file, at one ingest's fixed cost (~3 CPU-s
    each: ~100 stores took 250 s of CI)."""
    out = [("sample_logs", [f for b in BUNDLES for f in _files(b)], str(BUNDLES[0].parent))] if BUNDLES else []
    if SHAPES.is_dir():
        out.append(("real_log_shapes", [p.name for p in sorted(SHAPES.iterdir()) if p.is_file() and p.suffix in (
            ".log", ".txt", ".out", ".gz", ".json") and p.name != "manifest.json"], str(SHAPES)))
    return out


def _mismatches(con) -> dict[str, list]:
    sql = scan_summaries("message", "kind", "severity")
    sql["says_step"] = f"coalesce({sql['says_step']}, false)"
    sql["teardown"] = f"coalesce({sql['teardown']}, false)"
    out = {}
    for col in ENGINE:
        q = (f"SELECT file, line, {ENGINE[col]} AS engine, {OLD[col]} AS old, {sql[col]} AS given FROM events "
             "WHERE engine IS DISTINCT FROM old OR engine IS DISTINCT FROM given LIMIT 5")
        got = con.execute(q).fetchall()
        if got:
            out[col] = got
    return out


def test_the_engine_decides_what_the_sql_did(tmp_path, catalog, monkeypatch):
    inputs = _inputs()
    assert inputs and all(len(files) >= 20 for _, files, _ in inputs), [(n, len(f)) for n, f, _ in inputs]
    seen = {c: 0 for c in (*ENGINE, "progress")}
    for name, files, where in inputs:
        db = str(tmp_path / f"{name}.store")
        monkeypatch.chdir(where)
        ingest(files, db, catalog)
        con = store_connect(db)
        try:
            assert _mismatches(con) == {}, name
            # every NCCL communicator line says its size (detectors/gpu.py reads them by column nranks)
            if con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'nccl_comm'").fetchone()[0]:
                assert con.execute("SELECT list(DISTINCT e.file) FROM nccl_comm f JOIN event_rows r USING (event_id) "
                                   "JOIN events e USING (event_id) WHERE r.nranks IS NULL").fetchone()[0] is None, name
            for c, n in zip(ENGINE, con.execute("SELECT count(step), count(says_step), count(nranks), "
                                                "count(*) FILTER (WHERE teardown) FROM event_rows").fetchone()):
                seen[c] += n
            # the training position of each line's progress facts (step_buckets.sql reads it instead of
            # joining the facts): what the SQL over fact table progress gives (store.progress_positions)
            pos = progress_positions(con, "r.event_id")
            assert con.execute(f"SELECT e.file, e.line, r.progress_lo, r.progress_hi FROM event_rows r "
                               f"JOIN events e USING (event_id) WHERE r.progress_lo IS DISTINCT FROM {pos['progress_lo']} "
                               f"OR r.progress_hi IS DISTINCT FROM {pos['progress_hi']} LIMIT 5").fetchall() == [], name
            seen["progress"] += con.execute("SELECT count(progress_lo) FROM event_rows").fetchone()[0]
        finally:
            con.close()
    # the columns are exercised (no bundle has a line of no kind that says a step: test_one_line has)
    assert seen["step"] and seen["nranks"] and seen["teardown"] and seen["progress"], seen


@pytest.mark.parametrize("message, kind, severity, want", [
    ("step 11 | loss 2.4098", "progress", "info", (11, None, None, False)),
    ("global_step=[42] lr 3e-4", None, "info", (42, None, None, False)),
    ("Iteration: 7 done", None, "info", (7, True, None, False)),
    ("step 9", None, "error", (None, True, None, False)),
    ("warmup_step 5", "progress", "info", (None, None, None, False)),
    ("step 99999999999999999999", "progress", "info", (None, None, None, False)),
    ("step\u00a05", "progress", "info", (None, None, None, False)),          # RE2's \s is ASCII
    ("ſtep 5", "progress", "info", (None, None, None, False)),               # RE2's \b is ASCII: no word starts at ſ
    ("x STEP=5", "progress", "info", (5, None, None, False)),
    ("comm 0x7f rank 3 nranks 16 cudaDev 3 busId 1b000", "nccl_init", "info", (None, None, 16, False)),
    ("nranks 4294967296", None, "info", (None, None, None, False)),
    ("failed (exitcode: 1) local_rank: 0 (pid: 7)", "worker_failed", "error", (None, None, None, True)),
    ("Sending process 7 closing signal SIGTERM", None, "warning", (None, None, None, True)),
])
def test_one_line(tmp_path, message, kind, severity, want):
    """The engine's columns of one line of a given class, against SCAN_SUMMARIES (the SQL of hand-made
    stores), through the engine's own test: crates/engine/src/summary.rs (cargo test) holds the same cases."""
    import duckdb
    sql = scan_summaries("m", "k", "s")
    got = duckdb.connect().execute(f"SELECT {', '.join(sql.values())} FROM (SELECT ? AS m, ? AS k, ? AS s)",
                                   [message, kind, severity]).fetchone()
    assert got == want
