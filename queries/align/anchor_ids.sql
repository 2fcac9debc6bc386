-- name: anchor_ids
-- kind: align
-- params: none (reads view event_lines and temp table anchor_steps, made by ranktrace.correlate.clock.anchor_views)
-- returns: event_id of the lines anchor_lines.sql may pass, a wider filter read from the lines' own integer
--   columns and their classes' (every marked line passes it): ranktrace.correlate.clock makes temp table
--   anchor_ids of them, then anchor_lines.sql filters those lines only. (In one pass over events_keyed, the
--   test of a step against anchor_steps, a join, came after view event_rows had cut every line's message
--   out of its raw text: 3.7 CPU-s on a long run's 15 M lines; 0.4 + 1.7 in two.)
SELECT event_id FROM event_lines
WHERE ts IS NOT NULL
  AND class_id IN (SELECT class_id FROM event_classes WHERE ts_kind IN ('exact', 'local', 'year_inferred', 'envelope'))
  AND (step IN (SELECT step FROM anchor_steps) OR has_mark(marks, 'hot')
       OR class_id IN (SELECT class_id FROM event_classes WHERE kind IN ('rdzv_complete', 'step_start', 'step_cancelled')))
