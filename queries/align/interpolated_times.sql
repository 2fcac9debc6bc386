-- name: interpolated_times
-- kind: align
-- params: $files (the names of the files whose lines are on more than one clock: a console that srun,
--   pdsh or mpirun fed from several nodes, with lines of no host of its own), and temp table
--   clock_offsets (the hosts' offsets; a file of no host: key '@' || file)
-- returns: (event_id, ts) for each line of those files whose time is interpolated (it has none of
--   its own: the previous timed line's, as the engine gave it) from a line on another clock: that
--   moment told on the line's own clock (ts - offset of the line it came from + its own offset), so
--   that its aligned time is the one of the line it took its time from. Read as if on its own
--   clock, the time of a line of rank 2 after one of rank 9's was rank 9's clock reading: a minute
--   off with a minute's skew, and on the wrong side of an attempt's cut.
WITH l AS (
    SELECT event_id, file_id, line, ts, ts_kind, coalesce(host, '@' || file) AS clock
    FROM events_id
    WHERE file_id IN (SELECT DISTINCT file_id FROM event_groups WHERE file IN (SELECT unnest($files)))
      AND ts IS NOT NULL
), timed AS (
    SELECT file_id, line, clock FROM l WHERE ts_kind IN ('exact', 'local', 'year_inferred', 'envelope')
), interpolated AS (
    SELECT event_id, file_id, line, ts, clock FROM l WHERE ts_kind = 'interpolated'
)
SELECT i.event_id,
       i.ts + to_microseconds(CAST(round((coalesce(own.offset_s, 0.0) - coalesce(src.offset_s, 0.0)) * 1e6) AS BIGINT))
           AS ts
FROM interpolated i ASOF JOIN timed t ON i.file_id = t.file_id AND i.line > t.line
LEFT JOIN clock_offsets src ON src.host = t.clock
LEFT JOIN clock_offsets own ON own.host = i.clock
WHERE coalesce(own.offset_s, 0.0) <> coalesce(src.offset_s, 0.0)
