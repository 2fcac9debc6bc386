-- name: markers
-- kind: attempts
-- params: none (reads temp view aligned_events; ranktrace runs it over hot_events)
-- returns: the lines that show the job's processes being launched or relaunched, one row each:
--   event_id, file, line, ats (aligned), ts (as logged), host, pid (the writer's), step_id and job_id
--   (Slurm's, from the line's own columns or its text), kind and signal:
--     round   a torchrun agent starts a rendezvous round (rdzv_join; its rdzv_complete or
--             'Starting worker group' where it wrote no join line): every round after an agent's
--             first relaunches its workers
--     launch  a launcher process starts ('Starting elastic_operator with launch configs', DeepSpeed's
--             runner 'cmd = pdsh ...' and each node's launch.py 'nnodes=N, num_local_procs=M, node_rank=K'), Slurm
--             allocates the job ('sched: Allocate JobId=N'), a node's slurmd launches its batch
--             script or a step's tasks ('Launching batch job N', 'launch task StepId=N.S')
--     restart an agent says it restarts its worker group ('Worker group FAILED. 2/3 attempts left;
--             will restart worker group', or for a membership change 'Detected 1 new nodes ...;
--             will restart worker group'), slurmctld requeues the job ('Requeuing JobId=N'): the end
--             of an attempt, announcing the next
--     closed  the rendezvous an agent tries to join was closed or its store is gone
--             (RendezvousClosedError, RendezvousConnectionError: another agent ended the job): a
--             relaunch that met only this started no attempt
--   ranktrace.correlate.attempts clusters these into the starts of attempts.
SELECT event_id, file, line, ats, ts, host, pid, step_id,
       coalesce(job_id, nullif(regexp_extract(message, 'JobId=(\d+)', 1), '')) AS job_id, kind,
       CASE WHEN kind = 'worker_start' AND (message LIKE '%elastic_operator%' OR format = 'deepspeed') THEN 'launch'
            WHEN kind IN ('step_start', 'job_state') THEN 'launch'
            WHEN kind IN ('worker_failed', 'group_restart', 'job_requeue') THEN 'restart'
            WHEN kind IN ('rdzv_timeout', 'store_unreachable') THEN 'closed'
            ELSE 'round' END AS signal
FROM aligned_events
WHERE ats IS NOT NULL
  AND (kind IN ('rdzv_join', 'rdzv_complete', 'worker_start', 'group_restart', 'job_requeue', 'step_start')
       OR (kind = 'job_state' AND message LIKE '%Allocate JobId=%')
       OR (kind = 'rdzv_timeout' AND raw LIKE '%RendezvousClosedError%')
       OR (kind = 'store_unreachable' AND raw LIKE '%RendezvousConnectionError%')
       OR (kind = 'worker_failed' AND message LIKE '%attempts left%will restart%'))
ORDER BY ats, file, line
