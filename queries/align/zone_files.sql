-- name: zone_files
-- kind: align
-- params: none (reads temp view zone_kinds, zone_kinds.sql: whether a file's times of a kind name their
--   zone; view events_id_g, the groups with their identity resolved)
-- returns: the files whose times were all written with no zone (read in the zone --tz named, UTC by
--   default), on a host whose other lines name their zone, and that name a pod or a pid those lines name
--   too: (file_id, file, host), with lo / hi, the span of every line that names its zone (epoch seconds).
--   ranktrace.correlate.zones reads their lines (zone_lines.sql) and decides whether each was written in
--   another zone (a node's journal in the node's local time beside its pods' UTC logs). Groups only: no
--   line is read here.
WITH g AS (
    SELECT g.file_id, g.file, g.host, g.pod, g.pid, g.ts, g.max_ts, g.n, c.zoned
    FROM events_id_g g JOIN zone_kinds c USING (file, ts_kind)
    WHERE g.sane AND g.ts IS NOT NULL AND g.ts_kind IN ('exact', 'local', 'year_inferred', 'envelope')
), zoned AS (
    SELECT * FROM g WHERE zoned
), span AS (
    SELECT min(ts) AS lo, max(max_ts) AS hi FROM zoned
), naive_files AS (   -- every timed line of the file written with no zone
    SELECT file FROM g GROUP BY file HAVING NOT bool_or(zoned)
), linked AS (   -- ... and on a host whose zoned lines name one of its pods or pids
    SELECT n.file_id, n.file, min(n.host) AS host
    FROM g n JOIN zoned z ON z.host = n.host AND (z.pod = n.pod OR z.pid = n.pid)
    WHERE n.file IN (SELECT file FROM naive_files)
    GROUP BY n.file_id, n.file
)
SELECT l.file_id, l.file, l.host, epoch_us(s.lo) / 1e6 AS lo, epoch_us(s.hi) / 1e6 AS hi
FROM linked l CROSS JOIN span s
WHERE s.lo IS NOT NULL
ORDER BY l.file
