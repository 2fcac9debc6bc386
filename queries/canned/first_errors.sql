-- name: first_errors
-- kind: canned
-- params: none
-- returns: the first 50 cause and symptom lines in time order (logged time, not clock-aligned:
--   `ranktrace diagnose` aligns), with role, so the first CAUSE stands out from the loud symptoms.
SELECT ts, ts_kind, host, rank, role, kind, file || ':' || line AS at, left(message, 160) AS message
FROM events
WHERE role IN ('cause', 'symptom')
ORDER BY ts NULLS LAST, file, line
LIMIT 50
