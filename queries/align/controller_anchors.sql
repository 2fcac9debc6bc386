-- name: controller_anchors
-- kind: align
-- params: none (reads temp table event_groups, queries/align/event_groups.sql, and fact table slurm_alloc)
-- returns: the anchors of a Slurm controller's clock: its log names no host, so no host's offset is
--   its own. Per file whose lines name no host and job it allocated (`sched: Allocate JobId=J`):
--   the time it logged the allocation (t_ctld, epoch seconds as logged) and, per host, the first line
--   that host wrote with that job id (t_host, as logged): slurmd launches the job's batch script or
--   its step right after the allocation, so the first of them on the aligned clock is the allocation
--   time less that launch delay (ranktrace.correlate.clock.controller_clocks). batch: the host is the
--   job's batch host (slurmd's 'Launching batch job J'): it starts the job as soon as it is allocated,
--   the other nodes only when the script reaches srun, which may be many seconds later.
WITH hostless AS (
    SELECT file_id FROM event_groups GROUP BY file_id HAVING count(host) = 0
), alloc AS (
    SELECT e.file, coalesce(a.job_id, a.bf_job_id) AS job_id, epoch(min(e.ts)) AS t_ctld
    FROM slurm_alloc a JOIN events e USING (event_id)
    WHERE e.file_id IN (SELECT file_id FROM hostless)
      AND e.ts >= TIMESTAMP '1990-01-01' AND e.ts < TIMESTAMP '2100-01-01'
    GROUP BY ALL
), node AS (
    SELECT job_id, host, epoch(min(ts)) AS t_host
    FROM event_groups
    WHERE host IS NOT NULL AND job_id IS NOT NULL AND sane
      AND ts_kind IN ('exact', 'local', 'year_inferred', 'envelope')
    GROUP BY ALL
), batch AS (
    SELECT DISTINCT job_id, host FROM events
    WHERE kind = 'step_start' AND message LIKE 'Launching batch job %' AND host IS NOT NULL AND job_id IS NOT NULL
)
SELECT a.file, a.job_id, a.t_ctld, n.host, n.t_host, b.host IS NOT NULL AS batch
FROM alloc a JOIN node n USING (job_id) LEFT JOIN batch b USING (job_id, host)
ORDER BY ALL
