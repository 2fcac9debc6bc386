-- name: aligned_events
-- kind: align
-- params: $host, $offset_s (run once per host; ranktrace.correlate.clock does this for every host)
-- returns: the events of one host on the aligned clock: ats = ts - offset_s (offset_s = how far
--   that host's clock runs ahead of the reference host). `ranktrace diagnose --format json` lists
--   the offsets it used under "clock"; in Python, ranktrace.correlate.clock.align(con) creates the
--   temp view `aligned_events` (all events, with identity filled in and column `ats`).
SELECT *, ts - to_microseconds(CAST(round($offset_s * 1e6) AS BIGINT)) AS ats
FROM events WHERE host = $host
ORDER BY ats, file, line
