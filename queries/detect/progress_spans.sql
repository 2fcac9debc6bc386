-- name: progress_spans
-- kind: detector
-- scope: all
-- params: none (reads temp view aligned_groups, queries/align/event_groups.sql)
-- returns: one row per (host, rank) that logged training progress (kind = 'progress', a time known): host,
--   rank, n (progress lines), first_ats, last_ats on the aligned clock. ranktrace.correlate.survival uses it
--   to tell a warning the job survived (progress went on after it) from a root cause (progress stopped).
SELECT host, rank, CAST(sum(n) AS BIGINT) AS n, min(first_ats) AS first_ats, max(last_ats) AS last_ats
FROM aligned_groups
WHERE kind = 'progress' AND first_ats IS NOT NULL
GROUP BY host, rank
ORDER BY host NULLS LAST, rank NULLS LAST
