-- name: symptom_lanes
-- kind: detector
-- params: $window_s = how long progress must go on after a line for the line to count as survived (s;
--   ranktrace.correlate.survival.window_s); $own_window_s = the same for the complaining rank's own
--   progress (survival.own_window_s: a few of its steps; a rank that lost its peer makes none)
-- reads: temp view aligned_events (hot_events when diagnose made it), aligned_groups (progress)
-- returns: one row per (host, rank) that complained (a symptom line with a time): host, rank,
--   first_ats, the first complaint its lane did not train past (its rank's progress, else its
--   host's, else the job's, went on less than $window_s after it: a socket reset retried an hour before
--   the failure is not this failure's). ranktrace.correlate.choose counts how many lanes complained
--   after a candidate failed (the symptoms it explains) and whether the candidate complained first.
WITH p AS (
    SELECT host, rank, max(last_ats) AS last_ats
    FROM aligned_groups WHERE kind = 'progress' AND first_ats IS NOT NULL
    GROUP BY host, rank
), s AS (
    SELECT host, rank, ats FROM aligned_events WHERE role = 'symptom' AND ats IS NOT NULL
), lane AS (
    SELECT s.host, s.rank, s.ats,
           (SELECT max(p.last_ats) FROM p WHERE p.rank = s.rank AND (p.host = s.host OR p.host IS NULL OR s.host IS NULL))
               AS own_until,
           coalesce((SELECT max(p.last_ats) FROM p WHERE p.host = s.host),
                    (SELECT max(p.last_ats) FROM p)) AS progress_until
    FROM s
)
SELECT host, rank, min(ats) AS first_ats
FROM lane
WHERE CASE WHEN own_until IS NOT NULL THEN own_until < ats + to_seconds(CAST($own_window_s AS DOUBLE))
           ELSE progress_until IS NULL OR progress_until < ats + to_seconds(CAST($window_s AS DOUBLE)) END
GROUP BY host, rank
ORDER BY host NULLS LAST, rank NULLS LAST
