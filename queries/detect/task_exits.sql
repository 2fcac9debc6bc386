-- name: task_exits
-- kind: detector
-- params: none (reads temp view aligned_events)
-- returns: srun's per-node task exit reports, one row per line: `srun: error: NODE: task(s) RANGES:
--   STATE` (Terminated, Killed, Exited with exit code N, Out Of Memory, Segmentation fault, ...).
--   Columns: event_id, ats, node, ranges (as written, e.g. '0-57,59-63'), state, file, line, message.
--   The culprit often shows only as the gap in a 'Terminated' range (ranktrace.correlate.hostlist).
SELECT event_id, ats,
       regexp_extract(raw, 'srun: error: ([^:\s]+): tasks? ([0-9][0-9,\- ]*): (.+)$', 1) AS node,
       replace(regexp_extract(raw, 'srun: error: ([^:\s]+): tasks? ([0-9][0-9,\- ]*): (.+)$', 2), ' ', '') AS ranges,
       trim(regexp_extract(raw, 'srun: error: ([^:\s]+): tasks? ([0-9][0-9,\- ]*): (.+)$', 3)) AS state,
       file, line, message
FROM aligned_events
WHERE raw LIKE '%srun: error:%task%'
  AND regexp_matches(raw, 'srun: error: [^:\s]+: tasks? [0-9][0-9,\- ]*: ')
ORDER BY ats NULLS LAST, file, line
