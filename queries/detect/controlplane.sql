-- name: controlplane
-- kind: detector
-- params: none (reads temp view aligned_events)
-- returns: control-plane trouble and what it did to nodes and pods, one row per line:
--   what = etcd (kinds etcd_*: slow fdatasync, slow apply/read, leader changes, peers lost, failed
--   requests), apiserver (apiserver_etcd_error, apiserver_slow_request), status_write (a kubelet or
--   controller that could not write node/pod status or its lease: 'Error updating node status',
--   'Unable to update node status', 'Failed to update lease', 'failed to update status for pod'),
--   notready (a node marked NotReady / unresponsive: kind node_failure lines that say so);
--   kind, node (the node a status_write/notready line is about), took_s (etcd's "took"), ats, host,
--   file, line, message.
SELECT CASE WHEN kind LIKE 'etcd\_%' ESCAPE '\' THEN 'etcd'
            WHEN kind LIKE 'apiserver\_%' ESCAPE '\' THEN 'apiserver'
            WHEN regexp_matches(message, 'Error updating node status|Unable to update node status|Failed to update lease|(?i:failed to (?:update|patch) status for pod)') THEN 'status_write'
            ELSE 'notready' END AS what,
       kind,
       coalesce(nullif(regexp_extract(message, 'Node ([a-z0-9][a-z0-9.-]*) status is now', 1), ''),
                nullif(regexp_extract(message, '(?:\bnode="|error getting node \\?")([a-z0-9][a-z0-9.-]*)', 1), ''),
                nullif(regexp_extract(message, 'object="([a-z0-9][a-z0-9.-]*)"[^\n]*kind="Node"', 1), ''),
                nullif(regexp_extract(message, '^([a-z0-9][a-z0-9.-]*)\s+NotReady\b', 1), ''), host) AS node,
       CASE WHEN regexp_matches(raw, '"took":"[\d.]+ms"') THEN TRY_CAST(regexp_extract(raw, '"took":"([\d.]+)ms"', 1) AS DOUBLE) / 1000
            WHEN regexp_matches(raw, '"took":"[\d.]+s"') THEN TRY_CAST(regexp_extract(raw, '"took":"([\d.]+)s"', 1) AS DOUBLE)
       END AS took_s,
       ats, host, file, line, message
FROM aligned_events
WHERE kind LIKE 'etcd\_%' ESCAPE '\' OR kind LIKE 'apiserver\_%' ESCAPE '\'
   -- (ILIKE first: a cheap exact prefilter, every branch says "status" or "lease")
   OR ((message ILIKE '%status%' OR message ILIKE '%lease%')
       AND regexp_matches(message, 'Error updating node status|Unable to update node status|Failed to update lease|(?i:failed to (?:update|patch) status for pod)'))
   OR (kind = 'node_failure' AND regexp_matches(message, 'NotReady|not ready|unresponsive|stopped posting node status'))
ORDER BY ats NULLS LAST, file, line
