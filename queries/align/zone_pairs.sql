-- name: zone_pairs
-- kind: align
-- params: $file_ids (the files zone_files.sql found)
-- reads: view events (the lines as logged), view events_id_g and temp view zone_kinds (zone_kinds.sql)
-- returns: for each line of those files that names a pod or a pid, as logged (epoch seconds), the first
--   and last times of every group of lines naming the same pod or pid on the same host whose times name
--   their zone: (file_id, t, first, last). A kubelet's 'ContainerStarted' / 'ContainerDied' sits by the
--   container's first / last line, the kernel's kill of a pid by that pid's last lines: the shift that
--   brings each line nearest its pod's or pid's edge is the zone (ranktrace.correlate.zones). Groups
--   for the zoned side (their times may be retold: a zoned file is never a zone's); lines for the other.
WITH zoned AS (
    SELECT g.host, g.pod, g.pid, epoch_us(g.ts) / 1e6 AS first, epoch_us(g.max_ts) / 1e6 AS last
    FROM events_id_g g JOIN zone_kinds c USING (file, ts_kind)
    WHERE c.zoned AND g.sane AND g.ts IS NOT NULL AND g.host IS NOT NULL
), named AS (
    SELECT e.file_id, epoch_us(e.ts) / 1e6 AS t, e.pod, e.pid, h.host
    FROM events e JOIN (SELECT DISTINCT file_id, host FROM events_id_g WHERE host IS NOT NULL) h USING (file_id)
    WHERE e.file_id IN (SELECT unnest($file_ids)) AND e.ts_kind IN ('local', 'year_inferred')
      AND e.ts >= TIMESTAMP '1990-01-01' AND e.ts < TIMESTAMP '2100-01-01'
      AND (e.pod IS NOT NULL OR e.pid IS NOT NULL)
    QUALIFY row_number() OVER (PARTITION BY e.file_id ORDER BY e.line) <= 2000   -- enough to tell; bounded
)
SELECT DISTINCT n.file_id, n.t, z.first, z.last
FROM named n JOIN zoned z ON z.host = n.host AND (z.pod = n.pod OR z.pid = n.pid)
ORDER BY ALL
