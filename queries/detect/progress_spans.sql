-- name: progress_spans
-- kind: detector
-- scope: all
-- params: none (reads temp view aligned_events)
-- returns: one row per (host, rank) that logged training progress (kind = 'progress', a time known): host,
--   rank, n (progress lines), first_ats, last_ats on the aligned clock. ranktrace.correlate.survival uses it
--   to tell a warning the job survived (progress went on after it) from a root cause (progress stopped).
SELECT host, rank, count(*) AS n, min(ats) AS first_ats, max(ats) AS last_ats
FROM aligned_events
WHERE kind = 'progress' AND ats IS NOT NULL
GROUP BY host, rank
ORDER BY host NULLS LAST, rank NULLS LAST
