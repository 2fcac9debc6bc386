-- name: markers_told
-- kind: attempts
-- params: $jobs (the run's Slurm jobs, a list; NULL: every job); reads temp views attempt_markers
--   (markers.sql's rows) and attempt_failures (t: the aligned times of cause lines)
-- returns: markers.sql's rows of no Slurm job or of the run's, less the lines ranktrace would take
--   for a launch told again anyway (ranktrace.correlate.attempts._retold: the same launch line, same
--   log, host and step, told before with no failure and no restart notice since): here only the
--   retellings with no failure and no restart notice in the closed span from the telling before,
--   so that _retold decides the rest as it would on every row. A scheduler's log repeats an
--   allocation or a step launch for as long as the job runs (376k of them in a 1 GB benchmark
--   corpus): as rows in Python they were most of what ingest held at its peak.
--   round_no (rounds only, else NULL): the row's place among its log's rounds of its kind (counted
--   before the cut: "rendezvous round N").
-- How, without a window over every retelling (two sorts of the 376k rows were 0.8 CPU-s): a telling
-- (`told`: its log's telling before, in the same series, at told_at) is kept when told_at is NULL or a
-- stop t has told_at <= t <= ats; that is, when the row is the first of its series (by ats, line) after
-- the last stop strictly before it (an ASOF join and an aggregate: `last_stop`, `firsts`), or a stop
-- fell at its very time.
WITH run AS (
    SELECT * FROM attempt_markers
    WHERE job_id IS NULL OR $jobs IS NULL OR list_contains($jobs, job_id)
), stops AS (
    SELECT DISTINCT t FROM (
        SELECT ats AS t FROM run WHERE signal = 'restart'
        UNION ALL
        SELECT t FROM attempt_failures)
), series AS (   -- the launches of one log, host and step; the rounds of one log, host and kind
    SELECT r.event_id, r.ats, r.line, s.t AS last_stop,
           r.signal, r.file, r.host, CASE WHEN r.signal = 'launch' THEN r.step_id END AS step_key,
           CASE WHEN r.signal = 'round' THEN r.kind END AS kind_key
    FROM run r ASOF LEFT JOIN stops s ON r.ats > s.t
    WHERE r.signal IN ('round', 'launch')
), firsts AS (
    SELECT arg_min(event_id, struct_pack(a := ats, l := line)) AS event_id
    FROM series GROUP BY signal, file, host, step_key, kind_key, last_stop
), kept AS (
    SELECT * FROM run
    WHERE signal NOT IN ('round', 'launch')
       OR event_id IN (SELECT event_id FROM firsts)
       OR ats IN (SELECT t FROM stops)
), rounds AS (
    SELECT event_id, row_number() OVER (PARTITION BY host, file, kind ORDER BY ats, line) AS round_no
    FROM run WHERE signal = 'round'
)
SELECT k.*, r.round_no FROM kept k LEFT JOIN rounds r USING (event_id)
ORDER BY ats, file, line
