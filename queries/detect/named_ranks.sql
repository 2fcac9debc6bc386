-- name: named_ranks
-- kind: detector
-- params: none (reads temp view aligned_events)
-- returns: ranks that OTHER processes name as late, missing or faulty: rank 0's monitoredBarrier
--   report ("Ranks 4, 5 failed to pass monitoredBarrier", "Rank 3 failed to pass
--   monitoredBarrier"), flight-recorder lines ("a collective timeout from  rank 13"), c10d
--   "check rank N logs for faulty rank" (weak: generic advice, usually rank 0). Columns: event_id, ats, host,
--   rank (the reporter), named_rank, how (barrier|from_rank|check_rank), file, line, message.
WITH src AS (
    SELECT event_id, ats, host, rank, file, line, message
    FROM aligned_events
    WHERE message LIKE '%monitoredBarrier%' OR message LIKE '%from rank%' OR message LIKE '%from  rank%'
       OR message LIKE '%faulty rank%' OR message LIKE '%check rank%'
), barrier AS (
    SELECT *, 'barrier' AS how,
           regexp_extract(message, '(?i)ranks?\s+([0-9][0-9, ]*)\s+failed to pass monitoredBarrier', 1) AS lst
    FROM src WHERE message LIKE '%monitoredBarrier%'
), fromr AS (
    SELECT *, 'from_rank' AS how, regexp_extract(message, '(?i)(?:timeout|timed out)\s+from\s+rank\s+(\d+)', 1) AS lst
    FROM src WHERE regexp_matches(message, '(?i)(?:timeout|timed out)\s+from\s+rank\s+\d+')
), checkr AS (
    SELECT *, 'check_rank' AS how,
           regexp_extract(message, '(?i)check rank (\d+) logs? for (?:the )?faulty rank', 1) AS lst
    FROM src WHERE message LIKE '%faulty rank%'
), allr AS (
    SELECT * FROM barrier UNION ALL SELECT * FROM fromr UNION ALL SELECT * FROM checkr
)
SELECT event_id, ats, host, rank, CAST(trim(x) AS INTEGER) AS named_rank, how, file, line, message
FROM allr, LATERAL unnest(string_split(lst, ',')) AS t(x)
WHERE lst <> '' AND trim(x) <> ''
ORDER BY ats NULLS LAST, file, line
