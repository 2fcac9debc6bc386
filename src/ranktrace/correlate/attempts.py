"""A long run is a sequence of attempts (issue 27): where each began, and which lines are whose.

Signs that the job's processes were (re)launched, from what launchers and frameworks print:
- a torchrun agent's rendezvous rounds (queries/attempts/markers.sql): its first round starts the
  job, every later one relaunches its workers; a launcher that starts (a resubmitted job);
- a rank's new process (queries/attempts/incarnations.sql: the pid of its lines changes; a process
  group made or destroyed by a live process keeps its pid, so it is no sign);
- a rank's training step going back (queries/attempts/step_buckets.sql: a resume from a checkpoint).
The first kind is written when a launch begins ("early"), the others once the new processes run
("late"). Signs from every host are clustered on the aligned clock; a cluster starts a new attempt
only when the job did something since the previous start (trained, failed, or an agent said it
restarts its workers), so a rendezvous whose nodes arrive over minutes stays one start.

Attempt k > 1 begins, on each host, at that host's own earliest sign of it (its agent's new round
comes after its own workers' teardown, which belongs to the attempt before), else at the cluster's
earliest sign: the cut. A line belongs to the attempt whose cut on its host (aligned clock) it has
reached. A line with no time (a snapshot such as sacct, `scontrol show` or `kubectl describe`, taken
after the fact, about any attempt) is in attempt 0: no attempt's diagnosis reads it, but for the
attempt whose verdict leads (verdict.diagnose), which is diagnosed again with them. Everything here is pure over the rows the SQL files give, but `collect` and
`apply`, which read and write temp tables.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from dataclasses import dataclass, field

import duckdb

from .util import columns, has_rows, rows, sql_file, table_exists

GAP_S = 180.0      # the early signs of one launch on different hosts come this close to each other
LATE_S = 1800.0    # a late sign (new pid, step back) belongs to the launch before it within this, if no work came between
RESUMED_S = 60.0   # ... work in the last this before it being the resumed training itself (a host new to the job has
                   # no step of its own to go back from: its first step is no sign, and it comes first by a step's time)
WORK_BUCKET_S = 1.0      # progress is read to the second: a short run restarts seconds after it trained
NEVER = dt.datetime(9999, 12, 31)   # the cut of a host that stays in an older attempt (it did not relaunch)
PART = 0.5         # a relaunch on fewer than this share of the previous launch's hosts is a partial restart


@dataclass(frozen=True)
class Sign:
    t: dt.datetime            # aligned
    host: str | None
    signal: str               # round, launch, pid, step
    early: bool
    file: str | None = None
    line: int | None = None
    what: str = ""
    step: str | None = None   # the Slurm step a launch line is about

    @property
    def key(self) -> tuple:
        """One launch writes each of these once: the same key again is another launch. The host is part
        of it: one console may hold every host's launcher (pdsh prefixes each remote line with its host)."""
        return (self.signal, self.file, self.step, self.host)


@dataclass
class Attempt:
    id: int
    start: dt.datetime | None
    basis: str = "start of the logs"
    file: str | None = None
    line: int | None = None
    cuts: dict = field(default_factory=dict)   # host -> aligned time the attempt begins there (id > 1)
    end: dt.datetime | None = None
    first_progress: dt.datetime | None = None
    last_progress: dt.datetime | None = None
    max_step: int | None = None


# ---------------------------------------------------------------- reading the signs

def query_text(con, name: str) -> str:
    """queries/attempts/<name>.sql as it runs on this store: over hot_events when diagnose made it (as
    detectors.base.query does)."""
    text = sql_file(f"attempts/{name}.sql")
    if table_exists(con, "hot_events") and name == "markers":
        text = text.replace("aligned_events", "hot_events")
    return text


def _run(con, name: str) -> list[dict]:
    return rows(con, query_text(con, name))


def failure_times(con: duckdb.DuckDBPyConnection) -> str:
    """SQL: the aligned times of cause lines (column t): a new failure."""
    src = "hot_events" if table_exists(con, "hot_events") else "aligned_events"
    return f"SELECT DISTINCT ats AS t FROM {src} WHERE role = 'cause' AND ats IS NOT NULL"


def marker_views(con: duckdb.DuckDBPyConnection) -> None:
    """Temp views attempt_markers (markers.sql's rows) and attempt_failures, which markers_told.sql reads."""
    con.execute(f"CREATE OR REPLACE TEMP VIEW attempt_markers AS {query_text(con, 'markers')}")
    con.execute(f"CREATE OR REPLACE TEMP VIEW attempt_failures AS {failure_times(con)}")


def run_markers(con: duckdb.DuckDBPyConnection, jobs: set[str] | None) -> list[dict]:
    """queries/attempts/markers.sql's rows of the run (`jobs`: its Slurm jobs, None: every job) less
    the launches told again that _retold would drop anyway (queries/attempts/markers_told.sql)."""
    marker_views(con)
    return rows(con, sql_file("attempts/markers_told.sql"), {"jobs": sorted(jobs) if jobs is not None else None})


def agent_signs(markers: list[dict]) -> list[Sign]:
    """Early signs: each rendezvous round of a launcher's log, each launcher's start (torchrun, a Slurm
    allocation, a node's batch script or step tasks), and each notice that the workers or the job are
    restarted (which announces the next launch and ends the attempt on its host); late ones: a
    rendezvous closed to an agent (the round it began started nothing). A log's rounds are read from the
    first of join / complete / 'Starting worker group' it writes, so that one round is one sign (the
    three are written within seconds; a block such as the rendezvous result carries no pid, so a log,
    not a pid, is the unit)."""
    signs: list[Sign] = []
    logs: dict[tuple, dict[str, list[dict]]] = {}
    for m in markers:
        where = m["host"] or m["file"]
        if m["signal"] == "launch":
            what = (f"Slurm job {m['job_id']} starts on {where}" if m["job_id"] is not None
                    else f"a launcher started on {where}")
            signs.append(Sign(m["ats"], m["host"], "launch", True, m["file"], m["line"], what, m["step_id"]))
        elif m["signal"] == "restart":
            what = (f"Slurm requeues job {m['job_id']}" if m["kind"] == "job_requeue"
                    else f"the agent on {where} restarts its workers")
            signs.append(Sign(m["ats"], m["host"], "restart", True, m["file"], m["line"], what))
        elif m["signal"] == "closed":
            signs.append(Sign(m["ats"], m["host"], "closed", False, m["file"], m["line"],
                              f"the rendezvous was closed to the agent on {where}"))
        elif m["signal"] == "round":
            logs.setdefault((m["host"] or "", m["file"]), {}).setdefault(m["kind"], []).append(m)
    for (host, file), by_kind in sorted(logs.items()):
        kind = next(k for k in ("rdzv_join", "rdzv_complete", "worker_start") if k in by_kind)
        for m in by_kind[kind]:
            signs.append(Sign(m["ats"], host or None, "round", True, m["file"], m["line"],
                              f"rendezvous round {m['round_no']} in {file}"))
    return signs


def run_jobs(con: duckdb.DuckDBPyConnection) -> set[str] | None:
    """The Slurm jobs whose output the store holds (the job of training progress or rank lines); None
    when no such line names a job (then every job the daemons name is taken for the run's)."""
    got = {r[0] for r in con.execute("SELECT DISTINCT job_id FROM aligned_groups WHERE job_id IS NOT NULL "
                                     "AND (rank IS NOT NULL OR kind = 'progress')").fetchall()}
    # an output file named for an array task (slurm-%A_%a.out: 713158_1) is of the job the daemons
    # may name by its array job id alone
    return (got | {j.split("_", 1)[0] for j in got}) or None


def pid_signs(incarnations: list[dict]) -> list[Sign]:
    """A rank whose lines change pid, the old process having stopped writing: its new process's first line.
    A process seen in one timed line only (the kernel's report of its death; its own lines untimed)
    says when it ended, not when it began: no sign."""
    out: list[Sign] = []
    by_rank: dict[tuple, list[dict]] = {}
    for r in incarnations:
        by_rank.setdefault((r["host"], r["rank"]), []).append(r)
    for (host, rank), procs in by_rank.items():
        procs.sort(key=lambda r: r["first_ats"])
        for prev, nxt in zip(procs, procs[1:]):
            if nxt["n"] < 2:
                continue
            if nxt["first_ats"] >= prev["last_ats"] - dt.timedelta(seconds=1):
                out.append(Sign(nxt["first_ats"], host, "pid", False, nxt["file"], nxt["line"],
                                f"rank {rank} on {host or '?'} runs as a new process (pid {prev['pid']} -> {nxt['pid']})"))
    return out


def step_signs(buckets: list[dict]) -> list[Sign]:
    """A rank's (or file's) training step going back below what it had reached, for a whole minute (a
    minute that also holds the old steps is another counter printed alongside, not a resume)."""
    out: list[Sign] = []
    series: dict[tuple, list[dict]] = {}
    for b in buckets:
        series.setdefault((b["host"], b["rank"], b["file"]), []).append(b)
    for (host, rank, file), bs in series.items():
        bs.sort(key=lambda b: b["t"])
        top = None
        for b in bs:
            if top is not None and b["hi"] < top:
                who = f"rank {rank}" if rank is not None else (file or "a log")
                out.append(Sign(b["first_ats"], host, "step", False, b["first_file"], b["first_line"],
                                f"{who} on {host or '?'} went back to step {b['lo'] % 1000000000} "
                                f"from {top % 1000000000} (a resume from a checkpoint)"))
                top = b["hi"]
            else:
                top = b["hi"] if top is None else max(top, b["hi"])
    return out


# The seconds (aligned) in which the job trained: what `SELECT DISTINCT time_bucket(INTERVAL 1 SECOND, ats)
# FROM aligned_events WHERE kind = 'progress' AND ats IS NOT NULL` gives, read as integers through the
# progress lines' identity keys (progress_keys: a line's host and clock offset are its key's), not by
# resolving every line (time_bucket's seconds start at its origin, 2000-01-03: a whole second since the epoch)
PROGRESS_SECONDS = f"""
    SELECT make_timestamp(s * {int(WORK_BUCKET_S * 1e6)}) AS t FROM (
        SELECT DISTINCT (epoch_us(r.ts) - k.shift_us) // {int(WORK_BUCKET_S * 1e6)} AS s
        FROM event_rows_keyed r
        JOIN progress_keys k ON k.class_id = r.class_id AND k.k_rank IS NOT DISTINCT FROM r.rank
             AND k.k_local_rank IS NOT DISTINCT FROM r.local_rank AND k.pid IS NOT DISTINCT FROM r.pid
             AND k.task IS NOT DISTINCT FROM r.task AND k.k_srun_lbl IS NOT DISTINCT FROM r.srun_lbl
             AND k.k_srun_rank IS NOT DISTINCT FROM r.srun_rank
        WHERE r.ts >= TIMESTAMP '1990-01-01' AND r.ts < TIMESTAMP '2100-01-01')
    ORDER BY 1"""


def progress_keys(con: duckdb.DuckDBPyConnection) -> None:
    """Temp table progress_keys: the identity keys of the progress lines (a class of kind progress and a
    line's own identity columns, those temp view event_rows_keyed gives: rank, local_rank, pid, task,
    srun_lbl, srun_rank; kept as k_rank, ... where identity may change them), each with what
    aligned_events gives its lines: host, rank and file resolved by the identity views (row by row:
    a key resolves as each of its lines does), shift_us (its host's clock offset, microseconds:
    ats = ts - shift_us) and ts_ok (its class's time is the line's own). What step_buckets.sql and
    PROGRESS_SECONDS read instead of resolving every progress line (15 M of a long run's 15.4 M)."""
    from .clock import TIMED
    from .identity import base_views, events_views
    con.execute("""
        CREATE OR REPLACE TEMP TABLE progress_key_src AS
        SELECT k.*, k.rank AS k_rank, k.local_rank AS k_local_rank, k.srun_lbl AS k_srun_lbl,
               k.srun_rank AS k_srun_rank, c.* EXCLUDE (class_id)
        FROM (SELECT DISTINCT class_id, rank, local_rank, pid, task, srun_lbl, srun_rank FROM event_rows_keyed
              WHERE class_id IN (SELECT class_id FROM event_classes WHERE kind = 'progress')) k
        JOIN event_classes c USING (class_id)""")
    base_views(con, "progress_key_src", "_pk")
    events_views(con, "_pk")
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE progress_keys AS
        SELECT row_number() OVER () AS kid, e.class_id, e.k_rank, e.k_local_rank, e.pid, e.task, e.k_srun_lbl,
               e.k_srun_rank, e.host, e.rank, e.file,
               CAST(round(coalesce(o.offset_s, 0.0) * 1e6) AS BIGINT) AS shift_us,
               e.ts_kind IN ({TIMED}) AS ts_ok
        FROM events_id_pk e LEFT JOIN clock_offsets o ON o.host = e.host""")


def _once(fn):
    """fn(con), made at most once (kept_rows calls it only when it must read the lines; its stamp names
    fn, which functools.wraps tells it)."""
    import functools
    done = []

    @functools.wraps(fn)
    def run(con):
        if not done:
            fn(con)
            done.append(True)
    return run


# what a query of queries/attempts needs made before it runs (only when it reads the lines)
PREPARE = {"step_buckets": progress_keys, "markers_told": marker_views}


def collect(con: duckdb.DuckDBPyConnection) -> tuple[list[Sign], list[dt.datetime], list[dt.datetime]]:
    """(signs, progress, failures): the seconds (aligned) in which the job trained, and
    the times of cause lines (a new failure; the teardown's symptoms come with a restart, they do not
    separate one launch from the next)."""
    failures = [r[0] for r in con.execute(failure_times(con) + " ORDER BY 1").fetchall()]
    signs = agent_signs(run_markers(con, run_jobs(con)))
    signs += pid_signs(_run(con, "incarnations"))
    from .clock import kept_rows   # (kept by the ingest: a pass over every progress line)
    keys = _once(progress_keys)
    progress = [r["t"] for r in kept_rows(con, "progress_seconds", PROGRESS_SECONDS, prepare=keys)]
    if table_exists(con, "progress"):
        signs += step_signs(kept_rows(con, "step_buckets", query_text(con, "step_buckets"), prepare=keys))
    return signs, progress, failures


# ---------------------------------------------------------------- segmenting

def _clusters(signs: list[Sign], apart) -> list[list[Sign]]:
    """Signs in time order, cut where `apart(previous, next)` says two signs are not one launch."""
    out: list[list[Sign]] = []
    for s in sorted(signs, key=lambda s: (s.t, s.host or "", s.file or "", s.line or 0)):
        if out and not apart(out[-1][-1].t, s.t):
            out[-1].append(s)
        else:
            out.append([s])
    return out


def _busy(activity: list[dt.datetime], lo: dt.datetime | None, hi: dt.datetime) -> bool:
    """The job trained in [lo, hi) (activity: sorted starts of WORK_BUCKET_S buckets)."""
    i = 0 if lo is None else bisect.bisect_right(activity, lo - dt.timedelta(seconds=WORK_BUCKET_S))
    return i < len(activity) and activity[i] < hi


def _retold(early: list[Sign], failures: list[dt.datetime]) -> list[Sign]:
    """The early signs less a launch told again while the job ran on: the same launch line (same log,
    same step) with no failure and no restart notice since its last telling is the same launch (a log
    that repeats its launch line, a scheduler that logs its allocation again); a relaunch follows a
    failure or is announced. Time-ordered in, time-ordered out."""
    last: dict[tuple, dt.datetime] = {}
    restarts = [s.t for s in early if s.signal == "restart"]
    out = []
    for s in early:
        if s.signal in ("round", "launch"):
            prev = last.get(s.key)
            last[s.key] = s.t
            if prev is not None and not any(prev < f < s.t for f in failures) \
                    and not any(prev < r <= s.t for r in restarts):
                continue
        out.append(s)
    return out


def segment(signs: list[Sign], progress: list[dt.datetime], failures: list[dt.datetime]) -> list[Attempt]:
    """The attempts the signs show, in time order (at least one). progress: the sorted seconds in which
    the job trained (WORK_BUCKET_S buckets, aligned); failures: the times of cause lines."""
    bucket = dt.timedelta(seconds=WORK_BUCKET_S)

    def happened(lo: dt.datetime | None, hi: dt.datetime) -> bool:
        """Between two launch signs the job trained or something failed: they are two launches."""
        return any((lo is None or lo < f) and f < hi for f in failures) \
            or _busy(progress, None if lo is None else lo + bucket, hi - bucket)

    def trained(lo: dt.datetime, hi: dt.datetime) -> bool:
        return _busy(progress, lo + bucket, hi - bucket)

    early = _retold(sorted((s for s in signs if s.early), key=lambda s: (s.t, s.host or "", s.file or "", s.line or 0)),
                    failures)
    late = sorted((s for s in signs if not s.early), key=lambda s: s.t)
    # the early signs of one launch: close in time, the job did not train in between, and no log writes
    # the same launch sign twice (an agent's second round is another launch, however soon: a crash
    # loop; a restart may be announced in two lines: Slurm's requeue), and a host's notice that it
    # restarts after its own launch signs, with no notice before them, ends that launch: it ran,
    # silently, and failed (another host's notice is that host leaving the launch before for this one,
    # as elastic agents follow one another into a new round within seconds). The
    # failures of the teardown around a restart do not cut it (they interleave with the new rounds)
    launches: list[list[Sign]] = []
    for s in early:
        c = launches[-1] if launches else None
        ends = s.signal == "restart" and c is not None and not any(x.signal == "restart" for x in c) \
            and any(x.signal in ("round", "launch") and (s.host is None or x.host == s.host) for x in c)
        if c is not None and (s.t - c[-1].t).total_seconds() <= GAP_S and not trained(c[-1].t, s.t) \
                and not ends and (s.signal == "restart" or s.key not in {x.key for x in c}):
            c.append(s)
        else:
            launches.append([s])
    # a late sign joins the last launch before it when the job did not train in between (the new
    # processes come up, load a checkpoint, go back to its step: the training of the last minute before
    # it may be that resume's own first steps, on ranks that show no sign); else it starts something of
    # its own
    orphans: list[Sign] = []
    for s in late:
        launch = next((c for c in reversed(launches) if c[0].t <= s.t), None)
        if launch is not None and (s.t - launch[0].t).total_seconds() <= LATE_S \
                and not _busy(progress, max(x.t for x in launch) + bucket,
                              s.t - max(bucket, dt.timedelta(seconds=RESUMED_S))):
            launch.append(s)
        elif s.signal != "closed":
            orphans.append(s)
    orphan_starts = _clusters(orphans, lambda a, b: (b - a).total_seconds() > GAP_S or happened(a, b))
    starts = sorted(launches + orphan_starts, key=lambda c: min(s.t for s in c))
    # a start is a new attempt when an agent said it restarts, or the job trained or failed since the
    # previous start, or a log writes its launch again; otherwise it is the same launch, still assembling
    # (a node that joins the rendezvous minutes after the others). A start on fewer than half the hosts
    # the previous launch had, while the others' processes go on (one pod restarted alone), is no new
    # attempt of the job: the gang waits in the old one
    merged: list[list[Sign]] = []
    for c in starts:
        t0 = min(s.t for s in c)
        restarted = any(s.signal == "restart" for s in c)
        if merged and _refused(c, progress):
            continue
        again = merged and bool({s.key for s in c if s.signal in ("round", "launch")}
                                & {s.key for s in merged[-1] if s.signal in ("round", "launch")})
        if merged and not restarted and not again and not happened(min(s.t for s in merged[-1]), t0):
            merged[-1].extend(c)
        elif merged and len(_hosts(c)) < PART * len(_hosts(merged[-1])):
            continue
        else:
            merged.append(list(c))
    attempts: list[Attempt] = []
    for c in merged:
        # a restart notice ends the attempt before; the new one starts with its first launch sign
        first = min(c, key=lambda s: (s.signal == "restart" and any(x.signal != "restart" for x in c),
                                      s.t, not s.early))
        if not attempts and not _busy(progress, None, first.t - bucket) and not any(s.signal == "restart" for s in c):
            # the launch the logs begin with: attempt 1 starts there
            attempts.append(Attempt(1, first.t, _basis(c), first.file, first.line))
            continue
        if not attempts:   # the logs begin in the middle of an attempt
            attempts.append(Attempt(1, None))
        attempts.append(Attempt(len(attempts) + 1, first.t, _basis(c), first.file, first.line, _cuts(c)))
    # a host that took part in a launch before and shows no sign of this one did not relaunch: a node
    # left out (frozen, lost, replaced) stays in its attempt, and what it writes later (a thawed node's
    # daemon reporting its old job aborted) is that attempt's
    seen: set[str] = set()
    for a, c in zip(attempts[-len(merged):], merged):
        for h in sorted(seen - set(a.cuts)) if a.id > 1 else ():
            a.cuts[h] = NEVER
        seen |= _hosts(c)
    return attempts or [Attempt(1, None)]


def _cuts(c: list[Sign]) -> dict[str, dt.datetime]:
    """Where a new attempt begins on each host of its start: the host's first launch sign (an early one
    before a late one); a host's notice that it restarts ends the old attempt there, and it and the
    worker exits reported with it are often written in the same millisecond as the new round, so the
    cut comes after it."""
    cuts: dict[str, dt.datetime] = {}
    for s in sorted(c, key=lambda s: (s.signal == "restart", not s.early, s.t)):
        if s.host is not None and s.host not in cuts:
            cuts[s.host] = s.t
    for s in c:
        if s.signal == "restart" and s.host is not None and s.t <= cuts[s.host] + dt.timedelta(seconds=1):
            cuts[s.host] = max(cuts[s.host], s.t + dt.timedelta(microseconds=1))
    return cuts


def _refused(c: list[Sign], progress: list[dt.datetime]) -> bool:
    """A relaunch whose every agent found the rendezvous closed (another agent had given up and ended
    the job) and that started nothing: teardown of the attempt before, not an attempt."""
    closed = {s.host for s in c if s.signal == "closed"}
    launched = {s.host for s in c if s.signal in ("round", "launch")}
    t0 = min(s.t for s in c)
    return bool(closed) and launched <= closed and not any(s.signal in ("pid", "step") for s in c) \
        and not _busy(progress, t0, max(s.t for s in c) + dt.timedelta(seconds=GAP_S))


def _hosts(c: list[Sign]) -> set[str]:
    return {s.host for s in c if s.host is not None}


def _basis(c: list[Sign]) -> str:
    """How a start was recognised, for people: its signs by kind, the first of each."""
    names = {"round": "rendezvous round", "launch": "launcher start", "restart": "restart notice",
             "pid": "new process", "step": "step back", "closed": "rendezvous closed"}
    seen: dict[str, tuple[int, Sign]] = {}
    for s in sorted(c, key=lambda s: s.t):
        n, first = seen.get(s.signal, (0, s))
        seen[s.signal] = (n + 1, first)
    return "; ".join(f"{names[k]} x{n} ({first.what})" if n > 1 else f"{names[k]} ({first.what})"
                     for k, (n, first) in seen.items())


# ---------------------------------------------------------------- the attempt of a line

def write_cuts(con: duckdb.DuckDBPyConnection, attempts: list[Attempt]) -> None:
    """Temp table attempt_hosts: per host (NULL: any other host) the aligned time each attempt k > 1
    begins there, columns c2..cK (NEVER: the host stayed in an older one); a line's attempt is the
    last one whose cut its time has reached."""
    k = len(attempts)
    cols = ", ".join(f"c{i} TIMESTAMP" for i in range(2, k + 1))
    con.execute(f"CREATE OR REPLACE TEMP TABLE attempt_hosts (host VARCHAR{', ' + cols if cols else ''})")
    hosts = sorted({h for a in attempts[1:] for h in a.cuts})
    data = [[None] + [a.start for a in attempts[1:]]]
    data += [[h] + [a.cuts.get(h, a.start) for a in attempts[1:]] for h in hosts]
    con.executemany(f"INSERT INTO attempt_hosts VALUES ({', '.join('?' * k)})", data)


def _count(con, table: str) -> int:
    """The attempts a cut table (attempt_hosts, class_cuts: columns c2..cK) was made for; 1 without one."""
    if not table_exists(con, table):
        return 1
    return 1 + sum(1 for c in columns(con, table) if re.fullmatch(r"c\d+", c))


def attempt_expr(con: duckdb.DuckDBPyConnection, t: str, own: str, dflt: str, untimed: str = "0") -> str:
    """SQL: the attempt of a line whose aligned time is `t`, its host's row of attempt_hosts `own`
    (NULL when its host has none) and the default row `dflt`; `untimed`: the attempt of a line
    with no time (0: unknown)."""
    k = _count(con, "attempt_hosts")
    if k <= 1:
        return "1"
    terms = ", ".join(f"CASE WHEN {t} >= coalesce({own}.c{i}, {dflt}.c{i}) THEN {i} END" for i in range(2, k + 1))
    return f"CASE WHEN {t} IS NULL THEN {untimed} ELSE greatest(1, {terms}) END"


# torchrun's --log-dir: <log_dir>/<run_id>/attempt_<restart_count>/<local_rank>/{stdout,stderr}.log and
# error.json. The agent empties attempt_<k> each time it starts a worker group (DefaultLogsSpecs.reify:
# rmtree, then the files opened "w"), so every file of that directory is of one start: a file with no
# time of its own (rank 0's progress bars) is of the attempt its timed siblings last wrote in.
TORCHRUN_ATTEMPT_DIR = r"^(.*/attempt_[0-9]+)/[0-9]+/[^/]+$"


def write_untimed_files(con: duckdb.DuckDBPyConnection) -> None:
    """Temp table untimed_files (file_id, attempt): the attempt of each file of a torchrun log directory
    that holds no timed line, from the last timed line of the other files of its attempt directory
    (attempt_hosts must be written, and view aligned_groups_all made)."""
    expr = attempt_expr(con, "l.t", "ah", "ad")
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE untimed_files AS
        WITH f AS (
            SELECT file_id, regexp_extract(any_value(file), '{TORCHRUN_ATTEMPT_DIR}', 1) AS dir,
                   max(last_ats) FILTER (WHERE ts_ok) AS t,
                   arg_max(host, last_ats) FILTER (WHERE ts_ok) AS host
            FROM aligned_groups_all GROUP BY file_id
        ), l AS (
            SELECT dir, arg_max(host, t) AS host, max(t) AS t FROM f WHERE dir <> '' AND t IS NOT NULL GROUP BY dir
        )
        SELECT f.file_id, {expr} AS attempt
        FROM f JOIN l USING (dir) LEFT JOIN attempt_hosts ah ON ah.host = l.host
        CROSS JOIN (SELECT * FROM attempt_hosts WHERE host IS NULL) ad
        WHERE f.t IS NULL
    """)


def write_class_cuts(con: duckdb.DuckDBPyConnection) -> None:
    """Temp table class_cuts: per class of lines, the LOGGED time each attempt k > 1 begins on its host
    (its own host, else the one host its file's lines resolve to: a rank's file names none itself, nor
    a pod's log the ranks of the torchrun it runs), so that queries/align/event_groups.sql splits every
    line by attempt with a comparison of its own time; column untimed: the attempt of its lines with no
    time (write_untimed_files), else NULL. Columns key and rkey are NULL on those rows. A class of no host
    in a console of several hosts (srun's output: the tasks' lines, each written on its task's node) has,
    besides its row, one row per task (key: srun's label) and one per rank (rkey: a line's own rank, as
    DeepSpeed's `[Rank N]` and torch's `[rankN]:` name it) whose lines all resolve to one host: its cut on
    that host's clock. On the console's one clock (the job's cut), a task or rank whose node runs minutes
    behind would have its first lines of an attempt read as the last one's."""
    from ..clock_key import FILE_CLOCK
    k = _count(con, "attempt_hosts")
    shift = "to_microseconds(CAST(round(coalesce(o.offset_s, 0.0) * 1e6) AS BIGINT))"
    cols = ", ".join(f"coalesce(h.c{i}, d.c{i}) + {shift} AS c{i}" for i in range(2, k + 1))
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE class_cuts AS
        WITH fh AS (SELECT file_id, any_value(host) AS host FROM aligned_groups_all
                    GROUP BY file_id
                    HAVING count(DISTINCT host) = 1 AND (count(DISTINCT rank) <= 1 OR count(task) = 0)),
             kh AS (SELECT file_id, task AS key, any_value(host) AS host
                    FROM aligned_groups_all WHERE task IS NOT NULL AND host IS NOT NULL
                    GROUP BY ALL HAVING count(DISTINCT host) = 1),
             rh AS (SELECT file_id, rank AS rkey, any_value(host) AS host
                    FROM aligned_groups_all WHERE rank IS NOT NULL AND host IS NOT NULL
                    GROUP BY ALL HAVING count(DISTINCT host) = 1),
             several AS (SELECT file_id FROM aligned_groups_all GROUP BY file_id HAVING count(DISTINCT host) > 1),
             t AS (   -- (class, key, rkey, host whose cut it takes, clock its lines are logged on)
                 SELECT c.class_id, c.file_id, CAST(NULL AS INTEGER) AS key, CAST(NULL AS INTEGER) AS rkey,
                        coalesce(c.host, fh.host) AS host, coalesce(c.host, fh.host, '{FILE_CLOCK}' || c.file) AS clock
                 FROM event_classes c LEFT JOIN fh ON fh.file_id = c.file_id
                 UNION ALL
                 SELECT c.class_id, c.file_id, kh.key, NULL, kh.host, kh.host
                 FROM event_classes c JOIN several USING (file_id) JOIN kh USING (file_id)
                 WHERE c.host IS NULL
                 UNION ALL
                 SELECT c.class_id, c.file_id, NULL, rh.rkey, rh.host, rh.host
                 FROM event_classes c JOIN several USING (file_id) JOIN rh USING (file_id)
                 WHERE c.host IS NULL)
        SELECT t.class_id, t.key, t.rkey, {cols}, u.attempt AS untimed
        FROM t LEFT JOIN attempt_hosts h ON h.host = t.host
        LEFT JOIN clock_offsets o ON o.host = t.clock
        LEFT JOIN untimed_files u ON u.file_id = t.file_id
        CROSS JOIN (SELECT * FROM attempt_hosts WHERE host IS NULL) d
    """)
    # no such console: the cuts as a store's before keyed rows (its groups, kept by their stamp, stay good)
    for key in ("rkey", "key"):
        if not con.execute(f"SELECT count(*) FROM class_cuts WHERE {key} IS NOT NULL").fetchone()[0]:
            con.execute(f"ALTER TABLE class_cuts DROP COLUMN {key}")


def cut_exprs(con: duckdb.DuckDBPyConnection) -> list[str]:
    """SQL: the logged time each attempt k > 1 begins for a line (or a part of lines of one key) whose
    class_cuts rows are joined as cc (the class's), ck (its task's) and cr (its rank's: see line_attempt)."""
    if not table_exists(con, "class_cuts"):
        return []
    have = columns(con, "class_cuts")   # (a store's cuts of session 17 or before: no key; of session 19: no rkey)
    joins = [j for j, col in (("ck", "key"), ("cr", "rkey")) if col in have] + ["cc"]
    return [f"coalesce({', '.join(f'{j}.c{i}' for j in joins)})" if len(joins) > 1 else f"cc.c{i}"
            for i in range(2, _count(con, "class_cuts") + 1)]


def line_attempt(con: duckdb.DuckDBPyConnection) -> tuple[str, str]:
    """(expression, join) for event_rows_keyed: a line's attempt from its logged time and class_cuts."""
    cuts = cut_exprs(con)
    if not cuts:
        return "1", ""
    terms = ", ".join(f"CASE WHEN r.ts >= {c} THEN {i} END" for i, c in enumerate(cuts, start=2))
    sane = "r.ts >= TIMESTAMP '1990-01-01' AND r.ts < TIMESTAMP '2100-01-01'"   # as the aligned views' ats
    have = columns(con, "class_cuts")
    untimed = "coalesce(cc.untimed, 0)" if "untimed" in have else "0"
    keys = [k for k in ("key", "rkey") if k in have]
    plain = " AND ".join(f"{k} IS NULL" for k in keys) or "true"
    join = f" LEFT JOIN (SELECT * FROM class_cuts WHERE {plain}) cc ON cc.class_id = r.class_id"
    if "key" in have:
        join += (" LEFT JOIN (SELECT * FROM class_cuts WHERE key IS NOT NULL) ck"
                 " ON ck.class_id = r.class_id AND ck.key = r.task")
    if "rkey" in have:
        join += (" LEFT JOIN (SELECT * FROM class_cuts WHERE rkey IS NOT NULL) cr"
                 " ON cr.class_id = r.class_id AND cr.rkey = r.rank")
    return (f"CASE WHEN r.ts IS NULL THEN {untimed} WHEN NOT ({sane}) THEN 0 ELSE greatest(1, {terms}) END",
            join)


def apply(con: duckdb.DuckDBPyConnection, attempts: list[Attempt]) -> None:
    """Give every line of the correlator's views its attempt: the cuts, the groups split by attempt
    (one more pass over every line, only when there are two attempts or more), the aligned views."""
    from .clock import refresh_aligned
    from .identity import regroup
    write_cuts(con, attempts)
    write_untimed_files(con)
    if len(attempts) > 1:
        write_class_cuts(con)
        regroup(con)
    elif table_exists(con, "class_cuts"):   # the store's groups were split for attempts not found now
        con.execute("DROP TABLE temp.class_cuts")
        regroup(con)
    refresh_aligned(con)
    scope(con, None)


VIEWS = ("aligned_events", "hot_events", "aligned_groups")


def scope(con: duckdb.DuckDBPyConnection, attempt: int | None, timeless: bool = False) -> None:
    """Point the views the detectors read (aligned_events, hot_events, aligned_groups) at the lines of
    one attempt (None: every line); `timeless`: with the lines that have no time (attempt 0)."""
    from .survival import new_scope
    where = "" if attempt is None else f" WHERE attempt IN ({int(attempt)}{', 0' if timeless else ''})"
    for v in VIEWS:
        if table_exists(con, f"{v}_all"):
            con.execute(f"CREATE OR REPLACE TEMP VIEW {v} AS SELECT * FROM {v}_all{where}")
    new_scope(con)   # what survival.py read through the views is of the lines before


def find_attempts(con: duckdb.DuckDBPyConnection) -> list[Attempt]:
    """The attempts of the run in the store (after clock.align), every line given its attempt and
    each attempt its end and its first and last progress."""
    signs, progress, failures = collect(con)
    attempts = segment(signs, progress, failures)
    apply(con, attempts)
    spans = {r["attempt"]: r for r in rows(con, """
        SELECT attempt, min(first_ats) AS first, max(last_ats) AS last,
               min(first_ats) FILTER (WHERE kind = 'progress') AS first_progress,
               max(last_ats) FILTER (WHERE kind = 'progress') AS last_progress,
               max(max_step) AS max_step
        FROM aligned_groups_all WHERE first_ats IS NOT NULL GROUP BY attempt""")}
    for a in attempts:
        sp = spans.get(a.id, {})
        if a.start is None:
            a.start = sp.get("first")
        a.end = sp.get("last")
        a.first_progress = sp.get("first_progress")
        a.last_progress = sp.get("last_progress")
        a.max_step = sp.get("max_step")
    return attempts


# ---------------------------------------------------------------- the store's tables

def line_outcomes(con: duckdb.DuckDBPyConnection, attempts: list[Attempt]) -> dict[int, str]:
    """Each attempt's outcome as its lines show it, without a diagnosis (what ingest stores): failed when
    a cause or symptom line or an error was written, completed on a launcher's or framework's normal
    end, cancelled when the scheduler cancelled it (incidents.outcome: the one rule, also for diagnose)."""
    from .incidents import outcome
    flags = {r["attempt"]: r for r in rows(con, """
        SELECT attempt,
               bool_or(role IN ('cause', 'symptom') OR (severity IN ('error', 'critical') AND role <> 'info')) AS failed,
               bool_or(kind IN ('worker_group_done', 'step_end', 'training_done')) AS ended,
               bool_or(kind = 'cancelled') AS cancelled
        FROM aligned_groups_all GROUP BY attempt""")}
    out = {}
    for a in attempts:
        f = flags.get(a.id) or {}
        out[a.id] = outcome(failed=bool(f.get("failed")), ended=bool(f.get("ended")),
                            cancelled=bool(f.get("cancelled")), last=a.id == len(attempts))
    return out


def store_attempts(con: duckdb.DuckDBPyConnection, clock: list[dict], db: str) -> list[Attempt]:
    """Tables `attempts` (one row per attempt) and `attempt_spans` (per host, the aligned times each
    attempt begins and ends there; queries/store/attempts.sql), which view events_aligned reads; and the groups split
    by attempt kept (identity.store_groups) with the cuts that split them (table attempt_class_cuts),
    so that diagnose does not split them again."""
    from .clock import create_aligned_view
    from .identity import store_groups
    create_aligned_view(con, clock)
    if table_exists(con, "interpolated_times"):   # what view events_aligned reads of the diagnosis's clock
        con.execute(f'DELETE FROM "{db}".main.interpolated_times')
        con.execute(f'INSERT INTO "{db}".main.interpolated_times SELECT * FROM temp.interpolated_times')
    found = find_attempts(con)
    outs = line_outcomes(con, found)
    con.execute(f'DELETE FROM "{db}".main.attempts')
    con.executemany(f'INSERT INTO "{db}".main.attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
                    [[a.id, a.start, a.end, outs[a.id], a.basis, a.file, a.line, a.first_progress,
                      a.last_progress, a.max_step] for a in found])
    hosts = sorted({r[0] for r in con.execute("SELECT DISTINCT host FROM event_classes WHERE host IS NOT NULL"
                                              ).fetchall()} | {h for a in found for h in a.cuts})
    spans = []
    for h in [""] + hosts:
        starts = [(1, dt.datetime(1, 1, 1))] + [(a.id, a.cuts.get(h, a.start)) for a in found[1:]]
        starts = [(k, t) for k, t in starts if t < NEVER]   # a host that stayed in an older attempt
        stops = [t for _, t in starts[1:]] + [NEVER]
        spans += [[h, k, lo, hi] for (k, lo), hi in zip(starts, stops)]
    con.execute(f'DELETE FROM "{db}".main.attempt_spans')
    con.executemany(f'INSERT INTO "{db}".main.attempt_spans VALUES (?, ?, ?, ?)', spans)
    con.execute(f'DROP TABLE IF EXISTS "{db}".main.attempt_class_cuts')
    if len(found) > 1:
        con.execute(f'CREATE TABLE "{db}".main.attempt_class_cuts AS SELECT * FROM temp.class_cuts')
    if len(found) > 1 or has_rows(con, "interpolated_times"):   # the groups were made again: keep those
        store_groups(con)
    return found


def stored_cuts(con: duckdb.DuckDBPyConnection) -> None:
    """Temp table class_cuts from the store's attempt_class_cuts, when ingest split the
    groups by attempt: the groups it kept are then taken as they are (identity._groups' stamp)."""
    if table_exists(con, "attempt_class_cuts"):
        con.execute("CREATE OR REPLACE TEMP TABLE class_cuts AS SELECT * FROM main.attempt_class_cuts")
