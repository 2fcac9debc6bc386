-- name: zone_times
-- kind: align
-- params: none (reads temp tables zone_files (file, shift_us: the files ranktrace.correlate.zones read as
--   written in another zone) and interpolated_times (the times told so far), views events, event_groups)
-- returns: (event_id, ts) for every timed line of those files: its time as told so far (its own, or the one
--   interpolated_times gave it), moved by its file's zone difference.
SELECT e.event_id, coalesce(it.ts, e.ts) + to_microseconds(z.shift_us) AS ts
FROM events e
JOIN (SELECT DISTINCT g.file_id, z.shift_us FROM event_groups g JOIN zone_files z USING (file)) z USING (file_id)
LEFT JOIN interpolated_times it ON it.event_id = e.event_id
WHERE e.ts IS NOT NULL
