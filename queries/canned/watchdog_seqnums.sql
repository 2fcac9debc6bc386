-- name: watchdog_seqnums
-- kind: canned
-- params: none
-- returns: per collective (SeqNum, OpType) in watchdog reports: the ranks that reported it. The
--   rank missing from a row, or reporting a lower SeqNum, is the one the others waited for; two
--   OpTypes at one SeqNum is a desync.
--   Times are on the aligned clock (ats, events_aligned); --tee copies (echoes) count once.
WITH ev AS (SELECT * FROM events_aligned WHERE event_id NOT IN (SELECT event_id FROM echoes))
SELECT TRY_CAST(regexp_extract(message, 'SeqNum=(\d+)', 1) AS BIGINT) AS seq,
       regexp_extract(message, 'OpType=(\w+)', 1) AS op,
       count(DISTINCT rank) AS ranks, string_agg(DISTINCT CAST(rank AS VARCHAR), ',' ORDER BY CAST(rank AS VARCHAR)) AS which,
       min(ats) AS first_ts
FROM ev WHERE message LIKE '%SeqNum=%'
GROUP BY ALL ORDER BY seq, op
