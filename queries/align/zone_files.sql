-- name: zone_files
-- kind: align
-- params: $zoned_envelopes (the envelopes whose time names its zone: CRI's, kubectl --timestamps', ...),
--   view events_id_g (the groups with their identity resolved) and table event_classes
-- returns: one row per group of timed lines of a file whose times were written with no zone (read in
--   the zone --tz named, UTC by default), on a host whose other lines name their zone, and that names a
--   pod or a pid those lines name too: (file, host, ts, max_ts, n; times in epoch seconds); plus, in
--   columns lo / hi, the span
--   of every line that names its zone. ranktrace.correlate.zones decides from them whether the file was
--   written in another zone (a node's journal in the node's local time beside its pods' UTC logs).
WITH cls AS (   -- per file and time kind: was the time written with its zone?
    SELECT file, ts_kind,
           bool_or(ts_kind = 'exact'
                   OR (ts_kind = 'envelope'
                       AND list_contains($zoned_envelopes, split_part(envelopes, '>', 1)))) AS zoned
    FROM event_classes GROUP BY ALL
), g AS (
    SELECT g.file, g.host, g.pod, g.pid, g.ts, g.max_ts, g.n, c.zoned
    FROM events_id_g g JOIN cls c USING (file, ts_kind)
    WHERE g.sane AND g.ts IS NOT NULL AND g.ts_kind IN ('exact', 'local', 'year_inferred', 'envelope')
), zoned AS (
    SELECT * FROM g WHERE zoned
), span AS (
    SELECT min(ts) AS lo, max(max_ts) AS hi FROM zoned
), naive_files AS (   -- every timed line of the file written with no zone
    SELECT file FROM g GROUP BY file HAVING NOT bool_or(zoned)
), linked AS (   -- ... and on a host whose zoned lines name one of its pods or pids
    SELECT n.file, min(n.host) AS host
    FROM g n JOIN zoned z ON z.host = n.host AND (z.pod = n.pod OR z.pid = n.pid)
    WHERE n.file IN (SELECT file FROM naive_files)
    GROUP BY n.file
)
-- The file's lines as logged (view events), not its groups: the groups may hold the times a diagnosis
-- or the ingest retold already (this shift among them); a minute's lines are one row.
SELECT e.file, l.host, epoch_us(min(e.ts)) / 1e6 AS ts, epoch_us(max(e.ts)) / 1e6 AS max_ts, count(*) AS n,
       any_value(epoch_us(s.lo)) / 1e6 AS lo, any_value(epoch_us(s.hi)) / 1e6 AS hi
FROM events e
JOIN (SELECT DISTINCT g.file_id, g.file, l.host FROM events_id_g g JOIN linked l USING (file)) l USING (file_id)
CROSS JOIN span s
WHERE s.lo IS NOT NULL AND e.ts >= TIMESTAMP '1990-01-01' AND e.ts < TIMESTAMP '2100-01-01'
  AND e.ts_kind IN ('local', 'year_inferred')
GROUP BY e.file, l.host, epoch_us(e.ts) // 60000000
ORDER BY e.file, ts, max_ts, n
