-- name: zone_lines
-- kind: align
-- params: $file_ids (the files zone_files.sql found)
-- returns: their timed lines as logged (view events), a minute's lines one row: (file_id, ts, max_ts, n),
--   times in epoch seconds. Not their groups: the groups may hold times a diagnosis or the ingest has
--   retold already (a zone's shift among them).
SELECT file_id, epoch_us(min(ts)) / 1e6 AS ts, epoch_us(max(ts)) / 1e6 AS max_ts, count(*) AS n
FROM events
WHERE file_id IN (SELECT unnest($file_ids)) AND ts_kind IN ('local', 'year_inferred')
  AND ts >= TIMESTAMP '1990-01-01' AND ts < TIMESTAMP '2100-01-01'
GROUP BY file_id, epoch_us(ts) // 60000000
ORDER BY file_id, ts, max_ts, n
