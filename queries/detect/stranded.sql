-- name: stranded
-- kind: detector
-- params: none (reads temp view aligned_events, or hot_events; aligned_groups for the pod logs)
-- returns: placement of a job's pods, one row per statement: what, pod, node, value, total,
--   ats, file, line, message:
--   assigned     'Successfully assigned <ns>/<pod> to <node>' (kube-scheduler / Volcano Scheduled event)
--   started      'Started container' of a pod (kubectl get events / describe)
--   not_placed   why a pod did not run: FailedScheduling ('0/16 nodes are available: ... Insufficient
--                nvidia.com/gpu'), UnexpectedAdmissionError, Volcano 'N/M tasks in gang unschedulable'
--                (value = N pending, total = M), Kueue 'Exceeded the PodsReady timeout' / 'Not all pods
--                are ready or succeeded' / "couldn't assign flavors" / 'insufficient unused quota'
--   pod_row      a `kubectl get pods -o wide` row: pod, node (<none> when unplaced), message = its status
--   pod_log      a pod's container log: ats = its first line, value = seconds to its last line,
--                total = its lines that carry a rank (0 for a daemon's pod)
WITH s AS (
    SELECT event_id, ats, host, pod, file, line, message FROM aligned_events
    WHERE message LIKE '%Successfully assigned%' OR message LIKE '%Started container%'
       OR message LIKE '%FailedScheduling%' OR message LIKE '%nodes are available%' OR message LIKE '%UnexpectedAdmissionError%'
       OR message LIKE '%tasks in gang unschedulable%' OR message LIKE '%PodsReady timeout%'
       OR message LIKE '%Not all pods are ready or succeeded%' OR message LIKE '%couldn''t assign flavors%'
       OR message LIKE '%insufficient unused quota%'
       OR regexp_matches(message, '^[a-z0-9][a-z0-9.-]*\s+\d+/\d+\s+\S+\s+\d+(?: \([^)]*\))?\s+\S+\s+\S+\s+\S+')
)
SELECT 'assigned' AS what, regexp_extract(message, 'Successfully assigned [a-z0-9-]+/([a-z0-9.-]+) to', 1) AS pod,
       regexp_extract(message, 'Successfully assigned [a-z0-9-]+/[a-z0-9.-]+ to ([a-z0-9.-]+)', 1) AS node,
       NULL::DOUBLE AS value, NULL::INTEGER AS total, ats, file, line, message
FROM s WHERE regexp_matches(message, 'Successfully assigned [a-z0-9-]+/[a-z0-9.-]+ to [a-z0-9.-]+')
UNION ALL
SELECT 'started', coalesce(nullif(regexp_extract(message, 'pod/([a-z0-9][a-z0-9.-]*)', 1), ''), pod), NULL, NULL, NULL,
       ats, file, line, message
FROM s WHERE message LIKE '%Started container%'
UNION ALL
SELECT 'not_placed', coalesce(nullif(regexp_extract(message, '(?:pod|podgroup)/([a-z0-9][a-z0-9.-]*)', 1), ''), pod), NULL,
       TRY_CAST(nullif(regexp_extract(message, '(\d+)/\d+ tasks in gang unschedulable', 1), '') AS INTEGER),
       TRY_CAST(nullif(regexp_extract(message, '\d+/(\d+) tasks in gang unschedulable', 1), '') AS INTEGER),
       ats, file, line, message
FROM s WHERE regexp_matches(message, 'FailedScheduling|\d+/\d+ nodes are available|UnexpectedAdmissionError|tasks in gang unschedulable|PodsReady timeout|Not all pods are ready or succeeded|couldn''t assign flavors|insufficient unused quota')
UNION ALL
SELECT 'pod_row', regexp_extract(message, '^([a-z0-9][a-z0-9.-]*)\s', 1),
       regexp_extract(message, '^[a-z0-9][a-z0-9.-]*\s+\d+/\d+\s+\S+\s+\d+(?: \([^)]*\))?\s+\S+\s+\S+\s+(\S+)', 1), NULL, NULL,
       ats, file, line, regexp_extract(message, '^[a-z0-9][a-z0-9.-]*\s+\d+/\d+\s+(\S+)', 1)
FROM s WHERE regexp_matches(message, '^[a-z0-9][a-z0-9.-]*\s+\d+/\d+\s+\S+\s+\d+(?: \([^)]*\))?\s+\S+\s+\S+\s+\S+')
UNION ALL
SELECT 'pod_log', pod, any_value(host), epoch(max(last_ats)) - epoch(min(first_ats)),
       CAST(coalesce(sum(n) FILTER (WHERE rank IS NOT NULL), 0) AS INTEGER), min(first_ats), min(file), min(min_line), NULL
FROM aligned_groups WHERE pod IS NOT NULL AND regexp_matches(file, '(?:^|/)pods/[^/]+/[^/]+/\d+\.log$')
GROUP BY pod
ORDER BY what, pod, ats NULLS LAST, file, line
