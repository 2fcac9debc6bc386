-- name: markers_told
-- kind: attempts
-- params: $jobs (the run's Slurm jobs, a list; NULL: every job); reads temp views attempt_markers
--   (markers.sql's rows) and attempt_failures (t: the aligned times of cause lines)
-- returns: markers.sql's rows of no Slurm job or of the run's, less the lines ranktrace would take
--   for a launch told again anyway (ranktrace.correlate.attempts._retold: the same launch line, same
--   log, host and step, told before with no failure and no restart notice since): here only the
--   retellings with no failure and no restart notice in the closed span from the telling before,
--   so that _retold decides the rest as it would on every row. A scheduler's log repeats an
--   allocation or a step launch for as long as the job runs (86,600 of them in a 1 GB benchmark
--   corpus): as rows in Python they were most of what ingest held at its peak.
--   round_no: the row's place among its log's rows of its kind and signal (counted before the cut:
--   "rendezvous round N").
WITH run AS (
    SELECT * FROM attempt_markers
    WHERE job_id IS NULL OR $jobs IS NULL OR list_contains($jobs, job_id)
), stops AS (
    SELECT ats AS t FROM run WHERE signal = 'restart'
    UNION ALL
    SELECT t FROM attempt_failures
), told AS (
    SELECT *,
           row_number() OVER (PARTITION BY host, file, kind, signal ORDER BY ats, line) AS round_no,
           lag(ats) OVER (PARTITION BY signal, file, host,
                                       CASE WHEN signal = 'launch' THEN step_id END,
                                       CASE WHEN signal = 'round' THEN kind END
                          ORDER BY ats, line) AS told_at
    FROM run
)
SELECT * EXCLUDE (told_at) FROM told
WHERE signal NOT IN ('round', 'launch') OR told_at IS NULL
   OR EXISTS (SELECT 1 FROM stops s WHERE s.t BETWEEN told.told_at AND told.ats)
ORDER BY ats, file, line
