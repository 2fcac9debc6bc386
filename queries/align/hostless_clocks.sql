-- name: hostless_clocks
-- kind: align
-- params: $files (files whose lines are on more than one host's clock and that hold timed lines of no
--   host: a console that srun without --label, pdsh or mpirun fed from several nodes), and temp table
--   clock_offsets (the hosts' offsets; a file of no host: key '@' || file); view events_id_x (identity
--   resolved on the lines of queries/align/hostless_lines.sql)
-- returns: (event_id, clock, ts) for each timed line of no host in those files whose time fits the
--   file's order better on another clock than on its own: the clock (a host whose lines are in the
--   file) on which it falls between the nearest timed lines of a host before and after it, and its
--   time told on its own clock (ts - that clock's offset + its own: its aligned time is the one that
--   clock gives it), as queries/align/interpolated_times.sql tells an interpolated line's.
-- Why: such a console is written in the order the lines arrive, but each line carries the clock of
--   the node that printed it. A line that names no host (a launcher's or the training loop's own
--   line) is read on the file's clock, which is one host's at best: with clocks a minute apart, the
--   other nodes' lines land a minute off, on the wrong side of the failure or of an attempt's cut.
--   The order of the file is the one witness left: of the clocks that could have written the line,
--   the one that puts it between its neighbours is the one that did. Where its own clock fits as
--   well (to a second), it stays: nothing moves in a console of one clock, or of clocks that agree.
WITH files AS (
    SELECT DISTINCT file_id, file FROM event_groups WHERE file IN (SELECT unnest($files))
), timed AS (
    SELECT e.event_id, e.file_id, e.line, e.ts, e.host,
           coalesce(o.offset_s, 0.0) AS offset_s,
           e.ts - to_microseconds(CAST(round(coalesce(o.offset_s, 0.0) * 1e6) AS BIGINT)) AS ats
    FROM events_id_x e LEFT JOIN clock_offsets o ON o.host = coalesce(e.host, '@' || e.file)
    WHERE e.ts_kind IN ('exact', 'local', 'year_inferred', 'envelope')
      AND e.ts >= TIMESTAMP '1990-01-01' AND e.ts < TIMESTAMP '2100-01-01'
), hosted AS (
    SELECT file_id, line, ats FROM timed WHERE host IS NOT NULL
), candidates AS (   -- the clocks of the hosts whose lines are in the file
    SELECT DISTINCT f.file_id, g.host AS clock, coalesce(o.offset_s, 0.0) AS offset_s
    FROM events_id_g g JOIN files f USING (file) LEFT JOIN clock_offsets o ON o.host = g.host
    WHERE g.host IS NOT NULL
), neighbours AS (   -- each line of no host with the aligned times of its hosted neighbours
    SELECT h.event_id, h.file_id, h.ts, h.offset_s, b.ats AS before, a.ats AS after,
           least(h.line - b.line, a.line - h.line) AS lines_to_near
    FROM (SELECT * FROM timed WHERE host IS NULL) h
    ASOF LEFT JOIN hosted b ON b.file_id = h.file_id AND h.line > b.line
    ASOF LEFT JOIN hosted a ON a.file_id = h.file_id AND h.line < a.line
), bounds AS (   -- a line with a hosted neighbour on one side only: the file's order says 'after X' (or
                 -- 'before X'), and 'near X' only when X is a few lines away (a launcher's burst of lines
                 -- before its first hosted one); the training loop's lines long after a job's last
                 -- hosted line, in a run still training, are bounded on that side only
    SELECT event_id, file_id, ts, offset_s, coalesce(before, after) AS near,
           CASE WHEN (before IS NULL OR after IS NULL) AND lines_to_near > 16 THEN before
                ELSE least(coalesce(before, after), coalesce(after, before)) END AS lo,
           CASE WHEN (before IS NULL OR after IS NULL) AND lines_to_near > 16 THEN after
                ELSE greatest(coalesce(before, after), coalesce(after, before)) END AS hi
    FROM neighbours WHERE coalesce(before, after) IS NOT NULL
), scored AS (   -- seconds outside [lo, hi] on each candidate clock, and on the line's own
    SELECT b.event_id, b.ts, b.offset_s AS own_offset_s, c.clock, c.offset_s,
           greatest(coalesce(epoch(b.lo) - (epoch(b.ts) - c.offset_s), 0),
                    coalesce((epoch(b.ts) - c.offset_s) - epoch(b.hi), 0), 0) AS off_by,
           abs(epoch(b.ts) - c.offset_s - epoch(b.near)) AS from_near,
           greatest(coalesce(epoch(b.lo) - (epoch(b.ts) - b.offset_s), 0),
                    coalesce((epoch(b.ts) - b.offset_s) - epoch(b.hi), 0), 0) AS own_off_by
    FROM bounds b JOIN candidates c USING (file_id)
), best AS (
    SELECT event_id, any_value(ts) AS ts, any_value(own_offset_s) AS own_offset_s,
           arg_min(struct_pack(clock, offset_s), (off_by, from_near)) AS pick,
           min(off_by) AS off_by, any_value(own_off_by) AS own_off_by
    FROM scored GROUP BY event_id
)
SELECT event_id, pick.clock AS clock,
       ts + to_microseconds(CAST(round((own_offset_s - pick.offset_s) * 1e6) AS BIGINT)) AS ts
FROM best
WHERE own_off_by - off_by > 1.0
