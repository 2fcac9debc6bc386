"""Capture real incidents and check that truth.json names what REALLY
happened, read back from the native logs (process exits, tracebacks,
scheduler records), and that the bundle is in the verdict-contract shape."""
import datetime as dt
import json
import re
from pathlib import Path

import pytest

from e2e_logtools import error_summaries, last_steps, read_all, step_times, strip_label
from e2e_support import KINDS, SCENARIOS, require, run_capture


def parse_iso(s):
    return dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc)


def parse_logged(s):  # "2026-11-29 16:36:13.192" in the (UTC) node clock
    return dt.datetime.strptime(s, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=dt.timezone.utc)


def check_contract(truth, verdict, name):
    v = verdict["verdict"]
    assert v["kind"] in KINDS
    assert v["kind"] == truth["kind"] == SCENARIOS[name]["kind"]
    for k in ("rank", "local_rank", "host", "pid", "time"):
        assert v[k] == truth[k], k
    assert {"pod", "gpu", "summary"} <= set(v)
    if v["time"] is not None:
        parse_iso(v["time"])
    offsets = truth["clock_offsets_s"]
    if any(offsets.values()):
        got = {c["host"]: c["offset_s"] for c in verdict["clock"]}
        for h, off in offsets.items():
            if h in got:
                assert got[h] == pytest.approx(off)


def assert_no_leak(bundle, name):
    text = read_all(bundle)
    for needle in ("RT_FAULTS", name, SCENARIOS[name].get("faults") or "RT_FAULTS"):
        assert needle not in text


def assert_skew_visible(bundle, truth, ref_rank, skewed_rank, step=5):
    """Ranks step in lockstep (one all_reduce a step), so the same step's
    logged times differ by the injected offset."""
    times = step_times(read_all(bundle))
    a, b = parse_logged(times[(ref_rank, step)]), parse_logged(times[(skewed_rank, step)])
    hosts = {r: h for h, rs in truth["nodes"].items() for r in rs}
    want = truth["clock_offsets_s"][hosts[skewed_rank]] - truth["clock_offsets_s"][hosts[ref_rank]]
    assert (b - a).total_seconds() == pytest.approx(want, abs=1.5)


# ---------------------------------------------------------------- default set
@pytest.mark.e2e
def test_slurm_torchrun_sigkill_truth_matches_process_exit(slurm_cluster, torch_ready, capture):
    """torchrun under Slurm (srun --label, 4 nodes x 2 ranks): the rank that
    truth.json names is the one whose process died of SIGKILL, on the node
    and with the pid that torchrun and srun report."""
    name = "slurm_torchrun_sigkill"
    bundle, truth, verdict = capture(name)
    check_contract(truth, verdict, name)
    out = next(Path(bundle).glob("slurm-*.out")).read_text(errors="replace")

    killed = [e for e in error_summaries(out) if e.get("exitcode") == -9]
    assert len(killed) == 1, killed
    k = killed[0]
    assert (k["rank"], k["local_rank"], k["host"], k["pid"]) == (
        truth["rank"], truth["local_rank"], truth["host"], truth["pid"])
    # the agent's own line names the same pid
    assert re.search(rf"failed \(exitcode: -9\) local_rank: {truth['local_rank']} \(pid: {truth['pid']}\)", out)
    # srun's label of that block is the task running on the culprit's node
    tasks = {int(t): n for n, t in re.findall(r"srun: error: (n\d+): task (\d+):", out)}
    assert tasks[k["task"]] == truth["host"]
    # the killed rank logged progress up to the injection and nothing after it
    assert last_steps(out)[truth["rank"]] >= SCENARIOS[name]["action"]["at_step"]
    # Slurm's record of the job
    sacct = (Path(bundle) / "sacct_P.txt").read_text()
    assert "|FAILED|" in sacct.splitlines()[1]
    # the injected clock offset of n2 shows in its log times
    assert truth["clock_offsets_s"]["n2"] == 37.0
    assert_skew_visible(bundle, truth, ref_rank=0, skewed_rank=2)
    assert_no_leak(bundle, name)


@pytest.mark.e2e
def test_torchrun_exception_truth_matches_error_file(torch_ready, capture):
    """Plain multi-node torchrun: exactly one rank wrote an error.json with
    the injected exception, and it is the rank, host and (clock-corrected)
    time that truth.json gives."""
    name = "tr_exception"
    bundle, truth, verdict = capture(name)
    check_contract(truth, verdict, name)
    hits = []
    for f in Path(bundle).glob("torchelastic/*/*/attempt_0/*/error.json"):
        msg = json.loads(f.read_text())["message"]
        if "corrupted input batch" in msg["message"]:
            hits.append((f, msg))
    assert len(hits) == 1, hits
    f, msg = hits[0]
    host, local_rank = f.parts[-5], int(f.parts[-2])
    assert (host, local_rank) == (truth["host"], truth["local_rank"])
    logged = msg["extraInfo"]["timestamp"]  # the node's clock, whole seconds
    true_t = parse_iso(truth["time"]).timestamp()
    assert abs(int(logged) - truth["clock_offsets_s"][host] - true_t) <= 2
    agent_log = (Path(bundle) / f"{host}.log").read_text(errors="replace")
    mine = [e for e in error_summaries(agent_log) if e.get("rank") == truth["rank"]]
    assert mine and mine[0]["exitcode"] == 1
    assert_skew_visible(bundle, truth, ref_rank=0, skewed_rank=4)
    assert_no_leak(bundle, name)


@pytest.mark.e2e
def test_slurm_cgroup_oom_truth_matches_slurm_records(slurm_cluster, torch_ready, capture):
    """Slurm-only job (srun --label, one task per rank): the rank truth.json
    names is the task the kernel OOM-killed, as srun and sacct record it."""
    name = "slurm_oom_cgroup"
    bundle, truth, verdict = capture(name)
    check_contract(truth, verdict, name)
    out = next(Path(bundle).glob("slurm-*.out")).read_text(errors="replace")
    sacct = (Path(bundle) / "sacct_P.txt").read_text()
    if truth["slurm_mode"].startswith("cgroup"):
        # srun names the task; with one task per rank, task id == rank
        m = re.search(r"srun: error: (n\d+): task (\d+): Out Of Memory", out)
        assert m, out[-3000:]
        assert (m.group(1), int(m.group(2))) == (truth["host"], truth["rank"])
        assert re.search(r"slurmstepd-n\d: error: Detected \d+ oom-kill event", out)
        assert "|OUT_OF_MEMORY|" in sacct
    else:  # OverMemoryKill: Slurm kills the whole step and names no task
        assert re.search(r"[Ee]xceeded .*memory limit", out + sacct), out[-3000:]
    # the culprit stopped before the step it was loading; nobody got past it
    fault_step = int(SCENARIOS[name]["faults"].split(":")[1])
    last = last_steps(out)
    assert last[truth["rank"]] == fault_step - 1 == max(last.values())
    assert_no_leak(bundle, name)


# ---------------------------------------------------------------- slow: every other scenario
def _evidence_checks(name, bundle, truth):
    """Per-kind evidence that the incident really happened as truth says."""
    sc = SCENARIOS[name]
    text = read_all(bundle)
    kind = truth["kind"]
    if sc["launcher"] != "torchrun":
        sacct = (Path(bundle) / "sacct_P.txt").read_text()
        state = sacct.splitlines()[1].split("|")[3]
    if kind == "none":
        assert all(c == 0 for c in truth["agent_exit_codes"].values())
        assert "training finished" in text
    elif kind == "crash":
        seg = [e for e in error_summaries(text) if e.get("exitcode") == -11]
        assert seg and all(e["rank"] == truth["rank"] for e in seg)
        assert "Fatal Python error: Segmentation fault" in text
    elif kind == "oom" and sc["launcher"] == "torchrun":
        stderr = next(Path(bundle).glob(f"torchelastic/{truth['host']}/*/attempt_0/{truth['local_rank']}/stderr.log"))
        assert "can't allocate memory" in stderr.read_text()
    elif kind == "oom":
        assert state == "OUT_OF_MEMORY" or "OUT_OF_MEMORY" in sacct or "oom" in text.lower()
    elif kind == "exception":
        assert f"in shard {truth['rank']:03d}" in text
        if truth.get("second_failure"):
            assert parse_iso(truth["second_failure"]["time"]) > parse_iso(truth["time"])
    elif kind == "killed":
        killed = [e for e in error_summaries(text) if e.get("exitcode") == -9]
        assert killed and killed[0]["rank"] == truth["rank"]
    elif kind == "hang":
        assert "Timed out" in text or "timed out" in text
        last = last_steps(text)
        assert last[truth["rank"]] <= min(last.values())
    elif kind == "node_failure" and sc["launcher"] == "torchrun":
        log = (Path(bundle) / f"{truth['host']}.log").read_text(errors="replace")
        lines = [strip_label(l)[1] for l in log.splitlines()]
        stamps = re.findall(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})", "\n".join(lines), re.M)
        last = max(parse_logged(f"{a}.{b}") for a, b in stamps)
        assert last <= parse_iso(truth["time"]) + dt.timedelta(seconds=1)
    elif kind == "node_failure":
        assert state == "NODE_FAIL"
    elif kind == "rendezvous_timeout":
        assert not (Path(bundle) / f"{truth['host']}.log").exists()
        assert re.search(r"Rendezvous(Timeout|Connection|Closed)?Error", text)
    elif kind == "time_limit":
        assert state == "TIMEOUT" and "DUE TO TIME LIMIT" in text
    elif kind == "cancelled":
        assert state.startswith("CANCELLED")


# runs that restart have tests of their own (test_e2e_restarts.py)
OTHERS = [n for n in SCENARIOS if n not in ("slurm_torchrun_sigkill", "tr_exception", "slurm_oom_cgroup")
          and not (SCENARIOS[n].get("max_restarts") or SCENARIOS[n].get("requeue"))]


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("name", OTHERS)
def test_scenario_truth(name, tmp_path, request):
    sc = SCENARIOS[name]
    require(slurm=sc["launcher"] != "torchrun", torch=True)
    if sc["launcher"] != "torchrun":
        request.getfixturevalue("slurm_cluster")
    truth, verdict = run_capture(name, tmp_path / name)
    check_contract(truth, verdict, name)
    _evidence_checks(name, tmp_path / name, truth)
    assert_no_leak(tmp_path / name, name)
