-- name: anchors
-- kind: align
-- params: none (reads temp view events_id_a: events_id of the lines of anchor_lines.sql, made by
--   ranktrace.correlate.clock)
-- returns: host, akey, t (epoch seconds, as logged), unc_s (how far apart the same anchor may
--   truly be on two hosts), class. Events that must be (nearly) simultaneous on every host:
--   step N of a synchronous loop (progress), the start of collective SeqNum N of a watchdog
--   timeout (logged time minus "ran for"), the k-th rendezvous completion of each agent.
WITH timed AS (
    SELECT * FROM events_id_a
    WHERE ts IS NOT NULL AND host IS NOT NULL
      AND ts_kind IN ('exact', 'local', 'year_inferred', 'envelope')
),
progress AS (
    SELECT host, rank,
           TRY_CAST(regexp_extract(message, '(?i)\b(?:global[_ ])?(?:step|iter|iteration)\s*[=:#]?\s*\[?(\d+)', 1) AS BIGINT) AS n,
           epoch(ts) AS t
    FROM timed
    WHERE (kind = 'progress' OR (kind IS NULL AND severity IN ('info', 'debug', 'notice')))
      -- (exact and cheap: the regexp needs `tep` or `iter`, and no letter of them has another case-folding;
      -- a line it does not match has no n, and progress_first keeps only lines with one)
      AND has_mark(marks, 'summary') AND (message ILIKE '%tep%' OR message ILIKE '%iter%')
),
progress_first AS (   -- the first line of each step per rank (a rank may print a step twice)
    SELECT host, rank, n, min(t) AS t FROM progress WHERE n IS NOT NULL GROUP BY ALL
),
seq AS (
    SELECT host,
           TRY_CAST(regexp_extract(message, 'SeqNum=(\d+)', 1) AS BIGINT) AS n,
           epoch(ts) - TRY_CAST(regexp_extract(message, 'ran for (\d+) milliseconds', 1) AS DOUBLE) / 1000.0 AS t
    FROM timed
    WHERE has_mark(marks, 'hot') AND (message LIKE '%SeqNum=%' AND message LIKE '%ran for %milliseconds%')
),
rdzv AS (
    SELECT host, row_number() OVER (PARTITION BY host ORDER BY ts, file, line) AS n, epoch(ts) AS t
    FROM timed WHERE kind = 'rdzv_complete'
)
SELECT host, 'step:' || n AS akey, median(t) AS t, 0.05 AS unc_s, 'progress' AS class
FROM progress_first GROUP BY host, n
UNION ALL
SELECT host, 'seq:' || n, median(t), 1.0, 'collective' FROM seq WHERE n IS NOT NULL AND t IS NOT NULL GROUP BY host, n
UNION ALL
SELECT host, 'rdzv:' || n, median(t), 2.0, 'rendezvous' FROM rdzv GROUP BY host, n
