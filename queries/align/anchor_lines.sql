-- name: anchor_lines
-- kind: align
-- params: none (reads temp view events_keyed, made by ranktrace.correlate.identity, and temp tables
--   anchor_steps (the steps the clock reads) and anchor_ids (anchor_ids.sql: the lines that may pass),
--   made by ranktrace.correlate.clock.anchor_views)
-- returns: the lines anchors.sql may read: the union of its CTEs' filters on the columns that
--   identity leaves as they are (time, kind, severity, text, marks; not host). ranktrace.correlate.clock
--   makes temp table anchor_src of them once, and identity resolves only those rows (events_id_a:
--   row by row, with the links of the whole store), so anchors.sql reads thousands of rows, not
--   the whole store (tests/correlate/test_hot_events.py checks it finds what it finds in events_id).
SELECT * FROM events_keyed
WHERE event_id IN (SELECT event_id FROM anchor_ids)   -- (a wider filter first, on integers: anchor_ids.sql)
  AND ts IS NOT NULL AND ts_kind IN ('exact', 'local', 'year_inferred', 'envelope')
  AND (kind IN ('rdzv_complete', 'step_start', 'step_cancelled')
       OR step IN (SELECT step FROM anchor_steps)
       OR (has_mark(marks, 'hot') AND (message LIKE '%SeqNum=%' AND message LIKE '%ran for %milliseconds%')))
