-- name: lane_buckets
-- kind: store
-- params: none
-- returns: rebuilds table `lane_buckets` after every ingest: per lane (as in
--   `lanes`) and per time slot, the event count, the highest severity
--   (0 debug .. 5 critical), and whether a cause or a symptom is among them.
--   Slots are `width` seconds wide (the logged time span / 2000, at least 1 s)
--   and start at `slot` (epoch seconds, UTC). The TUI draws zoomed-out
--   timelines from it instead of scanning `events`. `pod` as in `lanes`.
CREATE OR REPLACE TABLE lane_buckets AS
WITH span AS (
    SELECT greatest(1, ceil((epoch(max(ts)) - epoch(min(ts))) / 2000))::BIGINT AS width
    FROM events WHERE ts >= TIMESTAMP '1990-01-01' AND ts < TIMESTAMP '2100-01-01'
)
SELECT host,
       pod,
       rank,
       CASE WHEN rank IS NULL THEN coalesce(program, format, 'log') END AS source,
       (epoch_us(ts) // (span.width * 1000000)) * span.width AS slot,
       any_value(span.width) AS width,
       count(*) AS events,
       max(CASE severity WHEN 'debug' THEN 0 WHEN 'info' THEN 1 WHEN 'notice' THEN 2
               WHEN 'warning' THEN 3 WHEN 'error' THEN 4 WHEN 'critical' THEN 5 ELSE 1 END) AS max_sev,
       bool_or(role = 'cause') AS cause,
       bool_or(role = 'symptom') AS symptom
FROM events, span
-- a time outside 1990..2100 (a bogus year) is kept out of the timeline
WHERE ts >= TIMESTAMP '1990-01-01' AND ts < TIMESTAMP '2100-01-01'
  AND event_id NOT IN (SELECT event_id FROM echoes)   -- a --tee copy counts once (echoes.sql)
GROUP BY host, pod, rank, source, slot;
