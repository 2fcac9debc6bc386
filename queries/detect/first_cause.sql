-- name: first_cause
-- kind: detector
-- params: none (reads temp view aligned_events and temp table kind_catalog)
-- returns: one row per culprit (rank, else host+pid, else host, else pod, else pid, else file): its earliest
--   cause-role event on the aligned clock (event_id, ats, ts_ok, identity, kind, failure, file,
--   line, message) and n_causes, ordered by ats (events without a time last).
WITH c AS (
    SELECT e.* REPLACE (
               -- a daemon line inside a job's output (slurmstepd under srun --label) carries the
               -- label of the stream, not the rank that failed
               CASE WHEN e.program IN ('slurmstepd', 'slurmd', 'slurmctld', 'srun') THEN NULL ELSE e.rank END AS rank),
           k.failure AS failure,
           coalesce('rank:' || CASE WHEN e.program IN ('slurmstepd', 'slurmd', 'slurmctld', 'srun') THEN NULL
                                    ELSE e.rank END, 'host:' || e.host || '/pid:' || e.pid, 'host:' || e.host,
                    'pod:' || e.pod, 'pid:' || e.pid, 'file:' || e.file) AS culprit
    FROM aligned_events e LEFT JOIN kind_catalog k ON k.kind = e.kind
    WHERE e.role = 'cause'
      AND coalesce(e.kind, '') <> 'hang_report'   -- names OTHER ranks: see named_ranks.sql
      -- A time of year 0001/9999 (ats NULL), or one ingest ignored as implausible (the line
      -- inherits the line before's, its ts_text says what was written): not a cause to order.
      AND (e.ats IS NOT NULL OR e.ts IS NULL) AND NOT (e.ts_kind = 'interpolated' AND e.ts_text IS NOT NULL)
), r AS (
    SELECT *, row_number() OVER (PARTITION BY culprit ORDER BY ats NULLS LAST, file, line) AS k,
           count(*) OVER (PARTITION BY culprit) AS n_causes
    FROM c
)
SELECT event_id, ats, ts_ok, ts_kind, program, format, host, rank, local_rank, pid, pod, container, gpu, job_id, kind,
       coalesce(failure, 'unknown') AS failure, file, line, message, raw, culprit, n_causes
FROM r WHERE k = 1
ORDER BY ats NULLS LAST, file, line
