-- name: last_words_per_rank
-- kind: canned
-- params: none
-- returns: per (host, rank): the time and text of its last line and of its last error, earliest
--   last line first. The rank that went quiet first is often the culprit (SIGKILL, OOM kill,
--   hang, frozen node leave no line of their own).
--   Times are on the aligned clock (ats, events_aligned); --tee copies (echoes) count once.
WITH ev AS (SELECT * FROM events_aligned WHERE event_id NOT IN (SELECT event_id FROM echoes)), r AS (
    SELECT host, rank, ats, file, line, severity, message,
           row_number() OVER (PARTITION BY host, rank ORDER BY ats DESC NULLS LAST, file DESC, line DESC) AS k
    FROM ev WHERE rank IS NOT NULL OR host IS NOT NULL
), e AS (
    SELECT host, rank, max(ats) FILTER (WHERE severity IN ('error', 'critical')) AS last_error_ts,
           last(message ORDER BY ats, file DESC, line)
               FILTER (WHERE severity IN ('error', 'critical') AND ats IS NOT NULL) AS last_error
    FROM ev GROUP BY host, rank
)
SELECT r.host, r.rank, r.ats AS last_ts, r.file || ':' || r.line AS at, left(r.message, 160) AS last_words,
       e.last_error_ts, left(e.last_error, 160) AS last_error
FROM r LEFT JOIN e ON e.host IS NOT DISTINCT FROM r.host AND e.rank IS NOT DISTINCT FROM r.rank
WHERE r.k = 1
ORDER BY last_ts NULLS FIRST, host, rank
