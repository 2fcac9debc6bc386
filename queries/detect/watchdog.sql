-- name: watchdog
-- kind: detector
-- params: none (reads temp view aligned_events)
-- returns: collective watchdog reports, one row per line that names a SeqNum: reporter rank/host,
--   pg (process group, when written), seq (the collective that timed out), op (OpType),
--   last_completed ("last completed NCCL work: N" when written), timeout_ms, ran_for_ms, ats,
--   file, line, message. The rank that the others wait for is missing from these reports or has
--   the lowest last completed seq; different op at one seq = desync.
SELECT event_id, ats, host, rank,
       nullif(regexp_extract(message, '\[PG (?:ID )?(\S+)', 1), '') AS pg,
       TRY_CAST(regexp_extract(message, 'SeqNum=(\d+)', 1) AS BIGINT) AS seq,
       nullif(regexp_extract(message, 'OpType=(\w+)', 1), '') AS op,
       TRY_CAST(nullif(regexp_extract(message, '(?i)last completed (?:NCCL )?work: (-?\d+)', 1), '') AS BIGINT) AS last_completed,
       TRY_CAST(nullif(regexp_extract(message, 'Timeout\(ms\)=(\d+)', 1), '') AS BIGINT) AS timeout_ms,
       TRY_CAST(nullif(regexp_extract(message, 'ran for (\d+) milliseconds', 1), '') AS BIGINT) AS ran_for_ms,
       file, line, message
FROM aligned_events
WHERE message LIKE '%SeqNum=%'
ORDER BY ats NULLS LAST, file, line
