-- name: topology
-- kind: detector
-- params: none (reads temp view aligned_events)
-- returns: the network topology the logs show, one row per statement: source (slurm: a
--   topology.conf or `scontrol show topology` line; k8s: a node topology label such as
--   topology.k8s.aws/network-node-layer-N, cloud.google.com/gce-topology-block/-subblock,
--   network.topology.kubernetes.io/*), switch (the switch or label value), level (0 = leaf for
--   Slurm; the label's layer for K8s), nodes and switches (Slurm hostlists), label, host, file, line.
SELECT 'slurm' AS source, regexp_extract(message, '^SwitchName=([^\s#]+)', 1) AS switch,
       TRY_CAST(nullif(regexp_extract(message, '\bLevel=(\d+)', 1), '') AS INTEGER) AS level,
       nullif(regexp_extract(message, '\bNodes=([^\s#]+)', 1), '') AS nodes,
       nullif(regexp_extract(message, '\bSwitches=([^\s#]+)', 1), '') AS switches,
       NULL AS label, host, file, line
FROM aligned_events WHERE format = 'slurm_topology'
UNION ALL
SELECT 'k8s', regexp_extract(message, '(?:^|[\s,])(?:topology\.k8s\.aws/network-node-layer-\d|cloud\.google\.com/gce-topology-(?:block|subblock)|network\.topology\.kubernetes\.io/[\w.-]+)=([\w.-]+)', 1),
       TRY_CAST(nullif(regexp_extract(message, 'network-node-layer-(\d)=', 1), '') AS INTEGER),
       NULL, NULL,
       regexp_extract(message, '((?:topology\.k8s\.aws/network-node-layer-\d|cloud\.google\.com/gce-topology-(?:block|subblock)|network\.topology\.kubernetes\.io/[\w.-]+))=', 1),
       host, file, line
FROM aligned_events
WHERE regexp_matches(message, '(?:^|[\s,])(?:topology\.k8s\.aws/network-node-layer-\d|cloud\.google\.com/gce-topology-(?:block|subblock)|network\.topology\.kubernetes\.io/[\w.-]+)=[\w.-]+')
ORDER BY source, level NULLS LAST, switch, file, line
