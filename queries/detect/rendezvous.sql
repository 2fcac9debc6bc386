-- name: rendezvous
-- kind: detector
-- params: none (reads temp view aligned_events)
-- returns: what the launchers said about the job's shape: one row per statement: what
--   (min_nodes|max_nodes|nnodes|world_size|nodelist|rdzv_timeout|rdzv_complete|joined|store_fail|unreached),
--   value, host, pod, ats, file, line, message. unreached: a launcher could not reach a node (value: the node),
--   written on the launcher's machine about another: ssh's resolve_host() 'ssh: Could not resolve hostname %s: %s'
--   (openssh-portable ssh.c) when pdsh or Open MPI's rsh launcher starts a node's process; the name's first DNS
--   label (a Kubernetes MPIJob names its workers '<pod>.<service>[.<ns>.svc]'); 'host:slots' names no node. The expected node set (nodelist / nnodes / min_nodes)
--   against who joined names the missing node of a rendezvous timeout.
WITH s AS (
    SELECT event_id, ats, host, pod, file, line, kind, message,
           nullif(regexp_extract(message, 'Could not resolve hostname ([A-Za-z0-9][-A-Za-z0-9]*)(?:\.[-\w.]*)?: ', 1), '')
               AS unreached
    FROM aligned_events
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
SELECT event_id, ats, host, pod, file, line, message, 'unreached', unreached FROM s WHERE unreached IS NOT NULL
UNION ALL
SELECT event_id, ats, host, pod, file, line, message,
       CASE WHEN kind = 'rdzv_timeout' OR regexp_matches(message, '(?i)Rendezvous(?:Timeout|Closed)Error|rendezvous.*tim(?:ed|e) ?out')
            THEN 'rdzv_timeout'
            WHEN kind = 'store_unreachable' THEN 'store_fail'
            WHEN kind = 'rdzv_complete' OR message LIKE '%Rendezvous complete%' THEN 'rdzv_complete'
            ELSE 'joined' END, NULL
FROM s
 WHERE (kind IN ('rdzv_timeout', 'rdzv_complete', 'rdzv_join', 'store_unreachable')
    OR regexp_matches(message, '(?i)Rendezvous(?:Timeout|Closed)Error|rendezvous.*tim(?:ed|e) ?out|Rendezvous complete|Rendezvous''ing worker group'))
   AND unreached IS NULL
ORDER BY ats NULLS LAST, file, line
