-- name: rank_activity
-- kind: detector
-- scope: all
-- params: none (reads temp view aligned_events)
-- returns: per rank (host, rank): first and last aligned time of any line, of progress, the last
--   progress step, the count of own cause / symptom lines, whether the rank (or its launcher)
--   wrote a terminal report. Absence is evidence: a rank that stops early and says nothing
--   while its peers complain about a lost peer is the likely culprit.
WITH ev AS (
    SELECT event_id, host, rank, ats, ts_ok, role, kind, message, file, line,
           CASE WHEN (kind = 'progress' OR (kind IS NULL AND severity IN ('info', 'debug', 'notice')))
                      AND regexp_matches(message, '(?i)\b(?:global[_ ])?(?:step|iter|iteration)\s*[=:#]?\s*\[?\d+')
                THEN TRY_CAST(regexp_extract(message, '(?i)\b(?:global[_ ])?(?:step|iter|iteration)\s*[=:#]?\s*\[?(\d+)', 1) AS BIGINT)
           END AS step
    FROM aligned_events WHERE rank IS NOT NULL
)
SELECT host, rank,
       min(ats) FILTER (WHERE ts_ok) AS first_ats,
       max(ats) FILTER (WHERE ts_ok) AS last_ats,
       max(ats) FILTER (WHERE ts_ok AND step IS NOT NULL) AS last_progress_ats,
       max(step) AS last_step,
       -- the same line in two files (srun's and torchrun's logs): the first file by name, whatever
       -- the order the files went in
       last(event_id ORDER BY ats, file DESC, line) FILTER (WHERE ts_ok AND ats IS NOT NULL) AS last_event_id,
       count(*) FILTER (WHERE role = 'cause') AS n_cause,
       count(*) FILTER (WHERE role = 'symptom') AS n_symptom,
       count(*) AS n
FROM ev GROUP BY host, rank
ORDER BY rank, host
