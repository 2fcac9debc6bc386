-- name: first_cause
-- kind: detector
-- params: none (reads temp view aligned_events and temp table kind_catalog)
-- returns: one row per culprit (rank, else host+pid, else host, else pod, else pid, else file): its earliest
--   cause-role event on the aligned clock (event_id, ats, ts_ok, identity, kind, failure, file,
--   line, message) and n_causes, ordered by ats (events without a time last).
-- The first per culprit is picked by an aggregate over keys (no text), then its row read again:
-- a window over every cause with its text held them all at once (150k 2 KB Xid lines: more than
-- a reader's 512 MB, and DuckDB's window does not spill), a stream of them holds none.
WITH c AS NOT MATERIALIZED (
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
), w AS (
    SELECT culprit, count(*) AS n_causes,
           -- the first by (ats, nulls last; file; line), as ORDER BY ats NULLS LAST, file, line
           arg_min(event_id, struct_pack(n := ats IS NULL, a := coalesce(ats, TIMESTAMP '1970-01-01'), f := file, l := line)) AS event_id
    FROM c GROUP BY culprit
)
SELECT event_id, ats, ts_ok, ts_kind, program, format, host, rank, local_rank, pid, pod, container, gpu, job_id, kind,
       coalesce(failure, 'unknown') AS failure, file, line, message, raw, culprit, n_causes
FROM c JOIN w USING (culprit, event_id)
ORDER BY ats NULLS LAST, file, line
