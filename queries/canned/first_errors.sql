-- name: first_errors
-- kind: canned
-- params: none
-- returns: the first 50 cause and symptom lines in aligned time order (ats; ts as
--   logged beside it), with role, so the first CAUSE stands out from the loud symptoms.
--   Times are on the aligned clock (ats, events_aligned); --tee copies (echoes) count once.
WITH ev AS (SELECT * FROM events_aligned WHERE event_id NOT IN (SELECT event_id FROM echoes))
SELECT ats, ts, ts_kind, host, rank, role, kind, file || ':' || line AS at, left(message, 160) AS message
FROM ev
WHERE role IN ('cause', 'symptom')
ORDER BY ats NULLS LAST, file, line
LIMIT 50
