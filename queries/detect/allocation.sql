-- name: allocation
-- kind: detector
-- params: none (reads temp view aligned_events, or hot_events; aligned_groups for nccl_nranks)
-- returns: what the logs say about the job's size, one row per statement: what, value (int),
--   host, pod, ats, file, line, format. what is one of
--   slurm_gpus     the job's GPUs from Slurm's TRES (scontrol show job TRES=/AllocTRES=, sacct
--                  AllocTRES of the job row, jobcomp Tres=): gres/gpu=N (or gres/gpu:<type>=N)
--   slurm_gpn      GPUs per node asked (scontrol TresPerNode=gres:gpu:N, #SBATCH --gres=gpu:N)
--   slurm_nodes    NumNodes=N (scontrol), #SBATCH --nodes=N
--   pod_gpus       a pod's nvidia.com/gpu request/limit (kubectl describe pod), per pod
--   pods_expected  PET_NNODES (training-operator env of a PyTorchJob pod)
--   world_size     the torch world size: world_size=N, global_world_sizes=[N, ...], WORLD_SIZE: N
--   nccl_nranks    NCCL communicator size (`comm ... nranks N`)
--   ranks_on_node  torchrun's local_ranks=[...] of one agent (value = how many)
--   job_end        not here: ranktrace.correlate.impact reads the Slurm end time from slurm_job_state
-- ranktrace.correlate.impact picks the allocation from these (scheduler first) for the cost.
WITH s AS (
    SELECT event_id, ats, host, pod, file, line, format, step_id, raw, message FROM aligned_events
    WHERE raw LIKE '%gres/gpu%' OR raw LIKE '%nvidia.com/gpu%' OR raw LIKE '%world_size%'
       OR raw LIKE '%WORLD_SIZE%' OR raw LIKE '%PET_NNODES%' OR raw LIKE '%NumNodes=%'
       OR raw LIKE '%#SBATCH%' OR raw LIKE '%TresPerNode=%' OR raw LIKE '%local_ranks=[%'
)
SELECT * FROM (
SELECT 'slurm_gpus' AS what,
       TRY_CAST(regexp_extract(raw, 'gres/gpu(?::[\w.-]+)?=(\d+)', 1) AS INTEGER) AS value,
       host, pod, ats, file, line, format
FROM s WHERE format IN ('scontrol', 'sacct', 'slurm_jobcomp') AND step_id IS NULL
         AND regexp_matches(raw, '(?:^|[\s,|=])gres/gpu(?::[\w.-]+)?=\d+')
         AND NOT regexp_matches(raw, '^\d+\.\w')
UNION ALL
SELECT 'slurm_gpn', TRY_CAST(regexp_extract(raw, '(?:TresPerNode=gres:gpu(?::[\w.-]+)?:|#SBATCH\s+--gres[= ]gpu(?::[\w.-]+)?:)(\d+)', 1) AS INTEGER),
       host, pod, ats, file, line, format
FROM s WHERE regexp_matches(raw, '(?:TresPerNode=gres:gpu(?::[\w.-]+)?:|#SBATCH\s+--gres[= ]gpu(?::[\w.-]+)?:)\d+')
UNION ALL
SELECT 'slurm_nodes', TRY_CAST(regexp_extract(raw, '(?:\bNumNodes=|#SBATCH\s+(?:--nodes[= ]|-N\s*))(\d+)', 1) AS INTEGER),
       host, pod, ats, file, line, format
FROM s WHERE regexp_matches(raw, '(?:\bNumNodes=|#SBATCH\s+(?:--nodes[= ]|-N\s*))\d+')
UNION ALL
SELECT 'pod_gpus', TRY_CAST(regexp_extract(message, '^\s*nvidia\.com/gpu:\s+(\d+)\s*$', 1) AS INTEGER),
       host, pod, ats, file, line, format
FROM s WHERE regexp_matches(message, '^\s*nvidia\.com/gpu:\s+\d+\s*$')
UNION ALL
SELECT 'pods_expected', TRY_CAST(regexp_extract(message, '^\s*PET_NNODES:\s+(\d+)\s*$', 1) AS INTEGER),
       host, pod, ats, file, line, format
FROM s WHERE regexp_matches(message, '^\s*PET_NNODES:\s+\d+\s*$')
UNION ALL
SELECT 'world_size', TRY_CAST(regexp_extract(raw, '(?:\bworld_size[=:]\s*|global_world_sizes=\[|\bWORLD_SIZE[=:]\s*)(\d+)', 1) AS INTEGER),
       host, pod, ats, file, line, format
FROM s WHERE regexp_matches(raw, '(?:\bworld_size[=:]\s*|global_world_sizes=\[|\bWORLD_SIZE[=:]\s*)\d+')
UNION ALL
-- (from the groups of lines, queries/align/event_groups.sql: its largest per group and where)
SELECT 'nccl_nranks', nranks, host, pod, CASE WHEN first_ats IS NOT NULL THEN nranks_at.t - shift END, file, nranks_at.l, format
FROM aligned_groups WHERE nranks IS NOT NULL
UNION ALL
SELECT 'ranks_on_node', len(string_split(regexp_extract(raw, 'local_ranks=\[([\d, ]*)\]', 1), ',')),
       host, pod, ats, file, line, format
FROM s WHERE regexp_matches(raw, 'local_ranks=\[\d[\d, ]*\]')
) u
-- the world size and the NCCL communicator size are used as their largest value: one row each,
-- not one per communicator init line (hundreds of thousands in an NCCL_DEBUG=INFO job)
QUALIFY what NOT IN ('world_size', 'nccl_nranks')
     OR row_number() OVER (PARTITION BY what ORDER BY value DESC NULLS LAST, file, line) = 1
ORDER BY what, ats NULLS LAST, file, line
