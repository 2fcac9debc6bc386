-- name: rendezvous
-- kind: detector
-- params: none (reads temp view aligned_events)
-- returns: what the launchers said about the job's shape: one row per statement: what
--   (min_nodes|max_nodes|nnodes|world_size|nodelist|rdzv_timeout|rdzv_complete|joined|store_fail),
--   value, host, pod, ats, file, line, message. The expected node set (nodelist / nnodes / min_nodes)
--   against who joined names the missing node of a rendezvous timeout.
WITH s AS (
    SELECT event_id, ats, host, pod, file, line, kind, message FROM aligned_events
    WHERE kind IN ('rdzv_timeout', 'rdzv_complete', 'rdzv_join', 'store_unreachable')
       OR message LIKE '%min_nodes%' OR message LIKE '%max_nodes%' OR message LIKE '%nnodes%'
       OR message LIKE '%NodeList=%' OR message LIKE '%SLURM_JOB_NODELIST%' OR message LIKE '%SLURM_NODELIST%'
       OR message LIKE '%Rendezvous%' OR message LIKE '%rendezvous%'
)
SELECT event_id, ats, host, pod, file, line, message, 'min_nodes' AS what,
       regexp_extract(message, 'min_nodes\s*[:=]\s*(\d+)', 1) AS value FROM s
 WHERE regexp_matches(message, 'min_nodes\s*[:=]\s*\d+')
UNION ALL
SELECT event_id, ats, host, pod, file, line, message, 'max_nodes', regexp_extract(message, 'max_nodes\s*[:=]\s*(\d+)', 1) FROM s
 WHERE regexp_matches(message, 'max_nodes\s*[:=]\s*\d+')
UNION ALL
SELECT event_id, ats, host, pod, file, line, message, 'nnodes', regexp_extract(message, '(?i)nnodes\s*[:=]?\s*(\d+)', 1) FROM s
 WHERE regexp_matches(message, '(?i)nnodes\s*[:=]?\s*\d+')
UNION ALL
SELECT event_id, ats, host, pod, file, line, message, 'nodelist',
       regexp_extract(message, '(?:NodeList|SLURM_JOB_NODELIST|SLURM_NODELIST)\s*[=:]\s*(\S+)', 1) FROM s
 WHERE regexp_matches(message, '(?:NodeList|SLURM_JOB_NODELIST|SLURM_NODELIST)\s*[=:]\s*[A-Za-z]')
UNION ALL
SELECT event_id, ats, host, pod, file, line, message,
       CASE WHEN kind = 'rdzv_timeout' OR regexp_matches(message, '(?i)Rendezvous(?:Timeout|Closed)Error|rendezvous.*tim(?:ed|e) ?out')
            THEN 'rdzv_timeout'
            WHEN kind = 'store_unreachable' THEN 'store_fail'
            WHEN kind = 'rdzv_complete' OR message LIKE '%Rendezvous complete%' THEN 'rdzv_complete'
            ELSE 'joined' END, NULL
FROM s
 WHERE kind IN ('rdzv_timeout', 'rdzv_complete', 'rdzv_join', 'store_unreachable')
    OR regexp_matches(message, '(?i)Rendezvous(?:Timeout|Closed)Error|rendezvous.*tim(?:ed|e) ?out|Rendezvous complete|Rendezvous''ing worker group')
ORDER BY ats NULLS LAST, file, line
