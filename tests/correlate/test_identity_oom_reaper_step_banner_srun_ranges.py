"""Whom the text names, in the common failure families (issue 28, session 18).

Batch 13's dev excerpts at first sight missed where (1) a grep of the kernel's OOM report kept the
'invoked oom-killer' headers (the allocating task, not the victim) and the reaper's line, the only one naming
the victim; (2) slurmstepd's step banner reached the job's stderr behind the log's bracketed time with no
'[JOB.STEP] ' tag ('[time] error: *** STEP N.0 ON nid CANCELLED AT .. DUE TO TASK FAILURE ***'): read as a
generic daemon line, without its node; (3) the task missing from srun's Terminated ranges (the failed one) was
named without the node whose tasks surround it. Each case is written here from the emitter's source form, not
from the excerpt."""

from __future__ import annotations

from .fixtures import diagnose_files


def test_oom_reaper_line_names_the_victim_when_the_grep_kept_only_the_reports_headers(
        tmp_path, monkeypatch, catalog):
    # mm/oom_kill.c: dump_header pr_warn("%s invoked oom-killer: gfp_mask=%#x(%pGg), order=%d, oom_score_adj=%hd")
    # names the allocating task; oom_reap_task_mm pr_info("oom_reaper: reaped process %d (%s), now anon-rss:..")
    # names the victim the killer chose (the reaper only reaps a marked victim)
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"kern.log": (
        "Jun 03 11:20:07 gpu-w3 kernel: [88211.300114] Xorg invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE"
        "|__GFP_COMP), order=0, oom_score_adj=0\n"
        "Jun 03 11:20:07 gpu-w3 kernel: [88211.300131]  oom_kill_process.cold+0xb/0x10\n"
        "Jun 03 11:20:08 gpu-w3 kernel: [88212.871200] oom_reaper: reaped process 40077 (pt_main_thread), now "
        "anon-rss:0kB, file-rss:0kB, shmem-rss:0kB\n")})
    v = d["verdict"]
    assert v["kind"] == "oom", v
    assert (v["host"], v["pid"]) == ("gpu-w3", 40077), v


def test_step_banner_behind_the_logs_time_without_a_step_tag_names_its_node(tmp_path, monkeypatch, catalog):
    # slurmstepd's banner error("*** %s ON %s CANCELLED AT %s%s ***") as a site's job stderr shows it: the log's
    # '[%Y-%m-%dT%H:%M:%S.%3N] ' time and the level, no '[JOB.STEP] ' tag; the node is the stepd's own
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"slurm-5512.out": (
        "epoch 3 step 1200 loss 2.113\n"
        "[2026-02-10T08:01:44.120] error: *** JOB 5512 ON gpu-a12 CANCELLED AT 2026-02-10T08:01:44 DUE TO TIME "
        "LIMIT ***\n")})
    v = d["verdict"]
    assert v["kind"] == "time_limit", v
    assert v["host"] == "gpu-a12", v


def _srun_terminated(lines: list[tuple[str, str]]) -> str:
    # src/srun: error("%s: %s %s: %s", node, task_str ("task"/"tasks"), ranges, state) per node and state
    return "".join(f"srun: error: {node}: tasks {ranges}: Terminated\n" for node, ranges in lines) \
        + "srun: Force Terminated StepId=8841.0\n"


def test_the_task_missing_from_one_nodes_terminated_run_is_named_on_that_node_and_only_then(
        tmp_path, monkeypatch, catalog):
    (tmp_path / "inside").mkdir()
    (tmp_path / "edge").mkdir()
    d = diagnose_files(tmp_path / "inside", monkeypatch, catalog, {"job.err": _srun_terminated(
        [("gn07", "0-14,16-31"), ("gn08", "32-63")])})
    v = d["verdict"]
    assert (v["rank"], v["host"]) == (15, "gn07"), v
    # task 32 could be the last of gn07's block or the first of gn08's: neither is named
    d = diagnose_files(tmp_path / "edge", monkeypatch, catalog, {"job.err": _srun_terminated(
        [("gn07", "0-31"), ("gn08", "33-63")])})
    v = d["verdict"]
    assert v["rank"] == 32 and v["host"] is None, v


def test_a_dead_ray_node_names_the_actor_whose_died_error_places_it_there(tmp_path, monkeypatch, catalog):
    # gcs_node_manager.cc through the driver's warning: 'The node with node id: {id} and address: {ip} and node
    # name: {name} has been marked dead because the detector has missed too many heartbeats from it.'; then the
    # driver's ActorDiedError (python/ray/exceptions.py) behind print_worker_logs' '({actor} pid={pid}, ip={ip}) '
    # prefix: one '\t{field}: {value}' line per field, the pid and ip being the dead actor's, not the writer's
    prefix = "(TrainController pid=5120, ip=10.9.4.2) "
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"driver.log": (
        "(RayTrainWorker pid=6031, ip=10.9.4.7) step 410 loss 1.913\n"
        "2025-01-14 08:12:40,117\tWARNING worker.py:2010 -- The node with node id: 3f0c9a7e5b and address: 10.9.4.7 "
        "and node name: 10.9.4.7 has been marked dead because the detector has missed too many heartbeats from it.\n"
        + prefix + "2025-01-14 08:12:40,302\tERROR utils.py:42 -- The actor died unexpectedly before finishing this task.\n"
        + prefix + "\tclass_name: RayTrainWorker\n"
        + prefix + "\tactor_id: 9a1b2c3d4e5f60718293a4b501000000\n"
        + prefix + "\tpid: 6031\n"
        + prefix + "\tnamespace: 0c1d2e3f-4a5b-6c7d-8e9f-a0b1c2d3e4f5\n"
        + prefix + "\tip: 10.9.4.7\n")})
    v = d["verdict"]
    assert v["kind"] == "node_failure", v
    assert (v["host"], v["pid"]) == ("10.9.4.7", 6031), v
