-- name: errors_by_node
-- kind: canned
-- params: none
-- returns: per host: first and last error time, counts of cause / symptom / error lines, the
--   kinds seen. A node with causes and an early first error is where to look first.
--   Times are on the aligned clock (ats, events_aligned); --tee copies (echoes) count once.
WITH ev AS (SELECT * FROM events_aligned WHERE event_id NOT IN (SELECT event_id FROM echoes))
SELECT host,
       min(ats) FILTER (WHERE severity IN ('error', 'critical')) AS first_error,
       max(ats) FILTER (WHERE severity IN ('error', 'critical')) AS last_error,
       count(*) FILTER (WHERE role = 'cause') AS causes,
       count(*) FILTER (WHERE role = 'symptom') AS symptoms,
       count(*) FILTER (WHERE severity IN ('error', 'critical')) AS errors,
       string_agg(DISTINCT kind, ', ' ORDER BY kind) FILTER (WHERE role IN ('cause', 'symptom')) AS kinds
FROM ev
GROUP BY host
ORDER BY first_error NULLS LAST, host
