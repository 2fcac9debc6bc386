-- name: anchor_ids
-- kind: align
-- params: none (reads view event_lines and temp table anchor_steps, made by ranktrace.correlate.clock.anchor_views)
-- returns: event_id of the lines anchor_lines.sql may pass, a wider filter read from the lines' own integer
--   columns and their classes' (every marked line passes it): ranktrace.correlate.clock makes temp table
--   anchor_ids of them, then anchor_lines.sql filters those lines only. (In one pass over events_keyed, the
--   test of a step against anchor_steps, a join, came after view event_rows had cut every line's message
--   out of its raw text: 3.7 CPU-s on a long run's 15 M lines; 0.4 + 1.7 in two.)
--   A Slurm step's launch or cancel passes only as the first line of its class in its file or more
--   than 30 s after the one before (anchors.sql reads the first of each run: a flood of retold launch
--   lines would each be resolved for nothing).
WITH timed AS (
    SELECT class_id FROM event_classes WHERE ts_kind IN ('exact', 'local', 'year_inferred', 'envelope')
), slurm_step AS (
    SELECT class_id FROM event_classes WHERE kind IN ('step_start', 'step_cancelled')
)
SELECT event_id FROM event_lines
WHERE ts IS NOT NULL AND class_id IN (SELECT class_id FROM timed) AND class_id NOT IN (SELECT class_id FROM slurm_step)
  AND (step IN (SELECT step FROM anchor_steps) OR has_mark(marks, 'hot')
       OR class_id IN (SELECT class_id FROM event_classes WHERE kind = 'rdzv_complete'))
UNION ALL
SELECT event_id FROM (
    SELECT event_id, ts, lag(ts) OVER (PARTITION BY file_id, class_id ORDER BY line) AS prev
    FROM event_lines
    WHERE ts IS NOT NULL AND class_id IN (SELECT class_id FROM timed) AND class_id IN (SELECT class_id FROM slurm_step))
WHERE prev IS NULL OR ts - prev > INTERVAL 30 SECOND
