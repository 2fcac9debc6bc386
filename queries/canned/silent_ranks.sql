-- name: silent_ranks
-- kind: canned
-- params: none
-- returns: ranks that logged progress but wrote no error of their own, beside how many ranks did
--   complain (cause/symptom lines). When most ranks complain about a lost peer, the silent ones
--   are the suspects.
--   Times are on the aligned clock (ats, events_aligned); --tee copies (echoes) count once.
WITH ev AS (SELECT * FROM events_aligned WHERE event_id NOT IN (SELECT event_id FROM echoes)), per AS (
    SELECT host, rank, count(*) AS lines,
           count(*) FILTER (WHERE role IN ('cause', 'symptom')) AS complaints,
           max(ats) AS last_ts
    FROM ev WHERE rank IS NOT NULL GROUP BY host, rank
)
SELECT host, rank, lines, last_ts,
       (SELECT count(*) FROM per p2 WHERE p2.complaints > 0) AS ranks_complaining,
       (SELECT count(*) FROM per) AS ranks_seen
FROM per WHERE complaints = 0
ORDER BY last_ts NULLS FIRST, host, rank
