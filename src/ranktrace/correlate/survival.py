"""Warnings the job survived are context, not causes (issue 13: noise in long runs).

Long runs carry warnings they survive: IB port flaps, retried socket and store connections, NCCL WARNs, a
slow rank. A cause-role line is the root cause only if progress stopped after it (or the cascade follows
it, which it does when progress stopped). So a finding whose own scope kept making progress well after
it, its rank's progress for a rank, the progress of its host's ranks for a host-only line, the job's for a
line naming nobody, is demoted: not direct, a small score, and says why. "Well after" is the survival
window, or a few steps when the job trained to the end of its lines (the logs end, or it was stopped
from outside: trained_to_the_end); in a file that also holds its rank's steps, the steps written after
the line say it exactly, whatever the lines' times.

Without progress lines the cascade decides: a real failure is followed by the job coming down (watchdog
timeouts, aborts, the launcher's teardown) within CASCADE_WINDOW_S; a cause line that nothing of the kind
follows, while a later cause line is followed by it, was survived. With neither, nothing is demoted."""

from __future__ import annotations

import datetime as dt
import math
import statistics
import weakref

from .detectors.base import NEXT_TIMED_ATS, Finding, query

MIN_WINDOW_S = 120.0     # progress this long after a line, at least, before it counts as survived
STEPS = 5                # ... and at least this many of the job's typical step intervals
IN_FLIGHT = 1            # steps a rank may still log after what stops it (the step it had finished)
# what stops its process's collectives at once when it is real: an NCCL network error (an IB port that is
# down for good fails the next send through it, and a step needs them all), so STEPS of the same process
# after it in its file say it was survived, whatever the survival window (a port that flapped and came back)
AT_ONCE = ("network_error",)
CASCADE_WINDOW_S = 1200.0   # a collective timeout (default 10 min) and the teardown after it fit in this
CASCADE_KINDS = ("collective_timeout", "watchdog_abort", "sigterm_sent", "signal_received", "worker_failed",
                 "failure_summary", "job_exit", "step_cancelled", "comm_abort")


# What this module read in a connection's current scope (the lines of one attempt): the detectors of an
# attempt ask healthy_until and training_stop again and again (21 times an attempt on a long run, each a
# read of the groups). attempts.scope starts a new memo whenever it points the views at other lines; a
# connection never scoped (views made by hand) has none and reads every time. Per connection, weakly:
# nothing outlives the connection or leaks into another one.
_SCOPED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def new_scope(con) -> None:
    """The views now show other lines (attempts.scope): forget what was read through them."""
    _SCOPED[con] = {}


def _memo(con, key: str, read):
    memo = _SCOPED.get(con)
    if memo is None:
        return read()
    if key not in memo:
        memo[key] = read()
    return memo[key]


def _spans(con) -> list[dict]:
    return _memo(con, "spans", lambda: query(con, "progress_spans"))


def progress_spans(con) -> list[dict]:
    """queries/detect/progress_spans.sql's rows in the current scope (read once per scope; do not modify)."""
    return _spans(con)


def step_s(spans: list[dict]) -> float | None:
    """The job's typical interval between two progress lines of a rank (s), None when unknown."""
    steps = [(s["last_ats"] - s["first_ats"]).total_seconds() / (s["n"] - 1) for s in spans if s["n"] > 2]
    # 0: progress lines without a time of their own (each took the last timed line's): no interval known
    return (statistics.median(steps) or None) if steps else None


def window_s(spans: list[dict]) -> float:
    """How long after a line progress must go on for the line to count as survived."""
    step = step_s(spans)
    return max(MIN_WINDOW_S, STEPS * step) if step is not None else MIN_WINDOW_S


def own_window_s(spans: list[dict]) -> float:
    """How long a rank's own progress must go on after its complaint for the complaint to be survived:
    a few of its steps (a rank that lost a peer or waits on a stalled collective makes none; the
    floor of window_s is for another rank's progress, which a failure takes a while to stop)."""
    step = step_s(spans)
    return (STEPS * step) if step is not None else MIN_WINDOW_S


def last_progress(spans: list[dict], rank: int | None, host: str | None) -> dt.datetime | None:
    """The last progress of a rank's or host's scope: the rank's, else (the rank prints none: many
    frameworks log from rank 0 only) its host's ranks', else the job's. A synchronous job makes no step
    without every rank, so the job's progress speaks for a rank that prints none."""
    ts: list = []
    if rank is not None:
        ts = [s["last_ats"] for s in spans if s["rank"] == rank and (host is None or s["host"] in (host, None))]
    if not ts and host is not None:
        ts = [s["last_ats"] for s in spans if s["host"] == host]
    if not ts:
        ts = [s["last_ats"] for s in spans]
    return max(ts) if ts else None


def _followers(con, times: list[dt.datetime]) -> dict[dt.datetime, int]:
    """For each time t: the processes that took part in a job-wide teardown in the
    CASCADE_WINDOW_S after t. One query for all of them (a query per finding was 25 ms each
    on a large store, and a store can hold hundreds of direct findings: one per GPU's Xid)."""
    got = con.execute(
        "SELECT t.t, count(DISTINCT (coalesce(e.host, ''), coalesce(CAST(e.rank AS VARCHAR), e.file))) "
        "FROM (SELECT DISTINCT unnest(?::TIMESTAMP[]) AS t) t JOIN aligned_events e "
        "ON e.ats > t.t AND e.ats <= t.t + to_seconds(?) WHERE e.kind IN (SELECT unnest(?)) GROUP BY t.t",
        [times, CASCADE_WINDOW_S, list(CASCADE_KINDS)]).fetchall()
    counts = dict(got)
    return {t: counts.get(t, 0) for t in times}


def _demote_by_cascade(con, findings: list[Finding]) -> int:
    direct = sorted((f for f in findings if f.direct and f.time is not None), key=lambda f: f.time)
    if len(direct) < 2:
        return 0
    at = _followers(con, [f.time for f in direct])
    follow = {id(f): at[f.time] for f in direct}
    n = 0
    for i, f in enumerate(direct):
        later = [g for g in direct[i + 1:] if follow[id(g)] >= 2
                 and (g.time - f.time).total_seconds() > CASCADE_WINDOW_S]
        if follow[id(f)] == 0 and later:
            f.direct = False
            f.score = min(f.score, 0.1)
            f.extra["survived"] = True
            f.why += (" — survived: no teardown followed it within "
                      f"{CASCADE_WINDOW_S / 60:.0f} min, the job came down after a later one (context, not the cause)")
            n += 1
    return n


def demote_survived(con, findings: list[Finding]) -> int:
    """Demote, in place, direct findings followed by healthy progress of their scope (without progress
    data: followed by no teardown while a later one is). Returns how many. By time first; then, for a
    line without a time of its own or when the job trained to the end of its lines, by the steps its
    rank wrote after it in the same file (complaints too, by this rule alone)."""
    spans = _spans(con)
    if not spans:
        return _demote_by_cascade(con, findings)
    w = survival_window_s(con)
    direct = [f for f in findings if f.direct and f.time is not None]
    latest = _latest_times(con, direct)
    undecided = []
    for f in direct:
        last = last_progress(spans, f.rank, f.host)
        t = latest.get(id(f), f.time)
        if last is None or t is None or (last - t).total_seconds() <= w:
            undecided.append(f)
            continue
        _survived(f, f"its {'rank' if f.rank is not None else 'node' if f.host else 'job'} made progress "
                     f"until {(last - f.time).total_seconds() / 60:.0f} min later")
    end = trained_to_the_end(con)
    # a complaint (a finding that is no cause: a peer's reset connection, a symptom) is judged by the
    # same file order: the steps its process wrote after it
    complaints = [f for f in findings if not f.direct and not f.extra.get("survived") and f.evidence]
    ordered = [f for f in undecided + complaints if end is not None or f.extra.get("ts_ok") is False]
    step = step_s(spans)
    need = (IN_FLIGHT + 1 if end == "the logs end" else STEPS if step is None or end
            else max(STEPS, math.ceil(w / step)))
    after = _steps_after(con, ordered)

    def enough(f: Finding) -> bool:
        return after.get(id(f), 0) >= (min(need, STEPS) if f.kind in AT_ONCE else need)
    for f in ordered:
        if enough(f):
            _survived(f, f"its rank wrote {after[id(f)]} more steps after it in the same file")
    return len(direct) - len(undecided) + sum(1 for f in ordered if enough(f))


def _survived(f: Finding, because: str) -> None:
    f.direct = False
    f.score = min(f.score, 0.1)
    f.extra["survived"] = True
    f.why += f" — survived: {because} (context, not the cause)"


# after a line, the distinct steps the same process wrote in the same file (the line and the steps say
# the same rank or local rank: another process's steps can reach a shared console late, from a stdout
# buffer flushed at its exit) up to the file's last progress line of the attempt in scope; on the lines'
# Parquet with literal bounds, so that only the row groups of that stretch are read
STEPS_AFTER = """
    SELECT {event_id} AS event_id, count(DISTINCT p.step) AS steps
    FROM event_lines p, (SELECT rank, local_rank FROM event_lines WHERE file_id = {file_id} AND line = {line}) f
    WHERE p.file_id = {file_id} AND p.line > {line} AND p.line <= {until} AND p.step IS NOT NULL
      AND (p.rank = f.rank OR (p.local_rank = f.local_rank AND p.rank IS NOT DISTINCT FROM f.rank))
"""


def _steps_after(con, findings: list[Finding]) -> dict[int, int]:
    """id(finding) -> the steps its scope wrote after its line in the same file (steps_after)."""
    got = steps_after(con, sorted({f.evidence[0] for f in findings if f.evidence}))
    return {id(f): got.get(f.evidence[0], 0) for f in findings if f.evidence}


def steps_after(con, ids: list[int]) -> dict[int, int]:
    """event_id -> the steps its process wrote after that line in the same file (STEPS_AFTER): a file's
    order is exact where times are not (a torchrun console's `[default3]:` lines carry none: each takes
    the last timed line's; two hosts' clocks differ by the alignment's uncertainty)."""
    if not ids:
        return {}
    where = con.execute("SELECT event_id, file_id, line FROM hot_events_all WHERE event_id IN (SELECT unnest(?))",
                        [ids]).fetchall()
    until = dict(con.execute("SELECT file_id, max(last_line) FROM aligned_groups WHERE max_step IS NOT NULL "
                             "AND file_id IN (SELECT unnest(?)) GROUP BY file_id",
                             [sorted({w[1] for w in where})]).fetchall())
    parts = [STEPS_AFTER.format(event_id=int(e), file_id=int(fid), line=int(line), until=int(until[fid]))
             for e, fid, line in where if until.get(fid) is not None and until[fid] > line]
    return dict(con.execute(" UNION ALL ".join(parts)).fetchall()) if parts else {}


# the latest time each of some lines can have been written (detectors.base.NEXT_TIMED_ATS)
NEXT_TIMED = f"""
    SELECT e.event_id, {NEXT_TIMED_ATS} AS next_ats
    FROM hot_events_all e WHERE e.event_id IN (SELECT unnest(?))
"""


def _latest_times(con, findings: list[Finding]) -> dict[int, dt.datetime | None]:
    """id(finding) -> the latest time its line can have been written, for findings whose time is
    inherited (`ts_ok` false): the file's next timed line (None: nothing bounds it). Survival is
    judged at that time: a line of unknown time is survived only if it is whenever it was written."""
    untimed = [f for f in findings if f.extra.get("ts_ok") is False and f.evidence]
    if not untimed:
        return {}
    got = dict(con.execute(NEXT_TIMED, [[f.evidence[0] for f in untimed]]).fetchall())
    return {id(f): got.get(f.evidence[0]) for f in untimed}


def training_stop(con) -> tuple[dt.datetime | None, dt.timedelta]:
    """When the job (in scope) last made progress, and the slack of a step or two around it (a
    synchronous job's ranks stop within one step of each other: the others block at the next
    collective). (None, slack) without progress lines."""
    return _memo(con, "training_stop", lambda: _training_stop(_spans(con)))


def _training_stop(spans: list[dict]) -> tuple[dt.datetime | None, dt.timedelta]:
    stop = max((s["last_ats"] for s in spans), default=None)
    return stop, dt.timedelta(seconds=max(5.0, 2 * (step_s(spans) or 0.0)))


def healthy_until(con) -> dt.datetime | None:
    """The time up to which the job (in scope) was making progress, less the survival window: failure
    lines before it were survived (the job made steps after them); None when no progress is known.
    When the logs end while the job still trains (its last progress is within a few steps of the
    scope's last line), STEPS steps after a line are enough: nothing stopped, the logs did."""
    return _memo(con, "healthy_until", lambda: _healthy_until(con))


def _healthy_until(con) -> dt.datetime | None:
    spans = _spans(con)
    if not spans:
        return None
    return max(s["last_ats"] for s in spans) - dt.timedelta(seconds=_survival_window_s(con, spans))


def complaints_survived_until(con) -> dt.datetime | None:
    """healthy_until for complaints (symptom lines: a closed peer, a retried socket): when the logs end
    while the job still trains, a complaint after which every rank that logs progress made progress
    again was survived so far; a failure stops every rank's progress within a step."""
    healthy = healthy_until(con)
    if trained_to_the_end(con) != "the logs end":
        return healthy
    if untimed_progress_to_the_end(con):   # every complaint, as far as the logs can tell
        end = _logs_end(con) + _training_stop(_spans(con))[1]
        return end if healthy is None else max(healthy, end)
    if healthy is None:
        return None
    return max(healthy, min(s["last_ats"] for s in _spans(con)))


def survival_window_s(con) -> float:
    """How long after a line progress must go on for the line to count as survived, in scope: the
    survival window, or STEPS steps when training did not stop of itself (trained_to_the_end)."""
    return _memo(con, "survival_window_s", lambda: _survival_window_s(con, _spans(con)))


def _survival_window_s(con, spans: list[dict]) -> float:
    step = step_s(spans)
    if step is not None and _memo(con, "trained_to_the_end", lambda: _trained_to_the_end(con, spans)) is not None:
        return STEPS * step
    return window_s(spans)


def trained_to_the_end(con) -> str | None:
    """Why the job (in scope) was still training when its lines end, or None: it was stopped from
    outside within OUTSIDE_STOP_SLACK of its last progress, no rank having reported a stalled collective
    nor a process having died of itself just before ("stopped from outside": an agent's death signal, the
    scheduler's cancel, preemption or time limit), or the logs end within two steps of its last progress
    ("the logs end"). A rank's failure stops a synchronous job within a step everywhere (the others block
    at the next collective), so progress up to the end says nothing had failed before it."""
    return _memo(con, "trained_to_the_end", lambda: _trained_to_the_end(con, _spans(con)))


# what stops a job from outside: an agent's death signal (torch's elastic agent: 'Received 15 death
# signal, shutting down workers' on SIGTERM/SIGINT/SIGHUP/SIGQUIT), and the kinds whose failure is a
# scheduler's cancel or time limit (parsers/kinds.toml); a Slurm step 'CANCELLED' with no reason is
# srun's teardown after a failed task, not an outside stop
OUTSIDE_STOP_KINDS = ("signal_received",)
OUTSIDE_STOP_FAILURES = ("cancelled", "time_limit")
# an outside stop falls anywhere in a step, on another host's clock (the alignment's uncertainty) than
# the last progress line; a job that stalled first stays stalled for its collective timeout (minutes)
# before anything ends it
OUTSIDE_STOP_SLACK = dt.timedelta(seconds=30)
# a rank's report that a collective stalled: the job was not training, whatever its progress lines' clock
# says (a requeue's cancel after a hang is its teardown)
STALL_KINDS = ("collective_timeout", "watchdog_abort", "hang_report")
# a process that died of itself (a signal of its own fault, out of memory, a GPU or CUDA fault) before
# the stop: the stop is the scheduler's answer to that death (a requeue, the step's teardown), not what
# ended a healthy job. A second of slack: the stop line's time is cut to the second
OWN_DEATH_FAILURES = ("crash", "oom", "gpu_oom", "cuda_error", "gpu_fault")
# what the teardown of a stop writes, whatever ended the step: srun's 'Job step aborted: Waiting up to 32
# seconds for job step to finish.' comes before or after slurmstepd's '*** STEP ... CANCELLED AT ... DUE TO
# PREEMPTION ***' (src/srun: the step is being signalled), so between a file's last progress and its stop it
# is no complaint of the job's own
STOP_TEARDOWN_KINDS = ("step_cancelled",)


def _trained_to_the_end(con, spans: list[dict]) -> str | None:
    last, slack = _training_stop(spans)
    wide = max(slack, OUTSIDE_STOP_SLACK)
    if last is None:   # no progress line with a time: only a file of untimed ones can say it trained on
        if untimed_progress_to_the_end(con):
            return "the logs end"
    else:
        stop = con.execute(
            f"SELECT min(first_ats) FROM aligned_groups WHERE ts_ok AND last_ats >= $since AND {_STOP_KIND}",
            {"since": last - wide, **_STOP_PARAMS}).fetchone()[0]
        if stop is not None and abs(stop - last) <= wide and not _stalled_or_died(con, stop, last - wide):
            return "stopped from outside"
    # progress of no time of its own (rank 0's bars on a console: the previous line's time, a lower bound):
    # the file's order says what came last
    stop = _stop_after_untimed_progress(con)
    if stop is not None and not _stalled_or_died(con, stop, None if last is None else last - wide):
        return "stopped from outside"
    if last is None:
        return None
    end = _logs_end(con)
    if end is not None and end - _alive_until(con, last, slack) <= slack:
        return "the logs end"
    if untimed_progress_to_the_end(con):
        return "the logs end"
    return None


# an outside stop's line, as SQL on aligned_groups (named parameters: _STOP_PARAMS)
_STOP_KIND = ("(kind IN (SELECT unnest($stop_kinds)) "
              "OR kind IN (SELECT kind FROM kind_catalog WHERE failure IN (SELECT unnest($stop_failures))))")
_STOP_PARAMS = {"stop_kinds": list(OUTSIDE_STOP_KINDS), "stop_failures": list(OUTSIDE_STOP_FAILURES)}


def _stalled_or_died(con, stop: dt.datetime, since: dt.datetime | None = None) -> bool:
    """A rank reported a stalled collective before the stop, or a process died of itself between
    `since` (the last progress less the stop's slack; None: the scope's start) and the stop."""
    return bool(con.execute(
        "SELECT count(*) FROM aligned_groups WHERE (kind IN (SELECT unnest(?)) AND first_ats < ?) "
        "OR (kind IN (SELECT kind FROM kind_catalog WHERE failure IN (SELECT unnest(?))) "
        "    AND first_ats >= ? AND first_ats < ?)",
        [list(STALL_KINDS), stop, list(OWN_DEATH_FAILURES), since or dt.datetime.min,
         stop - dt.timedelta(seconds=1)]).fetchone()[0])


# a rank's report that a collective had been stuck for its whole timeout (a minute or more): the job had
# stalled that long before the report, which no stop from outside can have caused seconds before it
STUCK_KINDS = ("collective_timeout", "hang_report")


def demote_stops_after_stall(con, findings: list[Finding]) -> int:
    """Demote, in place, a scheduler's cancel or time limit (OUTSIDE_STOP_FAILURES) written after a rank
    reported a collective stuck for its timeout (STUCK_KINDS): the job had hung already, and the cancel (a
    requeue, a user's scancel of a hung job, the time limit it hung into) is the answer to the failure, not
    its cause (a report the job trained past, before healthy_until, does not count). Returns how many."""
    n = 0
    healthy = healthy_until(con) or dt.datetime.min
    for f in findings:
        if f.kind not in OUTSIDE_STOP_FAILURES or not f.direct or f.time is None:
            continue
        stuck = con.execute("SELECT min(last_ats) FROM aligned_groups WHERE kind IN (SELECT unnest(?)) "
                            "AND last_ats >= ? AND first_ats < ?", [list(STUCK_KINDS), healthy, f.time]).fetchone()[0]
        if stuck is None:
            continue
        f.direct = False
        f.score = min(f.score, 0.1)
        f.extra["after_stall"] = True
        f.why += (f" — after a rank had reported a collective stuck for its timeout ({stuck:%H:%M:%S}): the "
                  "scheduler's answer to a job that had hung, not its cause")
        n += 1
    return n


def _stop_after_untimed_progress(con) -> dt.datetime | None:
    """The time of an outside stop written in a file right after that file's progress lines of no time
    of their own (rank 0's Lightning bars or HF Trainer dicts on a torchrun console, then its agent's
    'Received 15 death signal'), with no complaint between them in the file: the job trained until it was
    stopped. None otherwise, and whenever a progress line with a time of its own is later than those bars
    can be (their time, the last timed line's before them, is a lower bound): its time, not a file's
    order, says when training stopped. A timed progress line before them (a resumed run's first step)
    says nothing against them."""
    return con.execute(f"""
        WITH stop AS (
            SELECT file_id, min(min_line) AS line, min(first_ats) AS at FROM aligned_groups
            WHERE ts_ok AND {_STOP_KIND} GROUP BY file_id
        ), bars AS (
            SELECT file_id, max(coalesce(last_line, min_line)) AS line, max(last_ats) AS lo FROM aligned_groups
            WHERE NOT ts_ok AND (max_step IS NOT NULL OR kind = 'progress') GROUP BY file_id
        )
        SELECT min(s.at) FROM stop s JOIN bars b USING (file_id)
        WHERE b.line < s.line
          AND NOT EXISTS (SELECT 1 FROM aligned_groups WHERE ts_ok AND (max_step IS NOT NULL OR kind = 'progress')
                          AND (b.lo IS NULL OR last_ats > b.lo))
          AND NOT EXISTS (
            SELECT 1 FROM aligned_groups g
            WHERE g.file_id = s.file_id AND g.role IN ('cause', 'symptom') AND NOT {_STOP_KIND}
              AND g.kind NOT IN (SELECT unnest($teardown))
              AND g.min_line < s.line AND coalesce(g.last_line, g.min_line) > b.line)
    """, {**_STOP_PARAMS, "teardown": list(STOP_TEARDOWN_KINDS)}).fetchone()[0]


def _alive_until(con, last: dt.datetime, slack: dt.timedelta) -> dt.datetime:
    """The last progress `last`, or a checkpoint save after it (nothing having stalled or died since):
    the training loop saves between its steps, so the job was alive and training then (a save at the
    end of the logs takes seconds to minutes: the logs end while it trains; a progress line that took
    the previous line's time was logged before the save, whatever its time says)."""
    got = con.execute("SELECT max(last_ats) FROM aligned_groups WHERE ts_ok AND kind = 'checkpoint_save' "
                      "AND last_ats >= ?", [last - slack]).fetchone()[0]
    if got is None or got <= last or _stalled_or_died(con, got, last - slack):
        return last
    return got


def _logs_end(con) -> dt.datetime | None:
    """The last timed line in scope (read once per scope)."""
    return _memo(con, "logs_end",
                 lambda: con.execute("SELECT max(last_ats) FROM aligned_groups WHERE ts_ok").fetchone()[0])


def untimed_progress_to_the_end(con) -> bool:
    """A file goes on past its last timed line with progress lines of no time of their own (rank 0's
    Lightning / tqdm bars on a torchrun console) and nothing in scope says the job came down after the
    last timed progress (no collective stalled, no launcher tore down): it trained on to a time the logs
    do not give, so the last timed progress is not when training stopped, and a complaint after it is
    not known to have come after the last step."""
    return _memo(con, "untimed_progress_to_the_end", lambda: _untimed_progress_to_the_end(con, _spans(con)))


def _untimed_progress_to_the_end(con, spans: list[dict]) -> bool:
    last, slack = _training_stop(spans)
    if _logs_end(con) is None or not any(h["untimed_progress_after"] for h in query(con, "host_activity")):
        return False   # (no timed line at all, as in an excerpt: the logs say nothing of what came last)
    # with no timed progress in scope (rank 0's bars the only progress), no line of the attempt, timed
    # or not, may say the job came down
    since = "last_ats >= ?" if last is not None else "(last_ats >= ? OR last_ats IS NULL)"
    return not con.execute(
        "SELECT count(*) FROM aligned_groups WHERE (kind IN (SELECT unnest(?)) OR n_teardown_text > 0) "
        f"AND {since}", [list(CASCADE_KINDS + STALL_KINDS + ("task_exit",)),
                         last - slack if last is not None else dt.datetime.min]).fetchone()[0]
