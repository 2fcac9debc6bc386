"""A long run is a sequence of attempts (issue 27): segmentation, the attempt of every line, and one
verdict per failed attempt (ranktrace.correlate.attempts, incidents)."""

from __future__ import annotations

import datetime as dt

import pytest

from ranktrace.correlate import diagnose
from ranktrace.correlate.attempts import Sign, run_markers, segment, step_signs
from ranktrace.correlate.clock import align

from .fixtures import T0, ev, steps, store

HOSTS = {"n1": [0, 1], "n2": [2, 3]}


def t(s: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=s)


def launch(at: float, hosts=("n1", "n2"), delay: dict | None = None) -> list[dict]:
    """A torchrun agent's launch (or relaunch) on each host: rendezvous round, worker group start."""
    out = []
    for h in hosts:
        d = (delay or {}).get(h, 0.0)
        out.append(ev(at + d, "[default] Rendezvous'ing worker group", kind="rdzv_join", host=h, pid=100,
                      file=f"{h}.log"))
        out.append(ev(at + d + 2, "[default] Starting worker group", kind="worker_start", host=h, pid=100,
                      file=f"{h}.log"))
    return out


def restart_notice(at: float, host: str) -> dict:
    return ev(at, "[default] Worker group FAILED. 2/3 attempts left; will restart worker group",
              kind="worker_failed", host=host, pid=100, file=f"{host}.log")


def crash(at: float, host: str, rank: int) -> list[dict]:
    """Rank `rank` raises; its peers then lose it (the cascade)."""
    out = [ev(at, "RuntimeError: CUDA error: an illegal memory access was encountered", kind="python_exception",
              host=host, rank=rank, file=f"{host}.log")]
    for h, ranks in HOSTS.items():
        for r in ranks:
            if r != rank:
                out.append(ev(at + 5, "RuntimeError: Connection closed by peer", kind="peer_closed", host=h,
                              rank=r, file=f"{h}.log"))
    return out


def two_attempts(resume_at: float = 260, **kw) -> list[dict]:
    """Attempt 1 trains 40 steps and rank 3 crashes; the agents restart the group; attempt 2 trains on
    (from the checkpoint at step 30) to the end."""
    return (launch(0) + steps(HOSTS, 40, step_time=5.0, start=10) + crash(212, "n2", 3)
            + [restart_notice(230, "n1"), restart_notice(231, "n2")]
            + launch(240, **kw) + steps(HOSTS, 30, step_time=5.0, start=resume_at)
            + [ev(420 + i, "[default] worker group successfully finished.", kind="worker_group_done", host=h,
                  pid=100, file=f"{h}.log") for i, h in enumerate(HOSTS)])


def test_a_restarted_run_is_two_attempts_each_with_its_own_outcome():
    d = diagnose(store(two_attempts()))
    att = d["attempts"]
    assert [a["outcome"] for a in att] == ["failed", "completed"]
    assert att[0]["verdict"]["kind"] == "exception" and att[0]["verdict"]["rank"] == 3
    assert att[0]["verdict"]["host"] == "n2"
    assert "verdict" not in att[1]
    assert att[1]["start"].startswith(t(240).isoformat()[:19])
    # the top-level verdict is the failed attempt's, and says which attempt it is
    assert d["verdict"]["kind"] == "exception" and d["verdict"]["rank"] == 3 and d["verdict"]["attempt"] == 1


def test_every_line_of_the_aligned_view_knows_its_attempt():
    con = store(two_attempts())
    diagnose(con)
    got = dict(con.execute("SELECT attempt, count(*) FROM aligned_events GROUP BY 1").fetchall())
    before = con.execute("SELECT count(*) FROM aligned_events WHERE ats < ?", [t(240)]).fetchone()[0]
    assert set(got) == {1, 2}
    assert got[1] == before   # the restart notices (t=230) stay with the attempt that failed
    groups = dict(con.execute("SELECT attempt, sum(n) FROM aligned_groups GROUP BY 1").fetchall())
    assert groups == got      # the groups are split where the lines are


def test_a_warning_survived_only_after_the_restart_is_still_the_cause_of_its_attempt():
    """Survival is judged within an attempt: rank 3's progress after the restart proves nothing about
    the attempt that died with its error."""
    d = diagnose(store(two_attempts()))
    assert d["attempts"][0]["verdict"]["rank"] == 3
    assert d["attempts"][0]["verdict"]["confidence"] >= 0.6


def test_a_host_whose_agent_restarts_later_keeps_its_teardown_in_the_attempt_before():
    """n2's agent relaunches 40 s after n1's: its SIGTERM to its workers at +20 s is the old attempt's."""
    evs = two_attempts(resume_at=290, delay={"n2": 40.0}) + [
        ev(260, "Sending process 4242 closing signal SIGTERM", kind="sigterm_sent", host="n2", pid=100,
           file="n2.log")]
    con = store(evs)
    diagnose(con)
    got = con.execute("SELECT attempt FROM aligned_events WHERE kind = 'sigterm_sent'").fetchall()
    assert got == [(1,)]


def test_a_pod_log_of_several_ranks_is_split_at_its_nodes_cut():
    """n2's agent relaunches 40 s after n1's; its pod's log (ranks 2 and 3, no host in its lines: the
    pod's node says it) holds their teardown at +20 s: the old attempt's, in the groups as in the lines."""
    pod = "var/log/pods/ml_worker-1_0/pytorch/0.log"
    evs = two_attempts(resume_at=290, delay={"n2": 40.0}) + [
        ev(5, 'Successfully assigned ml/worker-1 to n2', host="n2", pod="worker-1", file="kubelet.log"),
        ev(200, "[rank2] step 40 loss 0.5", kind="progress", rank=2, pod="worker-1", file=pod),
        ev(260, "Sending process 4242 closing signal SIGTERM", kind="sigterm_sent", rank=3, pod="worker-1",
           file=pod)]
    con = store(evs)
    diagnose(con)
    assert con.execute("SELECT host, attempt FROM aligned_events WHERE kind = 'sigterm_sent'").fetchall() \
        == [("n2", 1)]
    assert con.execute("SELECT attempt FROM aligned_groups WHERE kind = 'sigterm_sent'").fetchall() == [(1,)]


def test_a_rendezvous_whose_nodes_arrive_minutes_apart_is_one_attempt():
    evs = launch(0, hosts=("n1",)) + launch(600, hosts=("n2",)) + steps(HOSTS, 20, step_time=5.0, start=610)
    d = diagnose(store(evs))
    assert len(d["attempts"]) == 1


def one_launch_with_pids(n: int = 40) -> list[dict]:
    """One launch; every rank (pid 500 + rank) writes n steps, 5 s apart."""
    return launch(0) + [ev(10 + 5 * k, f"[rank{r}] step {k} loss 0.5", kind="progress", host=h, rank=r,
                           pid=500 + r, file=f"{h}.log")
                        for k in range(1, n + 1) for h, ranks in HOSTS.items() for r in ranks]


def test_a_process_group_made_by_a_live_process_is_no_restart():
    """Evaluation makes a new communicator from the same processes: same pids, no new attempt."""
    evs = one_launch_with_pids() + [
        ev(11 + 5 * k, "comm 0x1 rank 0 nranks 4 - Init COMPLETE", kind="comm_init", host=h, rank=r,
           pid=500 + r, file=f"{h}.log") for k in (10, 20, 30) for h, ranks in HOSTS.items() for r in ranks]
    assert len(diagnose(store(evs))["attempts"]) == 1


def test_the_kernels_report_of_a_process_it_killed_is_no_new_process():
    """Rank 1's own lines carry no time; the kernel's OOM report names its pid in three timed lines: the
    process ended there, it did not begin."""
    evs = one_launch_with_pids()
    evs += [ev(None, "NCCL INFO comm 0x1 rank 1 nranks 4 - Init COMPLETE", host="n1", rank=1, pid=777,
               file="n1-r1.log")]
    evs += [dict(ev(212, text, kind=kind, host="n1", rank=1, pid=777, file="dmesg-n1.log"), format="kernel_dmesg")
            for text, kind in (("python invoked oom-killer: gfp_mask=0xcc0", "host_oom"),
                               ("Out of memory: Killed process 777 (python)", "host_oom"),
                               ("oom_reaper: reaped process 777 (python)", None))]
    assert len(diagnose(store(evs))["attempts"]) == 1


def test_new_processes_of_the_ranks_start_an_attempt_without_any_launcher_line():
    """srun starting python directly (no agent): the ranks' pids change after a failure."""
    evs = []
    for k in range(1, 31):
        for h, ranks in HOSTS.items():
            for r in ranks:
                evs.append(ev(10 + 5 * k, f"[rank{r}] step {k} loss 0.5", kind="progress", host=h, rank=r,
                              pid=500 + r, file=f"{h}.log"))
                evs.append(ev(1000 + 5 * k, f"[rank{r}] step {20 + k} loss 0.5", kind="progress", host=h,
                              rank=r, pid=900 + r, file=f"{h}.log"))
    evs.append(ev(170, "RuntimeError: boom", kind="python_exception", host="n1", rank=1, pid=501, file="n1.log"))
    d = diagnose(store(evs))
    assert len(d["attempts"]) == 2
    assert d["attempts"][0]["outcome"] == "failed" and d["attempts"][0]["verdict"]["rank"] == 1
    assert d["attempts"][1]["outcome"] != "failed"


def test_a_step_that_goes_back_for_a_whole_minute_is_a_resume():
    b = [{"host": "n1", "rank": 0, "file": None, "t": t(60 * i), "first_ats": t(60 * i), "lo": lo, "hi": hi,
          "first_file": "n1.log", "first_line": i} for i, (lo, hi) in enumerate([(1, 10), (11, 20), (21, 30),
                                                                                 (12, 18), (19, 25)])]
    got = step_signs(b)
    assert [s.t for s in got] == [t(180)] and "went back to step 12 from 30" in got[0].what
    # minutes that still hold the old steps (another counter printed alongside) are no resume
    b[3]["hi"], b[4]["hi"] = 31, 32
    assert step_signs(b) == []


def test_segment_without_signs_is_one_attempt_and_a_late_sign_joins_its_launch():
    assert len(segment([], [], [])) == 1
    signs = [Sign(t(0), "n1", "round", True), Sign(t(1000), "n1", "round", True),
             Sign(t(1100), "n1", "pid", False)]   # the new processes write 100 s after their agent's round
    got = segment(signs, [t(300), t(600)], [t(900)])
    assert len(got) == 2 and got[1].start == t(1000) and got[1].cuts == {"n1": t(1000)}


def test_a_step_back_a_step_after_a_new_hosts_first_step_joins_its_launch():
    """A resubmitted job on one old and one new host: the new host's ranks have no step to go back from, so
    their first step (a second before the old host's step back) is progress, not a sign; it is the resume
    itself, not work that separates the step back from its launch."""
    signs = [Sign(t(0), "n1", "round", True), Sign(t(1000), "n1", "launch", True), Sign(t(1000), "n3", "launch", True),
             Sign(t(1073.2), "n1", "step", False)]
    progress = [t(x) for x in range(60, 600, 10)] + [t(1072), t(1075), t(1077)]   # buckets: whole seconds
    got = segment(signs, progress, [t(900)])
    assert len(got) == 2 and got[1].start == t(1000)


def test_the_same_node_failing_in_two_attempts_is_called_out_with_a_drain():
    evs = (launch(0) + steps(HOSTS, 20, step_time=5.0, start=10) + crash(112, "n2", 3)
           + [restart_notice(130, "n1"), restart_notice(131, "n2")]
           + launch(140) + steps(HOSTS, 20, step_time=5.0, start=150) + crash(252, "n2", 3))
    d = diagnose(store(evs))
    assert [a["outcome"] for a in d["attempts"]] == ["failed", "failed"]
    assert d["recurrence"] and d["recurrence"][0]["host"] == "n2" and d["recurrence"][0]["attempts"] == [1, 2]
    assert d["verdict"]["attempt"] == 2 and "1 earlier incident" in d["verdict"]["summary"]
    # no progress past the step the first attempt had reached: stop restarting
    assert d["stop"] and d["stop"]["attempts"] == [1, 2]


def test_one_attempt_runs_are_diagnosed_as_before():
    evs = launch(0) + steps(HOSTS, 20, step_time=5.0, start=10) + crash(112, "n2", 3)
    con = store(evs)
    align(con)
    d = diagnose(con)
    assert len(d["attempts"]) == 1 and d["attempts"][0]["outcome"] == "failed"
    assert d["verdict"]["rank"] == 3 and "attempt" not in d["verdict"]


def test_ingest_stores_the_attempts_and_events_aligned_gives_every_line_its_attempt():
    from ranktrace.store import refresh_summaries
    con = store(two_attempts())
    refresh_summaries(con)   # what every ingest ends with
    got = con.execute("SELECT attempt, outcome, start FROM attempts ORDER BY attempt").fetchall()
    assert [(a, o) for a, o, _ in got] == [(1, "failed"), (2, "completed")] and got[1][2] == t(240)
    per = dict(con.execute("SELECT attempt, count(*) FROM events_aligned GROUP BY 1").fetchall())
    assert per[1] == con.execute("SELECT count(*) FROM events WHERE ts < ?", [t(240)]).fetchone()[0]
    assert sum(per.values()) == con.execute("SELECT count(*) FROM events").fetchone()[0]
    # diagnose takes the groups ingest split by attempt as they are, and finds the same attempts
    d = diagnose(con)
    assert [a["outcome"] for a in d["attempts"]] == ["failed", "completed"]


def test_a_host_that_does_not_relaunch_stays_in_its_attempt():
    """n2 froze; the job is relaunched on n1 and n3. What the thawed n2 writes later (its daemon
    reports the old job aborted) is the old attempt's, not a failure of the new one."""
    evs = (launch(0) + steps(HOSTS, 20, step_time=5.0, start=10) + crash(112, "n2", 3)
           + [restart_notice(130, "n1")] + launch(140, hosts=("n1", "n3"))
           + steps({"n1": [0, 1], "n3": [2, 3]}, 20, step_time=5.0, start=160)
           + [ev(200, "job_manager exiting with aborted job", host="n2", file="n2-slurmd.log")]
           + [ev(270 + i, "[default] worker group successfully finished.", kind="worker_group_done", host=h,
                 pid=100, file=f"{h}.log") for i, h in enumerate(("n1", "n3"))])
    con = store(evs)
    d = diagnose(con)
    assert [a["outcome"] for a in d["attempts"]] == ["failed", "completed"]
    assert con.execute("SELECT attempt FROM aligned_events WHERE message LIKE 'job_manager%'").fetchall() == [(1,)]


def test_lines_without_a_time_are_read_for_the_leading_attempt_only():
    """A snapshot taken after the fact (sacct, scontrol show node) can be about any attempt: the
    completed attempt 2 is not failed by it, the failed attempt 1 (the verdict) reads it."""
    evs = two_attempts() + [ev(None, "NodeName=n2 State=DOWN+NOT_RESPONDING Reason=Not responding",
                                kind="node_failure", host="n2", file="scontrol_show_node.txt")]
    d = diagnose(store(evs))
    assert [a["outcome"] for a in d["attempts"]] == ["failed", "completed"]
    assert any(e["file"] == "scontrol_show_node.txt" for e in d["evidence"]) or \
        "n2" in (d["verdict"]["host"] or "")


def test_a_relaunch_that_finds_the_rendezvous_closed_is_no_attempt():
    """The agent that hosted the rendezvous gave up after its last restart; the others' next round
    meets a closed rendezvous: the run ended with the attempt before."""
    evs = (two_attempts()[:-2] + crash(420, "n2", 3)
           + [restart_notice(440, "n1"), ev(440.5, "[default] Rendezvous'ing worker group", kind="rdzv_join",
                                             host="n1", pid=100, file="n1.log"),
              ev(441, "torch.distributed.elastic.rendezvous.api.RendezvousClosedError", kind="rdzv_timeout",
                 host="n1", pid=100, file="n1.log")])
    d = diagnose(store(evs))
    assert [a["outcome"] for a in d["attempts"]] == ["failed", "failed"]
    assert d["verdict"]["kind"] == "exception" and d["verdict"]["rank"] == 3


@pytest.mark.parametrize("out_job", ["7", "7_1"], ids=["slurm-7.out", "slurm-7_1.out"])
def test_a_requeued_slurm_job_is_two_attempts_and_other_jobs_are_not(out_job):
    """slurmctld allocates job 7 twice (a requeue after n2 failed); job 9 of another user runs meanwhile.
    The training output's file may name the job as an array task (slurm-%A_%a.out): still job 7."""
    ctl = "slurmctld.log"
    evs = ([ev(0, "sched: Allocate JobId=7 NodeList=n[1-2] #CPUs=4 Partition=gpu", kind="job_state",
               file=ctl, job_id="7"),
            ev(60, "sched: Allocate JobId=9 NodeList=n5 #CPUs=1 Partition=gpu", kind="job_state", file=ctl,
               job_id="9")]
           + [ev(1 + i, "launch task StepId=7.0 request from UID:0", kind="step_start", host=h, job_id="7",
                 file=f"slurmd-{h}.log") for i, h in enumerate(HOSTS)]
           + [dict(e, job_id=out_job) for e in steps(HOSTS, 20, step_time=5.0, start=10)]
           + [ev(115, "Nodes n2 not responding, setting DOWN", kind="node_failure", file=ctl),
              ev(120, "Requeuing JobId=7", kind="job_requeue", file=ctl, job_id="7"),
              ev(300, "sched: Allocate JobId=7 NodeList=n[3-4] #CPUs=4 Partition=gpu", kind="job_state",
                 file=ctl, job_id="7"),
              ev(400, "sched: Allocate JobId=9 NodeList=n5 #CPUs=1 Partition=gpu", kind="job_state", file=ctl,
                 job_id="9")]
           + [ev(301 + i, "launch task StepId=7.0 request from UID:0", kind="step_start", host=h, job_id="7",
                 file=f"slurmd-{h}.log") for i, h in enumerate(("n3", "n4"))]
           + [dict(e, job_id=out_job) for e in steps({"n3": [0, 1], "n4": [2, 3]}, 20, step_time=5.0, start=310)])
    d = diagnose(store(evs))
    assert [a["start"][:19] for a in d["attempts"]] == [t(0).isoformat()[:19], t(300).isoformat()[:19]]
    assert d["attempts"][0]["outcome"] == "failed"


def test_a_launch_line_told_again_while_the_job_trains_is_the_same_launch():
    # a scheduler that logs its allocation every few seconds (hostile or odd input): one launch, not
    # one attempt per line; the same line after a failure is a relaunch
    progress = [t(x) for x in range(10, 3000, 5)]
    again = [Sign(t(x), None, "launch", True, "slurmctld.log", x, "Slurm job 4242 starts", None)
             for x in range(0, 2000, 5)]
    assert len(segment(again, progress, [])) == 1
    after = again + [Sign(t(2500), None, "launch", True, "slurmctld.log", 2500, "Slurm job 4242 starts", None)]
    got = segment(after, progress, [t(2200)])
    assert [a.id for a in got] == [1, 2] and got[1].start == t(2500)


def test_a_scheduler_that_repeats_an_allocation_gives_its_first_telling_and_the_one_after_a_failure():
    # the query hands Python only the tellings _retold can keep: 82 allocation lines, two launches
    ctl = "slurmctld.log"
    alloc = [ev(x, "sched: Allocate JobId=7 NodeList=n[1-2] #CPUs=4 Partition=gpu", kind="job_state", file=ctl,
                job_id="7") for x in [*range(0, 205, 5), *range(240, 445, 5)]]
    evs = (alloc + [dict(e, job_id="7") for e in steps(HOSTS, 38, step_time=5.0, start=10)] + crash(212, "n2", 3)
           + [dict(e, job_id="7") for e in steps(HOSTS, 30, step_time=5.0, start=250)])
    con = store(evs)
    d = diagnose(con)
    assert [a["start"][:19] for a in d["attempts"]] == [t(0).isoformat()[:19], t(240).isoformat()[:19]]
    told = run_markers(con, {"7"})
    assert [(m["ats"], m["signal"]) for m in told] == [(t(0), "launch"), (t(240), "launch")]
    assert run_markers(con, {"8"}) == []


def test_every_hosts_launcher_in_one_console_is_one_launch():
    # DeepSpeed over pdsh: each node's launch.py writes its launch line into the one console (pdsh
    # prefixes the host); eight nodes' lines seconds apart are one launch, not eight, even with a failure
    # line among them (a store connect refused while the nodes come up)
    signs = [Sign(t(i), f"worker-{i}", "launch", True, "train.log", 10 + i, "a launcher started", None)
             for i in range(8)]
    assert len(segment(signs, [t(x) for x in range(60, 600, 10)], [t(3.5)])) == 1
    relaunch = signs + [Sign(t(900 + i), f"worker-{i}", "launch", True, "train.log", 900 + i, "a launcher started", None)
                        for i in range(8)]
    got = segment(relaunch, [t(x) for x in range(60, 600, 10)], [t(700)])
    assert [a.id for a in got] == [1, 2] and got[1].start == t(900)


def test_survival_reads_once_per_attempt_scope_and_again_when_the_scope_changes(monkeypatch):
    """survival.healthy_until / training_stop are asked many times per attempt: read once per scope
    (attempts.scope starts a new memo), each attempt's own answer, equal to a fresh read."""
    from ranktrace.correlate import survival
    from ranktrace.correlate.attempts import find_attempts, scope
    con = store(two_attempts())
    align(con)
    assert len(find_attempts(con)) == 2
    fresh = {}
    for a in (1, 2):
        scope(con, a)
        fresh[a] = (survival._healthy_until(con), survival._training_stop(survival._spans(con)))
    assert fresh[1] != fresh[2]   # the two attempts stop training at different times
    reads = []
    real = survival.query
    monkeypatch.setattr(survival, "query", lambda c, name, *a, **k: reads.append(name) or real(c, name, *a, **k))
    for a in (1, 2, 1):
        scope(con, a)
        n = len(reads)
        for _ in range(3):
            assert (survival.healthy_until(con), survival.training_stop(con)) == fresh[a]
        got = reads[n:]   # progress_spans (and host_activity: untimed progress?), each once in this scope
        assert "progress_spans" in got and len(got) == len(set(got))
    scope(con, None)
    whole = survival.training_stop(con)
    assert whole[0] == max(fresh[1][1][0], fresh[2][1][0])


def test_survival_without_a_scope_reads_every_time(monkeypatch):
    """Views made by hand (no attempts.scope) are never answered from a memo: they may change."""
    from ranktrace.correlate import survival
    con = store(two_attempts())
    align(con)   # scopes the views: a memo for this connection
    survival._SCOPED.pop(con, None)
    reads = []
    real = survival.query
    monkeypatch.setattr(survival, "query", lambda c, name, *a, **k: reads.append(name) or real(c, name, *a, **k))
    survival.healthy_until(con)
    survival.healthy_until(con)
    assert len(reads) == 2


def test_a_slurm_controller_log_gets_a_clock_of_its_own_from_its_allocations():
    """slurmctld's log names no host: its clock is fixed by the jobs it allocated against each job's first
    line on its nodes. Here it runs 74 s ahead of the nodes; the requeue's allocation (t=300 on the nodes'
    clock, 374 on its own) starts the second attempt at 300, and its kill of the first run lands at its
    stepds' cancel, after the last step (a cancel, not a failure before it)."""
    ctl, skew = "slurmctld.log", 74.0
    alloc = [ev(skew + t0, f"sched: Allocate JobId=7 NodeList=n[1-2] #CPUs=4 Partition=gpu", kind="job_state",
                file=ctl, job_id="7") for t0 in (0, 300)]
    evs = (alloc
           + [ev(1 + i, "launch task StepId=7.0 request from UID:0", kind="step_start", host=h, job_id="7",
                 file=f"slurmd-{h}.log") for i, h in enumerate(HOSTS)]
           + steps(HOSTS, 20, step_time=5.0, start=10)
           + [ev(skew + 111, "_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=7 uid 1000", kind="cancelled", file=ctl,
                 job_id="7")]
           + [ev(111.5, "*** STEP 7.0 ON %s CANCELLED AT 2026-03-02T03:01:51 ***" % h, kind="step_cancelled",
                 host=h, job_id="7", file=f"slurmd-{h}.log") for h in HOSTS]
           + [ev(301 + i, "launch task StepId=7.0 request from UID:0", kind="step_start", host=h, job_id="7",
                 file=f"slurmd-{h}.log") for i, h in enumerate(HOSTS)]
           + steps(HOSTS, 20, step_time=5.0, start=310))
    facts = {"slurm_alloc": [{"event_id": e["event_id"], "job_id": "7", "nodelist": "n[1-2]", "cpus": 4,
                              "partition": "gpu", "bf_job_id": None, "bf_partition": None, "bf_nodelist": None}
                             for e in alloc]}
    con = store(evs, facts)
    d = diagnose(con)
    clock = {c["host"]: c for c in d["clock"]}
    assert abs(clock["@" + ctl]["offset_s"] - skew) <= 1.5
    starts = [dt.datetime.fromisoformat(a["start"].replace("Z", "")) for a in d["attempts"]]
    assert len(starts) == 2 and all(abs((s - t(k)).total_seconds()) <= 1.5 for s, k in zip(starts, (0, 300)))
    kill = con.execute("SELECT ats FROM aligned_events WHERE kind = 'cancelled'").fetchone()[0]
    assert abs((kill - t(111)).total_seconds()) <= 1.5
    assert d["attempts"][0]["outcome"] == "cancelled"


def test_a_torchrun_log_file_with_no_time_is_of_the_attempt_its_directory_last_wrote_in():
    """torchrun empties attempt_<k>/ whenever it starts a worker group, so rank 0's stdout (progress bars,
    no time of their own) is of the same start as its timed sibling stderr: the last attempt, here, which
    trains to the end of the logs; the peer complaint in it was survived, and nothing failed."""
    d0 = "job/attempt_0/0"
    evs = (launch(0) + steps(HOSTS, 40, step_time=5.0, start=10) + crash(212, "n2", 3)
           + [restart_notice(230, "n1"), restart_notice(231, "n2")] + launch(240)
           + [ev(250, "[c10d] The client socket has connected to [::ffff:10.0.0.1]:29500", host="n1", rank=0,
                 file=f"{d0}/stderr.log"),
              ev(262, "socketProgressOpt: Call to recv from n2<43000> failed : Connection reset by peer",
                 kind="peer_closed", host="n1", rank=0, file=f"{d0}/stderr.log")]
           + [ev(None, f"Epoch 0:  {k}%|##| {k}/100 [00:{k:02d}<01:00, 1.0it/s]", kind="progress", host="n1",
                 rank=0, file=f"{d0}/stdout.log", step=k) for k in range(30, 90)])
    con = store(evs)
    d = diagnose(con)
    assert [a["outcome"] for a in d["attempts"]] == ["failed", "running"]
    got = con.execute(f"SELECT DISTINCT attempt FROM aligned_events WHERE file = '{d0}/stdout.log'").fetchall()
    assert got == [(2,)]


def test_a_slurm_controllers_clock_is_read_off_the_jobs_batch_host():
    """The batch host starts the job as soon as it is allocated; the other nodes only when the script
    reaches srun (17 s later here). Read off the nodes that started last, the controller's clock would be
    17 s off; the batch host's 'Launching batch job' is the allocation's moment."""
    ctl, skew = "slurmctld.log", 28.5
    nodes = {"n1": [0, 1], "n2": [2, 3], "n3": [4, 5]}
    alloc = [ev(skew, "sched: Allocate JobId=7 NodeList=n[1-3] #CPUs=6 Partition=gpu", kind="job_state",
                file=ctl, job_id="7")]
    evs = (alloc
           + [ev(0.2, "Launching batch job 7 for UID 1000", kind="step_start", host="n1", job_id="7",
                 file="slurmd-n1.log")]
           + [ev(17 + i * 0.1, "launch task StepId=7.0 request from UID:1000", kind="step_start", host=h,
                 job_id="7", file=f"slurmd-{h}.log") for i, h in enumerate(nodes)]
           + steps(nodes, 20, step_time=5.0, start=30))
    facts = {"slurm_alloc": [{"event_id": e["event_id"], "job_id": "7", "nodelist": "n[1-3]", "cpus": 6,
                              "partition": "gpu", "bf_job_id": None, "bf_partition": None, "bf_nodelist": None}
                             for e in alloc]}
    clock = {c["host"]: c for c in align(store(evs, facts))}
    assert abs(clock["@" + ctl]["offset_s"] - skew) <= clock["@" + ctl]["uncertainty_s"] <= 1.5
