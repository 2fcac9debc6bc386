-- name: hostless_lines
-- kind: align
-- params: $files (as queries/align/hostless_clocks.sql's)
-- returns: the rows of view events_keyed that hostless_clocks.sql reads: the timed lines of those files
--   that name no rank, task, pid, host, pod, container or GPU themselves, and every line within 1,024
--   lines of one (where its neighbours of a host are looked for; a line with none within that reach
--   stays on its own clock).
-- Why a subset: a long run's consoles hold 3.5 M lines each and a few dozen of no host; resolving every
-- line's identity (view events_id) cost 3-8 CPU-s. The bare lines are found on the stored integer columns
-- and the classes, and identity then resolves these rows only (identity.base_views / events_views,
-- row by row with the links of the whole store: the rows the whole view would give).
WITH files AS (
    SELECT DISTINCT file_id FROM event_groups WHERE file IN (SELECT unnest($files))
), bare AS MATERIALIZED (
    SELECT r.file_id, r.line FROM event_rows r
    WHERE r.file_id IN (SELECT file_id FROM files)
      AND r.rank IS NULL AND r.local_rank IS NULL AND r.task IS NULL AND r.pid IS NULL
      AND r.ts >= TIMESTAMP '1990-01-01' AND r.ts < TIMESTAMP '2100-01-01'
      AND r.class_id IN (SELECT class_id FROM event_classes
                         WHERE host IS NULL AND pod IS NULL AND container IS NULL AND gpu IS NULL
                           AND ts_kind IN ('exact', 'local', 'year_inferred', 'envelope'))
), near AS MATERIALIZED (
    SELECT r.event_id
    FROM (SELECT DISTINCT file_id, unnest(range(line - 1024, line + 1025)) AS line FROM bare) w
    JOIN event_rows r USING (file_id, line)
)
SELECT * FROM events_keyed WHERE event_id IN (SELECT event_id FROM near)
