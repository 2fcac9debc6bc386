"""The Slurm family of formats on real output.

Real shapes: shared/real_log_shapes 062-078 (when the shared folder is there)
and real Slurm 22.05.8 output captured on a local 4-node cluster
(tests/formats/data/slurm/, see its README.md). Every file is ingested into a
temporary store through the real pipeline; the claims that matter for a
diagnosis are checked: every line claimed, the kind of the culprit lines,
times present where the line carries one, the task-range and job-state facts.
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
DATA = HERE / "data" / "slurm"
SHAPES = Path(os.environ.get("RANKTRACE_SHARED", "/work/shared")) / "real_log_shapes"

SLURM_SHAPES = ["062", "063", "064", "067", "069", "071", "073", "076", "078"]

# lines of the data files that are not Slurm's: the fake task's own output
# ("rank 3 step 2"), Python tracebacks (another format's business)
TASK_OUTPUT = re.compile(r"rank \d+ (?:on|step|done)|Traceback|^(?: *\d+: )?(?:\s*File |\s{2,}\S|\w*Error: )")


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def _store(tmp_path_factory, cat, paths):
    db = tmp_path_factory.mktemp("slurm") / "t.duckdb"
    summary = ingest([str(p) for p in paths], str(db), cat)
    assert not [f for f in summary.files if f.status == "failed"], summary.warnings
    return store_connect(str(db))


@pytest.fixture(scope="module")
def shapes(tmp_path_factory, cat):
    if not SHAPES.is_dir():
        pytest.skip(f"{SHAPES} not present")
    files = [p for n in SLURM_SHAPES for p in SHAPES.glob(f"{n}_*.log")]
    return _store(tmp_path_factory, cat, files)


@pytest.fixture(scope="module")
def captured(tmp_path_factory, cat):
    return _store(tmp_path_factory, cat, [p for p in sorted(DATA.rglob("*")) if p.is_file() and p.name != "README.md"])


def _events(con, name_like: str):
    return con.execute(
        "SELECT e.line, e.format, e.kind, e.role, e.ts, e.ts_kind, e.host, e.job_id, e.step_id, e.raw, e.event_id "
        "FROM events e JOIN files f USING (file_id) WHERE f.path LIKE ? ORDER BY e.line",
        [f"%{name_like}%"]).fetchall()


def _line(con, name_like: str, text: str):
    rows = [r for r in _events(con, name_like) if text in r[9]]
    assert rows, f"no event with {text!r} in {name_like}"
    return rows[0]


# ---------------------------------------------------------------- real_log_shapes

@pytest.mark.parametrize("shape", ["062", "063", "064", "067", "071", "073", "076", "078"])
def test_shape_every_line_claimed(shapes, shape):
    raw = [r for r in _events(shapes, f"/{shape}_") if r[1] == "raw"]
    assert not raw, f"{shape}: unclaimed {[r[9] for r in raw]}"


def test_069_slurm_lines_claimed(shapes):
    # the progress bars and the VS Code terminal line are not Slurm's
    for r in _events(shapes, "/069_"):
        if "srun" in r[9] or "slurmstepd" in r[9]:
            assert r[1] in ("slurm_srun", "slurm_stepd"), r


def test_062_oom(shapes):
    srun = _line(shapes, "/062_", "tasks 1-3: Out Of Memory")
    assert srun[2] == "host_oom" and srun[3] == "cause"
    assert srun[6] is None  # the node named by srun is a fact, not the line's host
    fact = shapes.execute("SELECT node, tasks, state FROM slurm_task_exit WHERE event_id = ?", [srun[10]]).fetchall()
    assert fact == [("nid785897", "1-3", "Out Of Memory")]
    stepd = _line(shapes, "/062_", "oom_kill event")
    assert stepd[2] == "host_oom" and stepd[8] == "734802.0" and stepd[7] == "734802"
    banner = _line(shapes, "/062_", "CANCELLED AT")
    assert banner[2] == "step_cancelled" and banner[3] == "symptom"
    assert banner[6] == "nid785897" and str(banner[4]) == "2023-09-17 03:34:20"
    assert banner[5] == "local"


def test_063_old_oom_message(shapes):
    assert _line(shapes, "/063_", "oom-kill event(s) in step 3495064.0")[2] == "host_oom"
    assert _line(shapes, "/063_", "task 4: Out Of Memory")[2] == "host_oom"
    assert _line(shapes, "/063_", "Terminating job step 5068287.0")[8] == "5068287.0"


def test_064_bus_error(shapes):
    r = _line(shapes, "/064_", "task 289: Bus error")
    assert r[2] == "crash_signal"
    assert shapes.execute("SELECT tasks, state FROM slurm_task_exit WHERE event_id = ?",
                          [r[10]]).fetchall() == [("289", "Bus error")]


def test_067_glued_and_debug(shapes):
    banner = _line(shapes, "/067_", "*** STEP 9842.0 ON HFR0703W252")
    assert banner[1] == "slurm_stepd" and banner[4] is not None and banner[6] == "HFR0703W252"
    assert _line(shapes, "/067_", "task 0: Terminated")[2] == "task_exit"
    note = _line(shapes, "/067_", "status=0x000f")
    assert note[8] == "9842.0"
    assert shapes.execute("SELECT status FROM slurm_task_status WHERE event_id = ?",
                          [note[10]]).fetchall() == [("0x000f",)]


def test_069_time_limit(shapes):
    r = _line(shapes, "/069_", "DUE TO TIME LIMIT")
    assert r[2] == "time_limit" and r[3] == "cause" and r[6] == "jaca126"
    assert str(r[4]) == "2023-09-16 05:12:21"
    assert _line(shapes, "/069_", "Timed out waiting for job step")[2] == "step_cancelled"


def test_071_preemption(shapes):
    r = _line(shapes, "/071_", "DUE TO PREEMPTION")
    assert r[2] == "cancelled" and r[6] == "c1-n74"
    assert _line(shapes, "/071_", "Force Terminated job 324296")[2] == "step_cancelled"


def test_073_slurmd_log(shapes):
    rows = _events(shapes, "/073_")
    assert all(r[4] is not None and r[5] == "local" for r in rows)
    assert _line(shapes, "/073_", "launch task 42929.0")[2] == "step_start"
    stuck = _line(shapes, "/073_", "STEPD TERMINATED")
    assert stuck[2] == "unkillable_step" and stuck[6] == "cn109" and stuck[8] == "42929.0"


def test_076_078_daemon_errors(shapes):
    assert _line(shapes, "/076_", "Could not open node state file")[2] == "daemon_error"
    r = _line(shapes, "/078_", "spank-epilog")
    assert r[1] == "slurm_daemon" and r[2] == "daemon_error" and r[6] == "ip-192-0-2-242"
    assert r[5] == "year_inferred"


# ---------------------------------------------------------------- captured on a real cluster

def test_captured_slurm_files_fully_claimed(captured):
    """Daemon logs, sacct, scontrol, sinfo, jobcomp: every line. Job output:
    every line that is not the test task's own output."""
    bad = []
    for fid, path in captured.execute("SELECT file_id, path FROM files").fetchall():
        rows = captured.execute("SELECT line, format, raw FROM events WHERE file_id = ?", [fid]).fetchall()
        for line, fmt, raw in rows:
            if fmt != "raw":
                continue
            if "slurm-" in path and TASK_OUTPUT.search(raw):
                continue
            bad.append(f"{path}:{line}: {raw}")
    assert not bad, "\n".join(bad[:20])


def test_captured_gap_in_task_range(captured):
    r = _line(captured, "08_64tasks_sigkill/slurm-", "tasks 0-57,59-63: Terminated")
    assert r[2] == "task_exit" and r[7] == "8"  # job id from the slurm-8.out path
    assert captured.execute("SELECT node, tasks, state FROM slurm_task_exit WHERE event_id = ?",
                            [r[10]]).fetchall() == [("m1", "0-57,59-63", "Terminated")]
    assert _line(captured, "08_64tasks_sigkill/slurm-", "task 58: Killed")[2] == "task_exit"


@pytest.mark.parametrize("where,text,kind", [
    ("01_exception/slurm-", "task 2: Exited with exit code 1", "process_exit"),
    ("03_oom_cgroup/slurm-", "task 1: Out Of Memory", "host_oom"),
    ("03_oom_cgroup/slurm-", "oom-kill event(s) in StepId=3.0", "host_oom"),
    ("05_sigbus/slurm-", "task 6: Bus error", "crash_signal"),
    ("07_scancel/logs/slurmctld", "REQUEST_KILL_JOB JobId=7", "cancelled"),
    ("10_time_limit/slurm-", "DUE TO TIME LIMIT", "time_limit"),
    ("10_time_limit/logs/slurmctld", "Time limit exhausted for JobId=10", "time_limit"),
    ("11_preempt/slurm-", "DUE TO PREEMPTION", "cancelled"),
    ("12_node_failure/slurm-", "Node failure on m2", "node_failure"),
    ("12_node_failure/logs/slurmctld", "not responding, setting DOWN", "node_failure"),
    ("12_node_failure/logs/slurmctld", "Killing JobId=13 on failed node m2", "node_failure"),
    ("30_oom_overmemorykill_verbose/slurm-", "exceeded memory limit", "host_oom"),
    ("30_oom_overmemorykill_verbose/logs/slurmd-m1", "exceeded memory limit", "host_oom"),
    ("33_segfault_nokill_verbose/slurm-", "task 6: Segmentation fault", "crash_signal"),
    ("33_segfault_nokill_verbose/logs/slurmd-m2", "Killed by signal 11.", "crash_signal"),
    ("40_batch_oom/slurm-", "exceeded memory limit", "host_oom"),
    ("20_cli/cli.txt", "Invalid partition name specified", "scheduling_error"),
    ("capture_slurm_oom_cgroup/sacct_P", "OUT_OF_MEMORY", "host_oom"),
    ("capture_slurm_oom_cgroup/sacct.txt", "OUT_OF_ME+", "host_oom"),
    ("capture_slurm_time_limit/sacct_P", "TIMEOUT", "time_limit"),
    ("capture_slurm_node_failure/sacct_P", "NODE_FAIL", "node_failure"),
    ("capture_slurm_scancel/sacct_P", "CANCELLED by 0", "cancelled"),
    ("capture_slurm_node_failure/scontrol_show_job", "JobState=NODE_FAIL", "node_failure"),
    ("12_node_failure/sinfo_down", "down*", "node_failure"),
    ("53_acct_preempt/slurm-", "DUE TO PREEMPTION", "cancelled"),
    ("55_acct_node_failure/slurm-", "Node failure on m2", "node_failure"),
    ("sacct/sacct_P_l", "|OUT_OF_MEMORY|", "host_oom"),
    ("sacct/sacct_P_l", "|PREEMPTED|", "cancelled"),
    ("sacct/sacct_P_l", "|TIMEOUT|", "time_limit"),
    ("sacct/sacct_l", " OUT_OF_ME+ ", "host_oom"),
    ("sacct/sacct_l", "  PREEMPTED ", "cancelled"),
    ("sacct/sacct_format", "CANCELLED by 0", "cancelled"),
    ("sacct/sacct_P_format", "|NODE_FAIL|", "node_failure"),
    ("sacct/sacct_p", "|TIMEOUT|", "time_limit"),
    ("sacct/sacct_json_39", '"meta"', "node_failure"),
    ("60_array/sacct_P", "40_1|wrap|FAILED|3:0", "job_exit"),
    ("60_array/slurmctld", "JobId=40_1(40) WEXITSTATUS 3", "job_exit"),
])
def test_captured_kinds(captured, where, text, kind):
    assert _line(captured, where, text)[2] == kind


def test_captured_times(captured):
    # daemon log lines carry their own time; banners carry the CANCELLED AT time
    for r in _events(captured, "/logs/slurm"):
        assert r[5] == "local" and r[4] is not None, r
    r = _line(captured, "12_node_failure/slurm-", "*** JOB 13 ON m1 CANCELLED AT 2026-11-29T16:46:17")
    assert str(r[4]) == "2026-11-29 16:46:17" and r[5] == "local"


def test_captured_job_state_facts(captured):
    rows = captured.execute(
        "SELECT job_id, step, state, exit_code, nodelist FROM slurm_job_state s JOIN files f USING (file_id) "
        "WHERE f.path LIKE '%capture_slurm_oom_cgroup/sacct_P%' ORDER BY step NULLS FIRST").fetchall()
    assert rows == [("4", None, "FAILED", "1:0", "n[1-2]"), ("4", "0", "OUT_OF_MEMORY", "0:125", "n[1-2]"),
                    ("4", "batch", "FAILED", "1:0", "n1")]
    js = captured.execute(
        "SELECT job_id, step, state, signal_id FROM slurm_job_state s JOIN files f USING (file_id) "
        "WHERE f.path LIKE '%capture_slurm_oom_cgroup/sacct.json' ORDER BY step NULLS FIRST").fetchall()
    assert ("4", None, "FAILED", None) in js and ("4", "0", "OUT_OF_MEMORY", "125") in js
    sc = captured.execute(
        "SELECT job_id, state, reason, exit_code, nodelist, num_nodes FROM slurm_job_state s "
        "JOIN files f USING (file_id) WHERE f.path LIKE '%10_time_limit/scontrol_show_job%'").fetchall()
    assert sc == [("10", "TIMEOUT", "TimeLimit", "0:15", "m[1-2]", 2)]


def test_captured_sacct_long_and_format(captured):
    rows = captured.execute(
        "SELECT job_id, step, state, exit_code, nodelist, start, \"end\" FROM slurm_job_state s "
        "JOIN files f USING (file_id) WHERE f.path LIKE '%sacct/sacct_P_format%' AND job_id = '39'"
        " ORDER BY step NULLS FIRST").fetchall()
    assert rows[0] == ("39", None, "NODE_FAIL", "0:0", "m[1-2]", "2026-11-29T17:41:07", "2026-11-29T17:41:44")
    assert ("39", "0", "CANCELLED", "0:15") in [r[:4] for r in rows]
    longrow = captured.execute(
        "SELECT job_id, step, state, exit_code FROM slurm_job_state s JOIN files f USING (file_id) "
        "WHERE f.path LIKE '%sacct/sacct_P_l%' AND job_id = '34' AND step = '0'").fetchall()
    assert longrow == [("34", "0", "OUT_OF_MEMORY", "0:125")]


def test_captured_identity(captured):
    # slurmd's stepd lines carry the step; the slurmctld lines the job
    r = _line(captured, "30_oom_overmemorykill_verbose/logs/slurmd-m1", "task 1 (")
    assert r[8] == "20.0" and r[7] == "20"
    assert _line(captured, "12_node_failure/logs/slurmctld", "sched: Allocate JobId=13")[7] == "13"
    assert _line(captured, "60_array/slurmctld", "Allocate JobId=40_1(40)")[7] == "40_1"
    # srun names nodes; they are facts, not the host of its lines
    assert _line(captured, "01_exception/slurm-", "m2: tasks 4-7: Terminated")[6] is None
