-- name: interpolated_times
-- kind: align
-- params: $files (the names of the files whose lines are on more than one clock: a console that srun,
--   pdsh or mpirun fed from several nodes, with lines of no host of its own), and temp tables
--   clock_offsets (the hosts' offsets; a file of no host: key '@' || file) and hostless_clocks
--   (queries/align/hostless_clocks.sql: the clock a timed line of no host was written on)
-- returns: (event_id, ts) for each line of those files whose time is interpolated (it has none of
--   its own: the previous timed line's, as the engine gave it), or a collector's (mpirun --timestamp-output:
--   the time mpirun received it, on mpirun's clock; ts_kind 'collector'), from a line on another clock: that
--   moment told on the line's own clock (ts - offset of the line it came from + its own offset), so
--   that its aligned time is the one of the line it took its time from; a collector's line, when the
--   collector's clock is known (collector_clocks below: its time of the lines that have one of their own),
--   its own time told on its own clock. Read as if on its own
--   clock, the time of a line of rank 2 after one of rank 9's was rank 9's clock reading: a minute
--   off with a minute's skew, and on the wrong side of an attempt's cut.
-- How: the timed line before each interpolated one is found on the lines as stored (view events, no
-- identity), and only the lines of those pairs are resolved (events_id: their host, hence their clock).
-- A long run's consoles hold 15 M lines, 3,500 of them interpolated: resolving every line's identity was
-- 14.6 of `diagnose`'s 25 CPU-s, and an ASOF join over every timed line sorts 15 M rows. So the lines
-- are cut in blocks of 256: the timed line before an interpolated one is the last timed line before it in
-- its own block, else the last timed line of the nearest block before with one (an ASOF join over the
-- blocks' last lines, one row a block).
-- One aggregate over the lines makes both: each block's last timed line, and the timed lines (line,
-- event_id) of the few blocks that hold an interpolated line, as a list its interpolated lines pick
-- from. The lines are read once and never kept: the form before kept the 15 M lines as a table and read
-- it three times (own block, blocks, and again for the source's event_id): 6.5-8.6 CPU-s on the long
-- run, this one 2.4 (same moments, load ~20).
WITH l AS NOT MATERIALIZED (   -- (read twice below: DuckDB would otherwise keep all 15 M rows)
    SELECT event_id, file_id, line, line // 256 AS blk, ts_kind IN ('interpolated', 'collector') AS interpolated,
           ts_kind = 'collector' AS collected, ts
    FROM events
    WHERE file_id IN (SELECT DISTINCT file_id FROM event_groups WHERE file IN (SELECT unnest($files)))
      AND ts IS NOT NULL AND ts_kind IN ('exact', 'local', 'year_inferred', 'envelope', 'interpolated', 'collector')
), interpolated AS MATERIALIZED (
    SELECT event_id, file_id, line, blk, collected, ts FROM l WHERE interpolated
), timed AS MATERIALIZED (   -- the first timed lines of each file a collector stamped
    SELECT event_id, file_id, line FROM l
    WHERE NOT interpolated AND file_id IN (SELECT file_id FROM interpolated WHERE collected)
    QUALIFY row_number() OVER (PARTITION BY file_id ORDER BY line) <= 2000
), received AS (   -- each between the collector's times of the lines around it: it received the line in between
    SELECT t.event_id, t.file_id, b.ts AS after, a.ts AS before
    FROM timed t
    ASOF JOIN (SELECT file_id, line, ts FROM interpolated WHERE collected) b ON b.file_id = t.file_id AND t.line > b.line
    ASOF JOIN (SELECT file_id, line, ts FROM interpolated WHERE collected) a ON a.file_id = t.file_id AND t.line < a.line
), blocks AS (   -- each block's last timed line; and its timed lines when an interpolated line is in it
    SELECT file_id, blk, max(line) AS last_line, arg_max(event_id, line) AS last_id,
           list({'line': line, 'id': event_id})
               FILTER (WHERE (file_id, blk) IN (SELECT (file_id, blk) FROM interpolated)) AS lines
    FROM l WHERE NOT interpolated
    GROUP BY file_id, blk
), own_block AS (   -- the last timed line before it in its own block
    SELECT i.event_id, list_last(list_sort(list_filter(b.lines, lambda x: x.line < i.line))) AS src
    FROM interpolated i JOIN blocks b ON b.file_id = i.file_id AND b.blk = i.blk
), pairs AS MATERIALIZED (   -- else the last timed line of the nearest block before
    SELECT i.event_id, CASE WHEN o.src IS NOT NULL THEN o.src.id ELSE b.last_id END AS src_id
    FROM interpolated i LEFT JOIN own_block o USING (event_id)
    ASOF LEFT JOIN blocks b ON b.file_id = i.file_id AND i.blk > b.blk
    WHERE o.src IS NOT NULL OR b.last_line IS NOT NULL
), clocks AS (   -- a line of no host on the clock queries/align/hostless_clocks.sql found it on
    SELECT e.event_id, e.file_id, e.ts, e.ts_kind, coalesce(hc.clock, e.host, '@' || e.file) AS clock
    FROM events_id e LEFT JOIN hostless_clocks hc USING (event_id)
    WHERE e.event_id IN (SELECT event_id FROM pairs UNION ALL SELECT src_id FROM pairs UNION ALL SELECT event_id FROM received)
), collector_clocks AS (   -- a collector's clock less the reference: it stamps lines in the order it writes them, so
    -- its time of a timed line is between its times of the lines around it, and the line's own time, aligned, tells
    -- the collector's clock within those bounds (and its clock's uncertainty); the bounds of every such line together
    -- (late by the delivery, ~ms). Bounds that cross (buffered output, a minute-resolution stamp) or stay wide
    -- tell nothing.
    SELECT file_id, (max(lo) + min(hi)) / 2 AS offset_s
    FROM (SELECT r.file_id, epoch(r.after) - a.t - a.unc AS lo, epoch(r.before) - a.t + a.unc AS hi
          FROM received r
          JOIN (SELECT c.event_id, epoch(c.ts) - coalesce(o.offset_s, 0.0) AS t, coalesce(o.uncertainty_s, 0.0) AS unc
                FROM clocks c LEFT JOIN clock_offsets o ON o.host = c.clock
                WHERE c.clock NOT LIKE '@%') a USING (event_id))   -- (a line of no host: on which clock?)
    GROUP BY file_id
    HAVING count(*) >= 3 AND max(lo) <= min(hi) AND min(hi) - max(lo) <= 4.0
)
-- A collector's line (mpirun --timestamp-output) is told the time the collector received it, on the line's own
-- clock, when the collector's clock is known (collector_clocks); else it takes the moment of the line before it,
-- as an untimed one does. Each: a moment (its own time, or its source line's) moved from the clock it was read on
-- (the collector's, or the source line's) to the line's own
SELECT p.event_id,
       CASE WHEN i.ts_kind = 'collector' AND cc.offset_s IS NULL THEN t.ts ELSE i.ts END
           + to_microseconds(CAST(round((coalesce(own.offset_s, 0.0)
                 - coalesce(CASE WHEN i.ts_kind = 'collector' THEN cc.offset_s END, src.offset_s, 0.0)) * 1e6) AS BIGINT))
           AS ts
FROM pairs p JOIN clocks i ON i.event_id = p.event_id JOIN clocks t ON t.event_id = p.src_id
LEFT JOIN clock_offsets src ON src.host = t.clock
LEFT JOIN clock_offsets own ON own.host = i.clock
LEFT JOIN collector_clocks cc ON cc.file_id = i.file_id
WHERE coalesce(own.offset_s, 0.0) <> coalesce(src.offset_s, 0.0) OR i.ts_kind = 'collector'
