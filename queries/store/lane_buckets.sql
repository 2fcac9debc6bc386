-- name: lane_buckets
-- kind: store
-- params: none
-- returns: rebuilds table `lane_buckets` after every ingest: per lane (as in
--   `lanes`) and per time slot, the event count, the highest severity
--   (0 debug .. 5 critical), and whether a cause or a symptom is among them.
--   Slots are `width` seconds wide (the logged time span / 2000, at least 1 s)
--   and start at `slot` (epoch seconds, UTC). The TUI draws zoomed-out
--   timelines from it instead of scanning `events`. `pod` as in `lanes`.
--   In two steps, as lanes.sql: counts per class, rank and slot, then per lane and slot.
CREATE OR REPLACE TABLE lane_buckets AS
WITH span AS (
    SELECT greatest(1, ceil((epoch(max(ts)) - epoch(min(ts))) / 2000))::BIGINT AS width
    FROM event_rows WHERE ts >= TIMESTAMP '1990-01-01' AND ts < TIMESTAMP '2100-01-01'
), p AS (
    SELECT r.class_id, r.rank, (epoch_us(r.ts) // (span.width * 1000000)) * span.width AS slot,
           any_value(span.width) AS width, count(*) AS n
    FROM event_rows r, span
    -- a time outside 1990..2100 (a bogus year) is kept out of the timeline
    WHERE r.ts >= TIMESTAMP '1990-01-01' AND r.ts < TIMESTAMP '2100-01-01'
      AND r.event_id NOT IN (SELECT event_id FROM echoes)   -- a --tee copy counts once (echoes.sql)
    GROUP BY r.class_id, r.rank, slot
)
SELECT c.host,
       c.pod,
       p.rank,
       CASE WHEN p.rank IS NULL THEN coalesce(c.program, c.format, 'log') END AS source,
       p.slot,
       any_value(p.width) AS width,
       CAST(sum(p.n) AS BIGINT) AS events,
       max(CASE c.severity WHEN 'debug' THEN 0 WHEN 'info' THEN 1 WHEN 'notice' THEN 2
               WHEN 'warning' THEN 3 WHEN 'error' THEN 4 WHEN 'critical' THEN 5 ELSE 1 END) AS max_sev,
       bool_or(c.role = 'cause') AS cause,
       bool_or(c.role = 'symptom') AS symptom
FROM p JOIN event_classes c USING (class_id)
GROUP BY c.host, c.pod, p.rank, source, p.slot;
