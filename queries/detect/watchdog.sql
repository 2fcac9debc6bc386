-- name: watchdog
-- kind: detector
-- params: none (reads temp view aligned_events)
-- returns: collective watchdog reports, one row per line that names a SeqNum: reporter rank/host,
--   pg (process group, when written), seq (the collective that timed out), op (OpType),
--   last_completed ("last completed NCCL work: N" when written), timeout_ms, ran_for_ms, ats,
--   file, line, message. The rank that the others wait for is missing from these reports or has
--   the lowest last completed seq; different op at one seq = desync.
-- A collective's SeqNum counts within its process group: reports of two groups are not compared.
-- The group is the one all its ranks name alike (ProcessGroupNCCL's createLogPrefix): its GUID in
-- '[PG ID <local id> PG GUID <guid>(<desc>) Rank r]' (the local id counts the groups one process
-- made: two ranks' `PG ID 11` may be two groups), its name in torch 2.3-2.4's '[PG <name> (<desc>)
-- Rank r]' and older '[PG <uid> Rank r]'. The line that names the SeqNum (`[Rank r] Watchdog caught
-- ... WorkNCCL(SeqNum=N, ...)`) often names no group; the same rank's `[PG ...] Exception (either an
-- error or timeout) detected by watchdog at work: N, last enqueued NCCL work: M, last completed NCCL
-- work: K.` (newer: `[PG ...] failure detected by watchdog at work sequence id: N PG status: last
-- enqueued work: M, last completed work: K`) beside it does, and what it last completed.
WITH said AS (
    SELECT *, CASE WHEN message LIKE '%PG GUID %' THEN nullif(regexp_extract(message, 'PG GUID (\w+)', 1), '')
                   ELSE nullif(regexp_extract(message, '\[PG (\w+)', 1), '') END AS pg,
           TRY_CAST(nullif(regexp_extract(message, '(?i)last completed (?:NCCL )?work: (-?\d+)', 1), '') AS BIGINT)
               AS last_completed
    FROM aligned_events
    WHERE message LIKE '%SeqNum=%' OR message LIKE '%detected by watchdog at work%'
), seqs AS (
    SELECT *, TRY_CAST(regexp_extract(message, 'SeqNum=(\d+)', 1) AS BIGINT) AS seq FROM said WHERE message LIKE '%SeqNum=%'
), work AS (   -- one rank's report of one work item, from its lines that name the group
    SELECT file, rank, TRY_CAST(regexp_extract(message, 'detected by watchdog at work(?: sequence id)?: (\d+)', 1)
                           AS BIGINT) AS work,
           min(pg) AS pg, min(last_completed) AS last_completed
    FROM said WHERE message LIKE '%detected by watchdog at work%' AND pg IS NOT NULL
    GROUP BY ALL HAVING count(DISTINCT pg) = 1
), reports AS (
    SELECT s.event_id, s.ats, s.host, s.rank,
           coalesce(s.pg, w.pg) AS pg,
           s.seq,
           nullif(regexp_extract(s.message, 'OpType=(\w+)', 1), '') AS op,
           coalesce(s.last_completed, w.last_completed) AS last_completed,
           TRY_CAST(nullif(regexp_extract(s.message, 'Timeout\(ms\)=(\d+)', 1), '') AS BIGINT) AS timeout_ms,
           TRY_CAST(nullif(regexp_extract(s.message, 'ran for (\d+) milliseconds', 1), '') AS BIGINT) AS ran_for_ms,
           s.file, s.line, s.message
    FROM seqs s LEFT JOIN work w ON w.file = s.file AND w.rank IS NOT DISTINCT FROM s.rank AND w.work = s.seq
), alike AS (   -- a report that names no group (its sibling line cut off) is of the one group whose
                -- reports name the same collective (SeqNum and OpType)
    SELECT seq, op, min(pg) AS pg FROM reports WHERE pg IS NOT NULL GROUP BY seq, op HAVING count(DISTINCT pg) = 1
)
SELECT r.* REPLACE (coalesce(r.pg, a.pg) AS pg)
FROM reports r LEFT JOIN alike a ON a.seq = r.seq AND a.op IS NOT DISTINCT FROM r.op
ORDER BY r.ats NULLS LAST, r.file, r.line
