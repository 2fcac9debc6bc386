"""A job still training when its lines end (issue 27's false alarms): the logs end while every rank
trains, or the job was stopped from outside (its agents' death signal, the scheduler's cancel) while it
trained. What it logged before is survived, the lines after the stop are its teardown, and a file's order
proves survival where its lines carry no time of their own (ranktrace.correlate.survival)."""

from __future__ import annotations

from ranktrace.correlate import diagnose
from ranktrace.correlate.attempts import Sign, find_attempts, scope, segment
from ranktrace.correlate.clock import align
from ranktrace.correlate.detectors import run_all
from ranktrace.correlate.survival import demote_survived, trained_to_the_end

from .fixtures import ev, steps, store
from .test_attempts import HOSTS, launch, t


def port_error(at: float | None, host: str = "n1", rank: int = 0, **kw) -> dict:
    return ev(at, f"{host}:4242:4250 [{rank}] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error",
              kind="network_error", host=host, rank=rank, file=f"{host}.log", **kw)


def death_signals(at: float) -> list[dict]:
    """torch's elastic agent on each host, SIGTERMed from outside (elastic/agent/server/api.py)."""
    return [ev(at + i * 0.2, "Received 15 death signal, shutting down workers", kind="signal_received", host=h,
               pid=100, file=f"{h}.log", role="symptom", severity="warning") for i, h in enumerate(HOSTS)]


def teardown(at: float) -> list[dict]:
    return [ev(at, "socketProgressOpt: Call to recv from n1<43001> failed : Connection reset by peer",
               kind="peer_closed", host="n2", rank=2, file="n2.log")]


def test_a_job_signalled_while_it_trained_was_cancelled_and_its_warning_survived():
    # 60 steps of 5 s; a port warning 80 s before the agents are SIGTERMed (within the 120 s survival
    # window, far more than five steps); the peers' closed sockets after the signal are its teardown
    evs = launch(0) + steps(HOSTS, 60, step_time=5.0, start=10) + [port_error(230)] + death_signals(311) + teardown(313)
    doc = diagnose(store(evs))
    v = doc["verdict"]
    assert v["kind"] == "cancelled" and v["rank"] is None
    assert "signalled to stop while the job was still training" in v["summary"]
    # the stop is the only candidate: nothing failed before it, the closed sockets came after it
    assert [h["kind"] for h in doc["hypotheses"]] == ["cancelled"]


def test_a_signal_long_after_training_stopped_is_no_outside_stop():
    # the job hung at step 30 (t=160) and was SIGTERMed 10 minutes later: it had stopped of itself
    evs = launch(0) + steps(HOSTS, 30, step_time=5.0, start=10) + [port_error(158)] + death_signals(760) + teardown(762)
    con = store(evs)
    align(con)
    find_attempts(con)
    scope(con, 1)
    assert trained_to_the_end(con) is None
    assert diagnose(store(evs))["verdict"]["kind"] != "cancelled"


def test_a_complaint_every_rank_trained_past_before_the_logs_end_is_no_failure():
    # the logs end while every rank trains; rank 2 complained between the last two steps
    evs = launch(0) + steps(HOSTS, 60, step_time=5.0, start=10) + teardown(306)
    doc = diagnose(store(evs))
    assert [a["outcome"] for a in doc["attempts"]] == ["running"]
    assert doc["verdict"]["rank"] is None and "no failure line" in doc["verdict"]["summary"]
    assert not doc["cascade"]


def _findings(evs):
    con = store(evs)
    align(con)
    find_attempts(con)
    scope(con, 1)
    fs = run_all(con)
    demote_survived(con, fs)
    return [f for f in fs if f.kind == "network_error"]


def test_a_line_without_a_time_is_survived_by_the_steps_its_rank_wrote_after_it_in_the_same_file():
    # a torchrun console: the agent's lines have times, the workers' do not (each takes the last timed
    # line's: t=0); rank 0 wrote 40 steps after its port warning, then the agents were signalled
    untimed = [ev(0.0, f"[rank{r}] step {k} loss 0.5", kind="progress", host="n1", rank=r, file="n1.log",
                  ts_kind="interpolated") for k in range(1, 61) for r in (0, 1)]
    for i, e in enumerate(untimed):
        e["line"] = 10 + 2 * i
    warn = port_error(0.0, ts_kind="interpolated", line=10 + 2 * 40 + 1)   # after step 20 of both ranks
    evs = [ev(0.0, "[default] Starting worker group", kind="worker_start", host="n1", pid=100, file="n1.log", line=1)]
    evs += untimed + [warn, ev(900.0, "Received 15 death signal, shutting down workers", kind="signal_received",
                               host="n1", pid=100, file="n1.log", line=500, role="symptom", severity="warning")]
    (f,) = _findings(evs)
    assert f.extra.get("survived") and "more steps after it in the same file" in f.why
    # the same warning two steps before the file's last step is not proven survived by the file
    late = [e for e in evs if e is not warn] + [dict(warn, line=10 + 2 * 116 + 1)]   # after step 58
    (g,) = _findings(late)
    assert "more steps after it in the same file" not in g.why
    # another process's steps after it prove nothing (a stdout buffer flushed at exit reaches the console late)
    other = [e for e in evs if e is not warn] + [dict(warn, rank=5)]
    (h,) = _findings(other)
    assert "more steps after it in the same file" not in h.why


def test_a_network_error_its_process_wrote_a_few_steps_after_is_survived_whatever_the_window():
    # rank 0's port warning carries no time of its own (it shows step 50's); rank 0 wrote 10 more steps
    # after it in its file (50 s: under the survival window), then rank 3 crashed and the others timed out
    # 10 minutes later (the job stopped of itself: the window's steps are asked for). A port down for good
    # fails the next collective through it: five steps of its own process after it say it was a flap.
    # Another kind of cause with the same steps after it still needs the window's worth.
    evs = launch(0) + steps(HOSTS, 60, step_time=5.0, start=10)
    line_50 = next(e["line"] for e in evs if e["rank"] == 0 and e["message"].startswith("[rank0] step 50 "))
    crash = [ev(320, "Traceback (most recent call last): RuntimeError: CUDA error: an illegal memory access",
                kind="exception", host="n2", rank=3, file="n2.log")]
    crash += [ev(920 + r, f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=600, "
                 "OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.", kind="collective_timeout",
                 host=h, rank=r, file=f"{h}.log") for h, rs in HOSTS.items() for r in rs if r != 3]
    warn = port_error(260, ts_kind="interpolated", line=line_50 + 1)
    (f,) = _findings(evs + [warn] + crash)
    assert f.extra.get("survived") and "wrote 10 more steps after it in the same file" in f.why
    other = dict(warn, kind="gpu_fault")
    con = store(evs + [other] + crash)
    align(con)
    find_attempts(con)
    scope(con, 1)
    fs = run_all(con)
    demote_survived(con, fs)
    g = next(x for x in fs if x.evidence and x.evidence[0] == other["event_id"])
    assert not g.extra.get("survived"), g.why


def test_another_hosts_restart_notice_joins_the_new_launch_instead_of_ending_it():
    # elastic agents follow one another into a new round within seconds: n1 starts round 2, then n2
    # announces its restart and joins it; one relaunch, not two
    signs = [Sign(t(0), "n1", "round", True, "n1.log", 1), Sign(t(1), "n2", "round", True, "n2.log", 1),
             Sign(t(1000), "n1", "round", True, "n1.log", 90), Sign(t(1003), "n2", "restart", True, "n2.log", 88),
             Sign(t(1004), "n2", "round", True, "n2.log", 91)]
    got = segment(signs, [t(x) for x in range(30, 900, 5)], [t(950)])
    assert [a.id for a in got] == [1, 2] and got[1].start == t(1000)
    # a host's notice after its own round of the launch ends that launch (it ran, silently, and failed)
    own = signs[:3] + [Sign(t(1003), "n1", "restart", True, "n1.log", 95), Sign(t(1004), "n1", "round", True, "n1.log", 96)]
    assert len(segment(own, [t(x) for x in range(30, 900, 5)], [t(950)])) == 3


def test_a_line_without_a_time_was_written_before_the_next_timed_line_of_its_file_not_the_earliest():
    # an srun console: n2's line after it reads earlier than n1's next line (another clock): the bound
    # is the next line's time, not the earliest of those that follow
    from ranktrace.correlate.detectors.base import Finding
    from ranktrace.correlate.survival import _latest_times
    cause = ev(50.0, "0: AssertionError: loss is nan", kind="python_exception", host="n1", rank=0, file="out",
               line=10, ts_kind="interpolated")
    evs = [ev(50.0, "0: step 40", kind="progress", host="n1", rank=0, file="out", line=9), cause,
           ev(60.0, "0: [E] watchdog", kind="collective_timeout", host="n1", rank=0, file="out", line=11),
           ev(20.0, "7: [E] watchdog", kind="collective_timeout", host="n2", rank=7, file="out", line=12)]
    con = store(evs)
    align(con)
    find_attempts(con)
    f = Finding(detector="first_cause", kind="exception", score=0.85, why="", rank=0, host="n1",
                time=t(50), evidence=[cause["event_id"]], extra={"ts_ok": False})
    assert _latest_times(con, [f]) == {id(f): t(60)}


def test_a_complaint_without_a_time_is_survived_by_the_steps_its_process_wrote_after_it():
    # n1's console: its workers' lines carry no time (each takes the last timed one's); rank 1 complains
    # of a reset connection after step 20, then writes 40 more steps; n2 trains to the end of the logs
    n2 = steps({"n2": [2, 3]}, 60, step_time=5.0, start=10)
    untimed = [ev(290.0, f"[rank{r}] step {k} loss 0.5", kind="progress", host="n1", rank=r, file="n1.log",
                  ts_kind="interpolated", line=10 + 2 * i + r) for i, k in enumerate(range(1, 61)) for r in (0, 1)]
    reset = ev(290.0, "n1:4242:4250 [1] misc/socket.cc:573 NCCL WARN socketProgressOpt: Call to recv from n2<43001> "
                      "failed : Connection reset by peer", kind="peer_closed", host="n1", rank=1, file="n1.log",
               ts_kind="interpolated", line=10 + 2 * 20 + 1)
    start = ev(0.0, "[default] Starting worker group", kind="worker_start", host="n1", pid=100, file="n1.log", line=1)
    con = store([start] + untimed + [reset] + n2)
    align(con)
    find_attempts(con)
    scope(con, 1)
    fs = run_all(con)
    demote_survived(con, fs)
    complaint = [f for f in fs if f.evidence == [reset["event_id"]]]
    assert complaint and all(f.extra.get("survived") and "more steps after it in the same file" in f.why
                             for f in complaint)
    assert [a["outcome"] for a in diagnose(store([start] + untimed + [reset] + n2))["attempts"]] == ["running"]


def test_complaints_without_a_time_that_their_ranks_trained_past_make_no_rank_silent():
    # every rank trains to the end; n1's ranks complained of a reset connection after step 20 in lines of
    # no time of their own (NCCL's WARN on a console: each takes a neighbour's time), then wrote 40 more
    # steps in the same file; the logs end 12 s after the last step (a checkpoint being saved: longer than
    # the last steps' slack, so nothing says the logs simply end while it trains). The ranks that wrote no
    # complaint are not "silent while their peers reported failures": the file's order says the
    # complaints were survived
    evs = launch(0) + steps(HOSTS, 60, step_time=5.0, start=10)
    step_20 = {e["rank"]: e["line"] for e in evs if e.get("message", "").startswith("[rank") and " step 20 " in e["message"]}
    resets = [ev(120.0, f"n1:4242:4250 [{r}] misc/socket.cc:573 NCCL WARN socketProgressOpt: Call to recv from "
                        "n2<43001> failed : Connection reset by peer", kind="peer_closed", host="n1", rank=r,
                 file="n1.log", ts_kind="interpolated", line=step_20[r] + 1) for r in HOSTS["n1"]]
    saved = ev(322.0, "Finished saving the checkpoint in 11.31 seconds.", host="n2", rank=HOSTS["n2"][0], file="n2.log")
    con = store(evs + resets + [saved])
    align(con)
    assert trained_to_the_end(con) is None   # the case: the logs end too long after the last step
    doc = diagnose(store(evs + resets + [saved]))
    assert [a["outcome"] for a in doc["attempts"]] == ["running"], doc["verdict"]["summary"]
    assert not any("wrote no error while" in h["why"] for h in doc["hypotheses"])


def test_a_port_that_blinked_as_the_logs_end_while_every_rank_trains_is_no_failure():
    # a port error two steps before the end of the logs, no IB work request failed after it: context
    evs = launch(0) + steps(HOSTS, 60, step_time=5.0, start=10) + [port_error(302)]
    doc = diagnose(store(evs))
    assert [a["outcome"] for a in doc["attempts"]] == ["running"]


def test_a_node_whose_kernel_locked_up_is_the_failed_node_named_by_its_own_line():
    # n2's kernel reports a CPU stuck (kernel/watchdog.c) and the job stops; n1's ranks then time out:
    # the node failed, and the lockup line's own host is that node (not a reporter of another)
    evs = (launch(0) + steps(HOSTS, 20, step_time=5.0, start=10)
           + [ev(112, "watchdog: BUG: soft lockup - CPU#51 stuck for 22s! [python:50727]", kind="kernel_lockup",
                 role="cause", host="n2", file="journal/n2.log")]
           + [ev(300 + r, f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=99, "
                          "OpType=ALLREDUCE, Timeout(ms)=120000) ran for 120001 milliseconds before timing out.",
                 kind="collective_timeout", host="n1", rank=r, file="n1.log") for r in (0, 1)])
    con = store(evs)
    align(con)
    find_attempts(con)
    scope(con, 1)
    (f,) = [f for f in run_all(con) if f.detector == "first_cause" and f.kind == "node_failure"]
    assert f.host == "n2" and f.direct
    v = diagnose(store(evs))["verdict"]
    assert v["kind"] == "node_failure" and v["host"] == "n2"


def _bars_to_the_end(n_bars: int = 30) -> list[dict]:
    """Rank 0's progress bars after its last timed step (Lightning / tqdm on a torchrun console: no time
    of their own, each takes the last timed line's), to the end of its file."""
    return [ev(210.0, f"Epoch 0:  {41 + k}%|####      | {410 + k}/1000 [28:14<34:48, 0.26it/s]", kind="progress",
               host="n1", rank=0, file="n1.log", ts_kind="interpolated") for k in range(n_bars)]


def test_progress_without_times_to_the_end_of_a_file_is_training_to_the_end():
    # timed steps to t=210, then rank 0's bars to the end of n1.log; n2 logs reset sockets until t=300,
    # 90 s (18 steps) after the last timed step: n1 is no half-dead node, the job was still training
    evs = launch(0) + steps(HOSTS, 40, step_time=5.0, start=10) + _bars_to_the_end() + teardown(280) + teardown(300)
    doc = diagnose(store(evs))
    assert [a["outcome"] for a in doc["attempts"]] == ["running"]
    assert not any(h["kind"] == "node_failure" for h in doc["hypotheses"])


def test_progress_without_times_proves_nothing_once_a_collective_stalled():
    # the same bars, but n2's ranks report a stalled collective after the last timed step: the job came
    # down, whenever the bars were written
    stall = [ev(300.0 + r, f"[rank{r}]:[E] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=412, "
                           "OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.",
                kind="collective_timeout", host="n2", rank=r, file="n2.log") for r in (2, 3)]
    evs = launch(0) + steps(HOSTS, 40, step_time=5.0, start=10) + _bars_to_the_end() + stall
    doc = diagnose(store(evs))
    assert [a["outcome"] for a in doc["attempts"]] == ["failed"]


def test_a_process_that_died_of_itself_just_before_the_schedulers_stop_was_not_stopped_from_outside():
    # rank 3 segfaults at its last step; 4 s later, within the stop's slack, the scheduler requeues the
    # job (its cancel is the answer to the death, not what ended a healthy job)
    segv = ev(311, "python[29658]: segfault at 18 ip 00007f3a2c1d4e5f sp 00007ffd1a2b3c40 error 4 in libnccl.so",
              kind="crash_signal", host="n2", rank=3, file="n2.log")
    cancel = ev(315, "*** JOB 7 ON n1 CANCELLED AT 2026-03-02T01:28:05 DUE TO JOB REQUEUE ***", kind="cancelled",
                host="n1", file="slurm-7.out")
    evs = launch(0) + steps(HOSTS, 60, step_time=5.0, start=10) + [segv, cancel] + teardown(330)
    con = store(evs)
    align(con)
    find_attempts(con)
    scope(con, 1)
    assert trained_to_the_end(con) is None
    v = diagnose(store(evs))["verdict"]
    assert (v["kind"], v["rank"]) == ("crash", 3)
    # the same stop with no death before it stays an outside stop
    con = store([e for e in evs if e is not segv])
    align(con)
    find_attempts(con)
    scope(con, 1)
    assert trained_to_the_end(con) == "stopped from outside"


def test_a_console_whose_bars_run_until_its_agents_death_signal_was_stopped_from_outside():
    # rank 0's Lightning bars on a torchrun console take the time of the last timed line before them (a
    # port warning 2 minutes before the stop): a lower bound. The file's order says the bars ran until
    # the agent was SIGTERMed, with nothing between them: a cancel, not the warning
    warn = port_error(100.0, line=5)
    bars = [ev(100.0, f"[0]:Epoch 0:   2%|          | {k}/2500 [0{k // 60}:{k % 60:02d}<141:59, 0.29it/s]",
               kind="progress", host="n1", rank=0, file="n1.log", ts_kind="interpolated", step=k, line=10 + k)
            for k in range(1, 74)]
    stop = ev(221.0, "Received 15 death signal, shutting down workers", kind="signal_received", host="n1",
              pid=100, file="n1.log", line=90, role="symptom", severity="warning")
    start = ev(0.0, "[default] Starting worker group", kind="worker_start", host="n1", pid=100, file="n1.log", line=1)
    evs = [start, warn] + bars + [stop]
    con = store(evs)
    align(con)
    find_attempts(con)
    scope(con, 1)
    assert trained_to_the_end(con) == "stopped from outside"
    assert diagnose(store(evs))["verdict"]["kind"] == "cancelled"
    # a complaint between the last bar and the stop: the file no longer says it trained until the stop
    late = evs[:-1] + [dict(port_error(100.0, line=85), ts_kind="interpolated"), stop]
    con = store(late)
    align(con)
    find_attempts(con)
    scope(con, 1)
    assert trained_to_the_end(con) is None


def test_bars_after_a_timed_progress_line_still_run_until_the_death_signal():
    # a resumed run's first step has a time of its own (t=20); rank 0's HF Trainer dicts after it carry none
    # (the last timed line's, a checkpoint save at t=100: a lower bound), then the agent is SIGTERMed at 221.
    # The timed step came before the bars: it says nothing against the file's order (a fresh generated run,
    # node_freeze/torchrun_node seed 31: its cancelled attempt was called failed on a port that blinked)
    start = ev(0.0, "[default] Starting worker group", kind="worker_start", host="n1", pid=100, file="n1.log", line=1)
    first = ev(20.0, "[rank0] step 17 loss 2.9", kind="progress", host="n1", rank=0, file="n1.log", step=17, line=3)
    save = ev(100.0, "Saving model checkpoint to /ckpt/checkpoint-54", kind="checkpoint_save", host="n1", rank=0,
              file="n1.log", line=4)
    dicts = [ev(100.0, f"{{'loss': 2.9, 'grad_norm': 1.0, 'learning_rate': 3e-04, 'epoch': 0.0{k // 40}}}",
                kind="progress", host="n1", rank=0, file="n1.log", ts_kind="interpolated", line=10 + k)
             for k in range(1, 74)]
    stop = ev(221.0, "Received 15 death signal, shutting down workers", kind="signal_received", host="n1",
              pid=100, file="n1.log", line=90, role="symptom", severity="warning")

    def end(evs):
        con = store(evs)
        align(con)
        find_attempts(con)
        scope(con, 1)
        return trained_to_the_end(con)
    assert end([start, first, save] + dicts + [stop]) == "stopped from outside"
    # a timed step later than the bars can be (their lower bound): its time says when training stopped
    stalled = ev(150.0, "[rank0] step 90 loss 2.9", kind="progress", host="n1", rank=0, file="n2.log", step=90,
                 line=3)
    assert end([start, first, save] + dicts + [stalled, stop]) is None


def test_a_checkpoint_save_after_the_last_step_is_training_when_the_logs_end_on_it():
    # the logs end on rank 0's checkpoint save, 40 s after the last step (a save takes seconds to
    # minutes); a closed socket between the last step and the save is noise the job trained past
    evs = (launch(0) + steps(HOSTS, 60, step_time=5.0, start=10) + teardown(309)
           + [ev(318, "Saving model checkpoint to /ckpt/checkpoint-60", kind="checkpoint_save", host="n1", rank=0,
                 file="n1.log"),
              ev(350, "Finished saving the checkpoint in 32.10 seconds.", kind="checkpoint_save", host="n1", rank=0,
                 file="n1.log")])
    doc = diagnose(store(evs))
    assert [a["outcome"] for a in doc["attempts"]] == ["running"], doc["attempts"]
    assert doc["verdict"]["rank"] is None


def test_a_checkpoint_save_after_a_stalled_collective_is_no_sign_of_training():
    # rank 2's collective stalled after the last step: the save that follows (an emergency save on the
    # way down) does not make the job one that trained to the end
    stall = ev(312, "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=61, OpType=ALLREDUCE, "
                    "Timeout(ms)=600000) ran for 600021 milliseconds before timing out.", kind="collective_timeout",
               host="n2", rank=2, file="n2.log")
    evs = (launch(0) + steps(HOSTS, 60, step_time=5.0, start=10) + [stall]
           + [ev(340, "Saving model checkpoint to /ckpt/checkpoint-60", kind="checkpoint_save", host="n1", rank=0,
                 file="n1.log")])
    con = store(evs)
    align(con)
    find_attempts(con)
    scope(con, 1)
    assert trained_to_the_end(con) is None
