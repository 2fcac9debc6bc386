-- name: symptom_lanes
-- kind: detector
-- params: none (reads temp view aligned_events: hot_events when diagnose made it)
-- returns: one row per (host, rank) that complained (a symptom line with a time): host, rank,
--   first_ats. ranktrace.correlate.choose counts how many of them complained after a candidate
--   failed (the symptoms it explains).
SELECT host, rank, min(ats) AS first_ats
FROM aligned_events
WHERE role = 'symptom' AND ats IS NOT NULL
GROUP BY host, rank
ORDER BY host NULLS LAST, rank NULLS LAST
