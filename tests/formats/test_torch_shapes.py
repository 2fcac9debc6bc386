"""The PyTorch family of formats against REAL output.

Two inputs, each ingested once into a temporary store through the library:
- the torch-related excerpts of shared/real_log_shapes (user-reported logs;
  skipped when that folder is not there),
- our own torch 2.13.0+cpu torchrun captures in tests/formats/data/torch
  (see its README.md and each run's truth.json).

What matters: lines are claimed (not left as raw), every '[rankN]:' line is
attributed to rank N, the watchdog / rendezvous / failure-summary facts are
extracted with the right values, and year-less glog times get a year.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb
import pytest

from ranktrace.formats import load_catalog
from ranktrace.ingest.pipeline import ingest
from ranktrace.store import connect as store_connect

HERE = Path(__file__).parent
CAPTURES = HERE / "data" / "torch"
SHAPES = Path(os.environ.get("RANKTRACE_REAL_LOG_SHAPES", "/work/shared/real_log_shapes"))
TORCH_SHAPES = ["013", "015", "019", "020", "021", "022", "027", "029", "031", "035", "037", "039", "040",
                "041", "046", "050", "052", "053", "055", "058", "059", "061", "096", "099", "104", "108",
                "109", "111"]
# Excerpts that end (or start) mid-token, or hold only non-torch noise, can
# not reach the overall bar on their own; each still has a floor.
PER_FILE_FLOOR = 0.55


MINE = ("torch_", "python_traceback", "python_logging", "training_progress", "deepspeed", "cpp_stack", "cuda", "ray")


@pytest.fixture(scope="module")
def catalog():
    # Another family's broken sample must not hide these results; ours must all load.
    cat = load_catalog(check_samples="drop")
    dropped = [w for w in cat.warnings if w.startswith("format ") and w.split()[1].startswith(MINE)]
    assert not dropped, dropped
    return cat


def _ingest(paths: list[Path], tmp_path_factory, catalog, name: str) -> duckdb.DuckDBPyConnection:
    db = tmp_path_factory.mktemp(name) / "store.duckdb"
    ingest([str(p) for p in paths], str(db), catalog)
    return store_connect(str(db))


@pytest.fixture(scope="module")
def shapes(tmp_path_factory, catalog):
    if not SHAPES.is_dir():
        pytest.skip(f"{SHAPES} not present")
    paths = sorted(p for n in TORCH_SHAPES for p in SHAPES.glob(f"{n}_*.log"))
    assert len(paths) == len(TORCH_SHAPES)
    con = _ingest(paths, tmp_path_factory, catalog, "shapes")
    yield con
    con.close()


@pytest.fixture(scope="module")
def captures(tmp_path_factory, catalog):
    # node logs as files, --log-dir trees as directories (path hints read the
    # part of the path the user named: 'attempt_0/3/stderr.log' needs the tree)
    paths = sorted(CAPTURES.glob("*/*.log")) + sorted(CAPTURES.glob("*/*.torchelastic"))
    assert paths, "no captures in tests/formats/data/torch"
    con = _ingest(paths, tmp_path_factory, catalog, "captures")
    yield con
    con.close()


def _claimed(con) -> dict[str, tuple[int, int]]:
    """file -> (non-blank lines, lines left raw)."""
    out = {}
    raw = dict(con.execute("SELECT file, count(*) FILTER (WHERE format = 'raw') FROM events GROUP BY file").fetchall())
    for (path,) in con.execute("SELECT path FROM files").fetchall():
        real = Path(path)
        if not real.exists():  # a file of a directory input is shown as '<dir name>/<below>'
            real, = CAPTURES.glob(f"*/{path}")
        with open(real, encoding="utf-8", errors="replace") as f:
            nonblank = sum(1 for line in f if line.strip())
        out[path] = (nonblank, raw.get(path, 0))
    return out


def _share(stats) -> float:
    total = sum(n for n, _ in stats.values())
    return (total - sum(r for _, r in stats.values())) / total


# ---------------------------------------------------------------- claimed share

def test_shapes_claimed(shapes):
    stats = _claimed(shapes)
    assert _share(stats) >= 0.95, {Path(p).name: s for p, s in stats.items() if s[1]}
    low = {Path(p).name: (n - r) / n for p, (n, r) in stats.items() if (n - r) / n < PER_FILE_FLOOR}
    assert not low, low


def test_captures_claimed(captures):
    stats = _claimed(captures)
    assert len(stats) >= 25
    assert _share(stats) >= 0.99
    low = {str(Path(p).relative_to(CAPTURES)): s for p, s in stats.items() if (s[0] - s[1]) / s[0] < 0.95}
    assert not low, low


# ---------------------------------------------------------------- identity

RANK_PREFIX = re.compile(r"\[rank(\d+)\]:")


@pytest.mark.parametrize("store", ["shapes", "captures"])
def test_rank_prefix_gives_rank(store, request):
    con = request.getfixturevalue(store)
    rows = con.execute("SELECT file, line, raw, rank FROM events WHERE raw LIKE '%[rank%]:%'").fetchall()
    assert rows
    bad = []
    for file, line, raw, rank in rows:
        first = raw.split("\n", 1)[0]
        m = RANK_PREFIX.search(first)
        # only when the [rankN]: is a prefix (possibly after other envelopes), not quoted text
        if m and not first[:m.start()].strip().endswith(("'", '"')) and rank != int(m.group(1)):
            bad.append((Path(file).name, line, rank, first[:120]))
    assert not bad, bad[:10]


def test_logdir_local_rank_from_path(captures):
    rows = captures.execute("""SELECT DISTINCT regexp_extract(file, 'attempt_0/(\\d+)/', 1) AS d, local_rank
                               FROM events WHERE file LIKE '%attempt_0/%'""").fetchall()
    assert rows
    assert all(int(d) == lr for d, lr in rows), rows


# ---------------------------------------------------------------- c10d facts

def test_watchdog_timeout_facts(shapes):
    rows = shapes.execute("""SELECT e.rank, c.seq, c.op, c.timeout_ms, c.ran_ms, c.numel_in, c.pg_rank
                             FROM collective_timeout c JOIN events e USING (event_id)
                             WHERE e.file LIKE '%019_%' ORDER BY e.line""").fetchall()
    assert rows[0] == (0, 8035, "_REDUCE_SCATTER_BASE", 600000, 600065, 544997376, 0)
    assert {r[0] for r in rows} == {0, 3, 4}
    # the old header: the rank comes from '[Rank N]' (no envelope)
    old = shapes.execute("""SELECT e.rank, c.seq, c.op FROM collective_timeout c JOIN events e USING (event_id)
                            WHERE e.file LIKE '%021_%'""").fetchall()
    assert {r[0] for r in old} >= {1, 2, 3, 6, 7}
    assert {(r[1], r[2]) for r in old} == {(469987, "ALLREDUCE")}
    # a process-group-local '[Rank 1]' never overrides the envelope's global rank
    pg = shapes.execute("""SELECT e.rank, c.pg_rank, c.seq FROM collective_timeout c JOIN events e USING (event_id)
                           WHERE e.file LIKE '%108_%'""").fetchall()
    assert pg == [(13, 1, 2282)]


def test_watchdog_status_facts(shapes):
    rows = shapes.execute("""SELECT e.rank, w.failed_seq, w.failed_seq2, w.last_enqueued, w.last_completed, w.pg_id
                             FROM watchdog_status w JOIN events e USING (event_id)
                             WHERE e.file LIKE '%109_%' ORDER BY e.rank""").fetchall()
    assert rows == [(1, None, 52, 52, 51, "0"), (2, None, 52, 52, 51, "0")]
    old = shapes.execute("""SELECT w.failed_seq, w.last_enqueued, w.last_completed FROM watchdog_status w
                            JOIN events e USING (event_id) WHERE e.file LIKE '%019_%'""").fetchall()
    assert (8035, 8037, 8034) in old
    dump = shapes.execute("SELECT from_rank FROM dump_signal").fetchall()
    assert dump == [(13,)]


def test_kinds_of_c10d_lines(shapes):
    kinds = dict(shapes.execute("""SELECT kind, count(*) FROM events WHERE format = 'torch_c10d' GROUP BY kind""").fetchall())
    for k in ("collective_timeout", "watchdog_abort", "store_unreachable", "store_error", "debug_dump"):
        assert kinds.get(k), (k, kinds)
    assert shapes.execute("""SELECT kind FROM events WHERE file LIKE '%059_%' AND line = 1""").fetchone() == ("cuda_error",)


def test_monitored_barrier_hang_report(captures):
    rows = captures.execute("""SELECT h.ranks, h.timeout_ms, e.rank, e.kind FROM hang_report h JOIN events e USING (event_id)
                               WHERE e.format = 'torch_c10d'""").fetchall()
    assert ("6", 20000, 0, "hang_report") in rows


def test_frozen_node_last_progress(captures):
    # hpc-d33 (ranks 4, 5) was SIGSTOPped after step 15: its last progress rows say so
    last = captures.execute("""SELECT e.rank, max(p.step) FROM progress p JOIN events e USING (event_id)
                               WHERE e.file LIKE '%hpc-d33.log' GROUP BY e.rank ORDER BY e.rank""").fetchall()
    assert [r for r, _ in last] == [4, 5] and all(15 <= s <= 16 for _, s in last), last


def test_gloo_peer_errors(captures):
    kinds = {k for (k,) in captures.execute("SELECT kind FROM events WHERE pattern = 'torch_c10d.gloo'").fetchall()}
    assert kinds == {"peer_closed", "collective_timeout"} or kinds >= {"peer_closed"}


# ---------------------------------------------------------------- times

def test_year_inferred_times(shapes, captures):
    # E1108 / E1225 glog lines of the excerpts
    n = shapes.execute("SELECT count(*) FROM events WHERE ts_kind = 'year_inferred' AND ts IS NOT NULL").fetchone()[0]
    assert n >= 5
    # in the captures, the year comes from the dated python logging lines (2026)
    years = captures.execute("""SELECT DISTINCT year(ts) FROM events WHERE ts_kind = 'year_inferred'""").fetchall()
    assert years == [(2026,)]
    got = captures.execute("""SELECT count(*) FROM events WHERE format IN ('torch_c10d', 'torch_elastic')
                              AND ts_kind = 'year_inferred'""").fetchone()[0]
    assert got > 100


def test_error_json(captures):
    rows = captures.execute("""SELECT e.message, e.ts, e.ts_kind, e.kind, e.local_rank FROM events e
                               WHERE e.format = 'torch_error_json'""").fetchall()
    assert rows
    assert all(r[1] is not None and r[2] == "exact" for r in rows)
    oom = [r for r in rows if "DefaultCPUAllocator" in r[0]]
    assert oom and oom[0][3] == "host_oom"


# ---------------------------------------------------------------- elastic agent

def test_launch_config_and_rendezvous(captures):
    launch = captures.execute("SELECT DISTINCT min_nodes, max_nodes, nproc_per_node FROM elastic_launch").fetchall()
    assert (4, 4, 2) in launch
    rdzv = captures.execute("""SELECT e.file, r.group_rank, r.local_ranks, r.global_ranks, r.group_world_size
                               FROM rdzv_result r JOIN events e USING (event_id)""").fetchall()
    by_node = {Path(f).name: (g, lr, gr, w) for f, g, lr, gr, w in rdzv}
    assert by_node["cn-0414.log"] == (2, "0, 1", "4, 5", 4)
    assert by_node["node-c14.log"] == (3, "0, 1", "6, 7", 4)


def test_agent_lines(captures, shapes):
    failed = captures.execute("""SELECT w.exitcode, w.local_rank, w.worker_pid, e.kind FROM elastic_worker_failed w
                                 JOIN events e USING (event_id) WHERE e.file LIKE '%cn-0414.log'""").fetchall()
    assert (-9, 1, 12368, "worker_failed") in failed
    sig = captures.execute("SELECT count(*) FROM elastic_signal_sent WHERE signal = 'SIGTERM'").fetchone()[0]
    assert sig >= 1
    old = shapes.execute("""SELECT w.exitcode, w.worker_pid FROM elastic_worker_failed w JOIN events e USING (event_id)
                            WHERE e.file LIKE '%099_%'""").fetchall()
    assert old == [(-9, 849204)]
    assert shapes.execute("SELECT count(*) FROM elastic_signal_sent WHERE target_pid = 849213").fetchone()[0] == 1
    group = shapes.execute("SELECT state, attempts_left FROM elastic_worker_group").fetchall()
    assert ("FAILED", 100) in group
    assert captures.execute("SELECT count(*) FROM events WHERE kind IN ('rdzv_timeout', 'store_unreachable')").fetchone()[0] >= 1
    # the clean run's node says its worker group succeeded (twice); its exit barrier's end says nothing of how
    # the group ended (older agents enter it after a FAILED group too)
    assert captures.execute("""SELECT count(*) FROM events WHERE file LIKE '%trn-a18.log'
                               AND kind = 'worker_group_done'""").fetchone()[0] == 2
    assert captures.execute("""SELECT kind FROM events WHERE file LIKE '%trn-a18.log'
                               AND message LIKE 'Done waiting for other agents%'""").fetchall() == [("exit_barrier_done",)]
    # a real agent SIGTERM (11_agent_sigterm): the agent says so, then SIGTERMs its two workers
    assert captures.execute("SELECT signal FROM elastic_signal_received").fetchall() == [("15",)]
    assert captures.execute("""SELECT count(*) FROM events WHERE file LIKE '%node-s01.log'
                               AND kind IN ('signal_received', 'sigterm_sent')""").fetchone()[0] >= 3


# ---------------------------------------------------------------- Root Cause block

def test_failure_summary_entries(shapes, captures):
    rows = shapes.execute("""SELECT f.root_cause, f.idx, f.rank, f.local_rank, f.exitcode, f.pid, f.host, f.time
                             FROM torch_failure_entry f JOIN events e USING (event_id)
                             WHERE e.file LIKE '%037_%' ORDER BY f.idx""").fetchall()
    assert rows == [
        ("Root Cause", 0, 0, 0, 1, 460759, "c640-086.morevino8.mobi.igitiz.edu", "2025-10-06_23:05:19"),
        (None, 1, 2, 2, 1, 460761, "c640-086.morevino8.mobi.igitiz.edu", "2025-10-06_23:05:19"),
        (None, 2, 3, 3, 1, 460762, "c640-086.morevino8.mobi.igitiz.edu", "2025-10-06_23:05:19"),
    ]
    # 039 starts mid-block: the fragment entry [3] and two root causes
    frag = shapes.execute("""SELECT f.root_cause, f.rank, f.pid FROM torch_failure_entry f JOIN events e USING (event_id)
                             WHERE e.file LIKE '%039_%' ORDER BY e.line, f.idx""").fetchall()
    assert frag == [(None, 3, 15754), ("Root Cause", 0, 15750), ("Root Cause", 4, 15737)]
    sig = shapes.execute("""SELECT f.traceback FROM torch_failure_entry f JOIN events e USING (event_id)
                            WHERE e.file LIKE '%040_%' AND f.idx = 1""").fetchone()
    assert sig == ("Signal 6 (SIGABRT) received by PID 1614580",)
    real = captures.execute("""SELECT f.root_cause, f.rank, f.exitcode, f.signal FROM torch_failure_entry f
                               JOIN events e USING (event_id) WHERE e.file LIKE '%cn-0414.log'
                               ORDER BY f.idx""").fetchall()
    assert real == [("Root Cause", 5, -9, "SIGKILL"), (None, 4, -15, "SIGTERM")]
    kinds = {k for (k,) in shapes.execute("SELECT kind FROM events WHERE format = 'torch_failure_summary' "
                                          "AND pattern <> 'torch_failure_summary.rule_line'").fetchall()}
    assert kinds == {"failure_summary"}


# ---------------------------------------------------------------- tracebacks, crashes, progress

def test_tracebacks(shapes, captures):
    # [rankN]:-prefixed tracebacks are one event per rank, classified by their exception
    rows = captures.execute("""SELECT rank, kind FROM events WHERE pattern = 'python_traceback.traceback'
                               AND file LIKE '%attempt_0%'""").fetchall()
    assert ("hang_report" in {k for _, k in rows}) and ("host_oom" in {k for _, k in rows})
    assert shapes.execute("""SELECT kind FROM events WHERE file LIKE '%096_%' AND pattern LIKE 'python_traceback.%'
                             AND kind IS NOT NULL""").fetchall() == [("store_error",)]
    exc = captures.execute("""SELECT rank, message FROM events WHERE pattern = 'python_traceback.traceback'
                              AND message LIKE 'RuntimeError: corrupted input batch%'""").fetchall()
    assert exc and {r for r, _ in exc} == {3}


def test_crashes(shapes, captures):
    assert captures.execute("SELECT count(*) FROM events WHERE pattern = 'cpp_stack.fatal_python' "
                            "AND kind = 'crash_signal'").fetchone()[0] >= 1
    assert shapes.execute("SELECT host, pid FROM events WHERE pattern = 'cpp_stack.ucx_signal'").fetchall() == \
        [("experiment-1cbc5a16-8596-worker-4", 1260)]
    assert shapes.execute("SELECT count(*) FROM events WHERE pattern = 'cpp_stack.c10_exception'").fetchone()[0] >= 4


def test_progress(shapes, captures):
    last = captures.execute("""SELECT e.rank, max(p.step) FROM progress p JOIN events e USING (event_id)
                               WHERE e.file LIKE '%gpu-b02.log' GROUP BY e.rank ORDER BY e.rank""").fetchall()
    # rank 3 (gpu-b02) raised at step 20: its last logged step is 19; rank 2 got no further either
    assert last == [(2, 19), (3, 19)]
    rows = shapes.execute("SELECT step, total, loss FROM progress WHERE step IN (80000, 9007, 10)").fetchall()
    assert (80000, None, None) in rows and (9007, 16777, 1.086) in rows
