-- name: first_cause
-- kind: detector
-- params: $healthy = the time up to which the job trained on (survival.healthy_until; NULL: unknown)
--   (reads temp view aligned_events and temp table kind_catalog)
-- returns: per culprit (rank, else host+pid, else host, else pod, else pid, else file) and kind of
--   failure: its earliest cause-role event on the aligned clock (event_id, ats, ts_ok, reported (a
--   daemon's or srun's report of someone else's tasks), identity,
--   kind, failure, file, line, message) and n_causes (of the culprit), and, when that one came
--   before $healthy (a warning the job trained past), also its earliest from $healthy on (what it
--   said when the job stopped); ordered by ats (events without a time last). Per kind: an untimed
--   line takes the time of the line before it, so a retried socket's warning and the port error
--   after it can share a time, and the first of them by line is not the only one that counts.
-- The first per culprit is picked by an aggregate over keys (no text), then its row read again:
-- a window over every cause with its text held them all at once (150k 2 KB Xid lines: more than
-- a reader's 512 MB, and DuckDB's window does not spill), a stream of them holds none.
WITH r AS NOT MATERIALIZED (
    -- a daemon's or srun's line reports on someone else's tasks: inside a job's output (slurmstepd
    -- under srun --label) it carries the label of the stream, not the rank that failed. srun's
    -- task exit names the node its tasks ran on ('srun: error: n4: task 2: Segmentation fault',
    -- written on the batch host): that node is the culprit's host (task_exits.sql reads it alike) when
    -- the state is the task's own fault (a memory or instruction fault, the OOM killer); not for
    -- 'Aborted' / 'Terminated' (how a job's watchdogs and teardown bring tasks down) nor 'Killed'
    -- (by whom, srun does not say)
    SELECT e.* REPLACE (CASE WHEN e.program = 'srun' AND e.raw LIKE '%srun: error:%task%'
                              AND regexp_matches(e.raw, ': tasks? [0-9][0-9,\-]*: (?:Segmentation fault|Bus error|Illegal instruction|Floating point exception|Out Of Memory)')
                             THEN coalesce(nullif(regexp_extract(e.raw, 'srun: error: ([^:\s]+): tasks? [0-9]', 1), ''),
                                           e.host)
                             ELSE e.host END AS host),
           e.program IN ('slurmstepd', 'slurmd', 'slurmctld', 'srun') AS reported
    FROM aligned_events e
), c AS NOT MATERIALIZED (
    SELECT e.* REPLACE (CASE WHEN e.reported THEN NULL ELSE e.rank END AS rank),
           k.failure AS failure,
           coalesce('rank:' || CASE WHEN e.reported THEN NULL ELSE e.rank END, 'host:' || e.host || '/pid:' || e.pid,
                    'host:' || e.host, 'pod:' || e.pod, 'pid:' || e.pid, 'file:' || e.file) AS culprit
    FROM r e LEFT JOIN kind_catalog k ON k.kind = e.kind
    WHERE e.role = 'cause'
      AND coalesce(e.kind, '') <> 'hang_report'   -- names OTHER ranks: see named_ranks.sql
      -- A time of year 0001/9999 (ats NULL), or one ingest ignored as implausible (the line
      -- inherits the line before's, its ts_text says what was written): not a cause to order.
      AND (e.ats IS NOT NULL OR e.ts IS NULL) AND NOT (e.ts_kind = 'interpolated' AND e.ts_text IS NOT NULL)
), k AS (
    -- the order: (ats, nulls last; file; line), as ORDER BY ats NULLS LAST, file, line
    SELECT culprit, failure, event_id, ats, count(*) OVER (PARTITION BY culprit) AS n_causes,
           struct_pack(n := ats IS NULL, a := coalesce(ats, TIMESTAMP '1970-01-01'), f := file, l := line) AS o
    FROM c
), f AS (
    SELECT culprit, any_value(n_causes) AS n_causes, arg_min(event_id, o) AS first_id,
           arg_min(event_id, o) FILTER (WHERE ats >= CAST($healthy AS TIMESTAMP)) AS late_id
    FROM k GROUP BY culprit, failure
), w AS (
    SELECT culprit, n_causes, first_id AS event_id FROM f
    UNION
    SELECT culprit, n_causes, late_id FROM f WHERE late_id IS NOT NULL
)
-- The kernel's OOM report is one kill told in several lines (mm/oom_kill.c): dump_header's '<comm> invoked
-- oom-killer' names the task that asked for memory, not the victim, and no pid; dump_oom_summary's
-- 'oom-kill:...,pid=N', __oom_kill_process's 'Killed process N' and the reaper's line name the victim. A report
-- line that names no process takes the victim of its report: the pid of the same host's nearest report line
-- within 2 s that names one (picked among the chosen rows only: a handful).
SELECT event_id, ats, ts_ok, ts_kind, program, reported, format, host, rank, local_rank,
       coalesce(pid, CASE WHEN kind = 'host_oom' AND rank IS NULL AND host IS NOT NULL AND ats IS NOT NULL THEN (
           SELECT arg_min(x.pid, (abs(epoch(x.ats) - epoch(c.ats)), x.file, x.line)) FROM c x
           WHERE x.kind = 'host_oom' AND x.host = c.host AND x.pid IS NOT NULL
             AND x.ats BETWEEN c.ats - INTERVAL 2 SECOND AND c.ats + INTERVAL 2 SECOND) END) AS pid,
       pod, container, gpu, job_id, kind,
       coalesce(failure, 'unknown') AS failure, file, line, message, raw, culprit, n_causes
FROM c JOIN w USING (culprit, event_id)
ORDER BY ats NULLS LAST, file, line
