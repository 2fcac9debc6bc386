-- name: gang
-- kind: detector
-- params: none (reads temp view aligned_events, or hot_events; aligned_groups for the container logs)
-- returns: what the logs say about pods restarting (a broken gang: one worker pod restarted
--   alone while its peers wait), one row per statement: what, pod, value, ats, host, file, line:
--   restart_count  kubectl describe pod 'Restart Count: N' (pod carried from the describe header)
--   get_restarts   kubectl get pods RESTARTS column ('1 (10m ago)'), with or without -A's NAMESPACE column first
--                  (printers.go printPod: NAME READY STATUS RESTARTS AGE; -A puts NAMESPACE before NAME)
--   backoff        kubelet 'Back-off restarting failed container <c> in pod <pod>_<ns>(<uid>)' (event
--                  or describe) and its klog 'back-off 10s restarting failed container=<c> pod=<pod>_<ns>'
--   operator       training operator '<Kind> <name> is restarting because N <type> replica(s) failed.'
--   container_log  a CRI log file /var/log/pods/<ns>_<pod>_<uid>/<container>/<N>.log (N = the
--                  container's restart number): value = N, ats = its first line, file = the file
WITH s AS (
    SELECT event_id, ats, host, pod, file, line, message FROM aligned_events
    WHERE message LIKE '%Restart Count:%' OR message ILIKE '%back-off%restarting failed container%'
       OR message LIKE '%is restarting because%' OR regexp_matches(message, '^(?:[a-z0-9][-a-z0-9]*\s+)?[a-z0-9][a-z0-9.-]*\s+\d+/\d+\s+\S+\s+\d+')
)
SELECT 'restart_count' AS what, pod, TRY_CAST(regexp_extract(message, '^\s*Restart Count:\s+(\d+)', 1) AS INTEGER) AS value,
       ats, host, file, line
FROM s WHERE regexp_matches(message, '^\s*Restart Count:\s+\d+')
UNION ALL
SELECT 'get_restarts', regexp_extract(message, '^(?:[a-z0-9][-a-z0-9]*\s+)?([a-z0-9][a-z0-9.-]*)\s+\d+/\d+\s', 1),
       TRY_CAST(regexp_extract(message, '^(?:[a-z0-9][-a-z0-9]*\s+)?[a-z0-9][a-z0-9.-]*\s+\d+/\d+\s+\S+\s+(\d+)', 1) AS INTEGER),
       ats, host, file, line
FROM s WHERE regexp_matches(message, '^(?:[a-z0-9][-a-z0-9]*\s+)?[a-z0-9][a-z0-9.-]*\s+\d+/\d+\s+\S+\s+\d+')
UNION ALL
SELECT 'backoff', coalesce(nullif(regexp_extract(message, '(?:in pod |pod=)([a-z0-9][a-z0-9.-]*)_', 1), ''), pod), NULL,
       ats, host, file, line
FROM s WHERE regexp_matches(message, '(?i)back-off\s.*restarting failed container')
UNION ALL
SELECT 'operator', NULL, TRY_CAST(regexp_extract(message, 'is restarting because (\d+) ', 1) AS INTEGER), ats, host, file, line
FROM s WHERE regexp_matches(message, 'is restarting because \d+ \w+ replica\(s\) failed')
UNION ALL
SELECT 'container_log', regexp_extract(file, '(?:^|/)pods/[a-z0-9-]+_([a-z0-9.-]+)_[0-9a-f-]{8,}/[a-z0-9-]+/\d+\.log$', 1),
       TRY_CAST(regexp_extract(file, '/(\d+)\.log$', 1) AS INTEGER), min(first_ats), any_value(host), file, min(min_line)
FROM aligned_groups   -- every line of the file, in groups
WHERE regexp_matches(file, '(?:^|/)pods/[a-z0-9-]+_[a-z0-9.-]+_[0-9a-f-]{8,}/[a-z0-9-]+/\d+\.log$')
GROUP BY file
ORDER BY what, pod, ats NULLS LAST, file, line
