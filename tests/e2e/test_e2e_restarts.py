"""Runs that restart (issue 27): capture them for real and check that the
harness's attempts (truth.json, expected_verdict.json) are what the native
logs record: torchrun's own restart lines and attempt_N directories, the
job's checkpoint resume, Slurm's requeue in slurmctld.log and sacct.

These check the HARNESS, not ranktrace's verdict: the readers here are
e2e_logtools's, independent of ranktrace's parsers."""
import datetime as dt
import re
from pathlib import Path

import pytest

from e2e_logtools import error_summaries, read_all, strip_label
from e2e_support import KINDS, SCENARIOS, require, run_capture

OUTCOMES = {"failed", "completed", "cancelled", "running"}


def iso(s):
    return dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc)


def check_attempts(truth, expected, name):
    """The attempts contract of sample_logs/README.md, and truth.json agrees."""
    atts = expected["attempts"]
    assert [a["id"] for a in atts] == list(range(1, len(atts) + 1))
    for a in atts:
        assert a["outcome"] in OUTCOMES and a["boundary"]
        assert iso(a["start"]) <= iso(a["end"])
        assert ("verdict" in a) == (a["outcome"] == "failed"), a
        if a["outcome"] == "failed":
            v = a["verdict"]
            assert v["kind"] in KINDS
            assert iso(a["start"]) <= iso(v["time"]) <= iso(a["end"]), a
    # attempts follow each other; the next starts once the last failure happened
    for a, b in zip(atts, atts[1:]):
        assert iso(a["start"]) < iso(b["start"])
        if a["outcome"] == "failed":
            assert iso(a["verdict"]["time"]) < iso(b["start"])
    # the top-level verdict is the last failed attempt's
    last = [a for a in atts if a["outcome"] == "failed"][-1]["verdict"]
    top = expected["verdict"]
    assert {k: top[k] for k in ("kind", "rank", "local_rank", "host", "pid", "time")} == {
        k: last[k] for k in ("kind", "rank", "local_rank", "host", "pid", "time")}
    assert top["kind"] == truth["kind"] == SCENARIOS[name]["kind"]
    assert [(a["id"], a["outcome"]) for a in truth["attempts"]] == [(a["id"], a["outcome"]) for a in atts]
    return atts


def agent_lines(bundle, host):
    text = (Path(bundle) / f"{host}.log").read_text(errors="replace")
    return [strip_label(l)[1] for l in text.splitlines()]


def worker_pids(lines):
    """[(rank, pid)] of each 'worker started' line, in log order."""
    return [(int(r), int(p)) for r, p in
            (re.search(r"\[rank(\d+)\] worker started .* pid=(\d+)", l).groups() for l in lines
             if "worker started" in l)]


def assert_no_leak(bundle, name):
    text = read_all(bundle)
    for needle in ("RT_FAULTS", name, SCENARIOS[name].get("faults") or "RT_FAULTS"):
        assert needle not in text


# ---------------------------------------------------------------- default set: one short capture
@pytest.mark.e2e
def test_torchrun_restart_resumes_from_checkpoint(torch_ready, capture):
    """torchrun --max-restarts=2: rank 3 raises in attempt 1; the agents
    restart the worker group, the new workers load the last checkpoint and
    train to the end. truth.json's two attempts are what the logs record."""
    name = "tr_restart_resume"
    bundle, truth, expected = capture(name)
    atts = check_attempts(truth, expected, name)
    assert [a["outcome"] for a in atts] == ["failed", "completed"]
    v = atts[0]["verdict"]
    assert (v["kind"], v["rank"], v["host"]) == ("exception", 3, "ra-n02")

    # the culprit's own error.json is in its agent's attempt_0 directory
    errs = list(Path(bundle).glob(f"torchelastic/{v['host']}/*/attempt_0/{v['local_rank']}/error.json"))
    assert len(errs) == 1 and "corrupted input batch at step 12" in errs[0].read_text()
    # every agent restarted its workers once, into a second rendezvous round
    # whose restart_count is the agent's own count of failures (0 or 1)
    for host in truth["nodes"]:
        lines = agent_lines(bundle, host)
        assert sum("will restart worker group" in l for l in lines) == 1, host
        counts = [int(m.group(1)) for l in lines for m in [re.search(r"\]\s+restart_count=(\d+)$", l)] if m]
        assert len(counts) == 2 and counts[0] == 0 and counts[1] in (0, 1), (host, counts)
        assert sum("Rendezvous complete for workers" in l for l in lines) == 2, host
    culprit = agent_lines(bundle, v["host"])
    assert any("Worker group FAILED. 2/2 attempts left; will restart worker group" in l for l in culprit)
    assert any(re.search(r"\]\s+restart_count=1$", l) for l in culprit)
    assert list(Path(bundle).glob(f"torchelastic/{v['host']}/*/attempt_1/{v['local_rank']}/stdout.log"))
    assert truth["agent_exit_codes"] == {h: 0 for h in truth["nodes"]}

    # the new workers are new processes (the pids of attempt 2), which
    # resumed from the step-10 checkpoint and finished all 24 steps
    text = read_all(bundle, "*.log")
    started = worker_pids([strip_label(l)[1] for l in text.splitlines()])
    first = {int(r): p for r, p in truth["attempts"][0]["pids"].items()}
    second = {int(r): p for r, p in truth["attempts"][1]["pids"].items()}
    assert sorted(started) == sorted(list(first.items()) + list(second.items()))
    assert not set(first.values()) & set(second.values())
    for r in second:
        assert f"[rank{r}] Loading the checkpoint at step 10." in text
        assert f"[rank{r}] Training starts at step 11" in text
        assert f"[rank{r}] training finished steps=24" in text
        assert f"[rank{r}] step 24 loss" in text
    # in attempt 1 the culprit got to step 11 (it raised loading step 12's batch)
    out0 = next(Path(bundle).glob(f"torchelastic/{v['host']}/*/attempt_0/{v['local_rank']}/stdout.log"))
    assert max(int(s) for s in re.findall(r"\] step (\d+) loss", out0.read_text())) == 11
    assert_no_leak(bundle, name)


# ---------------------------------------------------------------- slow
@pytest.mark.e2e
@pytest.mark.slow
def test_torchrun_fault_recurs_on_the_same_node_until_restarts_run_out(torch_ready, tmp_path):
    """The worker at local rank 1 of rc-n02 segfaults in every attempt:
    three failed attempts, the same node and local rank each time, and the
    culprit's agent gives up after --max-restarts=2."""
    name = "tr_restart_recurring"
    truth, expected = run_capture(name, tmp_path / name)
    bundle = tmp_path / name
    atts = check_attempts(truth, expected, name)
    assert [a["outcome"] for a in atts] == ["failed"] * 3
    assert {(a["verdict"]["kind"], a["verdict"]["host"], a["verdict"]["local_rank"]) for a in atts} == {
        ("crash", "rc-n02", 1)}
    culprit = agent_lines(bundle, "rc-n02")
    # the agent saw each of the three processes die of SIGSEGV, the same pids as truth
    died = re.compile(r"failed \(exitcode: -11\) local_rank: 1 \(pid: (\d+)\)")
    segv = [int(p) for l in culprit for p in died.findall(l)]
    assert segv == [a["verdict"]["pid"] for a in atts]
    assert sum("Fatal Python error: Segmentation fault" in l for l in culprit) == 3
    assert any("2/2 attempts left; will restart worker group" in l for l in culprit)
    assert any("1/2 attempts left; will restart worker group" in l for l in culprit)
    roots = [e for e in error_summaries("\n".join(culprit)) if e["section"] == "root"]
    assert roots and roots[0]["exitcode"] == -11 and roots[0]["host"] == "rc-n02"
    for i in range(3):
        assert list(bundle.glob(f"torchelastic/rc-n02/*/attempt_{i}/1/stderr.log")), i
    assert all(code != 0 for code in truth["agent_exit_codes"].values())
    text = read_all(bundle, "*.log")
    assert "Loading the checkpoint at step 5." in text and "Loading the checkpoint at step 10." in text
    assert_no_leak(bundle, name)


@pytest.mark.e2e
@pytest.mark.slow
def test_torchrun_elastic_node_lost_regroups_with_fewer_nodes(torch_ready, tmp_path):
    """--nnodes=2:3: a node dies, the two others re-rendezvous without it
    (world 6 -> 4) and complete from the checkpoint."""
    name = "tr_elastic_node_lost"
    truth, expected = run_capture(name, tmp_path / name)
    bundle = tmp_path / name
    atts = check_attempts(truth, expected, name)
    assert [a["outcome"] for a in atts] == ["failed", "completed"]
    assert (atts[0]["verdict"]["kind"], atts[0]["verdict"]["host"]) == ("node_failure", "el-n03")
    assert sorted(truth["attempts"][1]["nodes"]) == ["el-n01", "el-n02"]
    for host in ("el-n01", "el-n02"):
        lines = agent_lines(bundle, host)
        sizes = [int(m.group(1)) for l in lines for m in [re.search(r"\]\s+group_world_size=(\d+)$", l)] if m]
        assert sizes == [3, 2], (host, sizes)
    lost = agent_lines(bundle, "el-n03")
    assert not any("Root Cause" in l or "will restart" in l for l in lost)  # it died with its node
    text = read_all(bundle, "*.log")
    assert "world_size=4" in text and "Loading the checkpoint at step 10." in text
    assert truth["agent_exit_codes"]["el-n01"] == truth["agent_exit_codes"]["el-n02"] == 0
    assert_no_leak(bundle, name)


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("name", ["slurm_requeue_node_failure", "slurm_requeue_truncated"])
def test_slurm_requeue_after_node_failure(name, slurm_cluster, torch_ready, tmp_path):
    """--requeue: node n2 freezes, slurmctld requeues the job, which runs
    again (same id) on other nodes and completes from the checkpoint. With
    --open-mode=append the output file keeps both runs; with Slurm's default
    the requeued run truncates it."""
    truth, expected = run_capture(name, tmp_path / name)
    bundle = tmp_path / name
    atts = check_attempts(truth, expected, name)
    assert [a["outcome"] for a in atts] == ["failed", "completed"]
    assert (atts[0]["verdict"]["kind"], atts[0]["verdict"]["host"]) == ("node_failure", "n2")
    j = truth["job_id"]
    ctld = (bundle / "slurm" / "slurmctld.log").read_text()
    assert f"requeue job JobId={j} due to failure of node n2" in ctld
    assert f"Requeuing JobId={j}" in ctld
    runs = [r.split("|") for r in (bundle / "sacct_duplicates_P.txt").read_text().splitlines()[1:]
            if r.split("|")[0] == str(j)]
    assert [r[3] for r in runs] == ["NODE_FAIL", "COMPLETED"]
    assert "n2" not in runs[1][6] and runs[1][6] == truth["attempts"][1]["slurm_nodes"]
    assert re.search(r"\bRestarts=1\b", (bundle / "scontrol_show_job.txt").read_text())
    out = (bundle / f"slurm-{j}.out").read_text(errors="replace")
    starts = re.findall(rf"job {j}: 2 nodes \((\S+)\), 4 tasks", out)
    if SCENARIOS[name].get("open_mode") == "append":  # both runs' output, each run's first line
        assert starts[0] == "n[1-2]" and len(starts) == 2 and "n2" not in starts[1]
        assert f"*** JOB {j} ON n1 CANCELLED AT" in out and "DUE TO NODE FAILURE" in out
    else:  # truncated: only the second run is left
        assert len(starts) == 1 and starts[0] == runs[1][6] and out.startswith("[")
        assert "NODE FAILURE" not in out and "Node failure" not in out
    assert "Loading the checkpoint at step 5." in out and out.count("training finished steps=40") == 4
    assert_no_leak(bundle, name)
