-- name: node_events
-- kind: detector
-- params: none (reads temp view aligned_events)
-- returns: lines that say a node failed, with the node they name (which is often not the host
--   that logged them): slurmctld "Node failure on n2" / "Killing JobId=7 on failed node n2" /
--   "node n2 not responding" / Flux's "lost contact with job shell on broker n2 (rank 3)" / srun's "Task launch for StepId=7.0 failed on node n2" / NODE_FAIL, a down node in sinfo, Kubernetes "Node ... status is now: NodeNotReady",
--   a NotReady / Unknown row of `kubectl get nodes` (the row's NAME is the node: kubectl_get.node_row's host), the
--   Ready False / Unknown condition of `kubectl describe node` (the dump's Name) and
--   a `kubectl get events` row about a node object ('node/NAME', the OBJECT column of kubectl's event printer),
--   Ray's GCS marking a node dead (its address), and the actors it destroyed with their owner's node (the
--   owner's address) or with their own node (the actor's address, from its ActorDiedError fields); Open MPI's
--   mpirun reporting the node of a daemon it lost ('Remote daemon: [[J,0],V] on node N').
--   Columns: event_id, ats, reporter (the host that logged it), node, pid (a process the line says died with
--   the node, else NULL), format, file, line, message.
SELECT event_id, ats, host AS reporter,
       coalesce(nullif(regexp_extract(message, '(?i)node failure on ([\w.\-\[\],]+)', 1), ''),
                nullif(regexp_extract(message, '(?i)on failed node ([\w.\-\[\],]+)', 1), ''),
                nullif(regexp_extract(message, '(?i)node ([\w.\-\[\],]+) not responding', 1), ''),
                -- Flux's job-exec module (flux-core src/modules/job-exec/bulkexec.c, exec.c): a job shell whose broker
                -- is unreachable (EHOSTUNREACH) is 'lost contact with job shell on broker H (rank N)' in the job's fatal
                -- exception, 'lost contact with job shell on H (shell rank N)' in lost_shell's; written by the
                -- instance's job-exec, not by H
                nullif(regexp_extract(message, 'lost contact with job shell on (?:broker )?([\w.\-]+) \((?:shell )?rank \d+\)', 1), ''),
                -- srun (src/api/step_launch.c): 'Task launch for StepId=J.S failed on node N: ...'
                nullif(regexp_extract(message, 'Task launch for \S+ failed on node ([\w.\-]+):', 1), ''),
                nullif(regexp_extract(message, '(?i)Node ([\w.\-]+) status is now: NodeNotReady', 1), ''),
                nullif(regexp_extract(message, '(?i)NodeName=([\w.\-]+)', 1), ''),
                -- Ray's GCS (gcs_node_manager.cc) through the driver's warning or its event log: 'The node with node
                -- id: {id} and address: {ip} and node name: {name} has been marked dead ...' ('and ip: {ip}' before)
                nullif(regexp_extract(message, 'The node with node id:? \w+ and (?:address|ip): ([\w.:\-]+) ', 1), ''),
                -- Ray's GCS on the actors owned by workers of a node it found dead (gcs_actor_manager.cc OnNodeDead,
                -- GenOwnerDiedCause): the ActorDiedError text names the owner node by its address
                nullif(regexp_extract(message, 'Owner Ip address: ([\w.:\-]+) Owner worker exit type: \w+ Worker exit detail: Owner''s node has crashed', 1), ''),
                -- Open MPI's launcher lost a node's daemon (openmpi_signal.lost_daemon: '  Remote daemon: [[J,0],V] on
                -- node N' of ORTE's / PRRTE's report): written by mpirun on its own node, about node N
                nullif(regexp_extract(message, '^Remote daemon: \S+ on node ([\w.\-]+)$', 1), ''),
                -- sinfo rows: `sinfo -N` names its node first, the partition view last (scontrol.toml)
                CASE pattern WHEN 'scontrol.sinfo_node' THEN nullif(regexp_extract(message, '^([\w.\-]+) ', 1), '')
                             WHEN 'scontrol.sinfo_partition' THEN nullif(regexp_extract(message, '(\S+)\s*$', 1), '')
                             WHEN 'kubectl_get.node_row' THEN host
                             -- Ray's GCS on the actors of a node it found dead (gcs_actor_manager.cc GenNodeDiedCause: 'The
                             -- actor is dead because its node has died. Node Id: {id}'): the node is the actor's, whose
                             -- 'ip:' field ray.toml carried to the line
                             WHEN 'ray.actor_node_dead' THEN host
                             -- a Conditions row (Ready False/Unknown) of `kubectl describe node`: describe.go describeNode
                             -- writes 'Name:' first, as describePod does, so the dump's name is carried as its pod
                             WHEN 'kubectl_describe.node_condition' THEN coalesce(host, pod)
                             WHEN 'kubectl_get.event_row' THEN nullif(regexp_extract(message, '\snode/([\w.\-]+)\s', 1), '') END) AS node,
       -- the process the line says died with the node, else NULL: a Ray actor's pid (its ActorDiedError fields,
       -- carried to the cause line by ray.toml)
       CASE WHEN pattern = 'ray.actor_node_dead' THEN pid END AS pid,
       format, file, line, message
FROM aligned_events
WHERE kind = 'node_failure'
   OR regexp_matches(message, '(?i)node failure on |on failed node |not responding|NodeNotReady|lost contact with job shell on ')
ORDER BY ats NULLS LAST, file, line
