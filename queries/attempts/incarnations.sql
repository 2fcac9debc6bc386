-- name: incarnations
-- kind: attempts
-- params: none (reads temp view aligned_groups: every line in groups, queries/align/event_groups.sql)
-- returns: one row per process of a rank whose lines carry its pid: host, rank, pid, first_ats,
--   last_ats (aligned), n (lines), and the file and first line of its first group. A rank whose
--   pid changes was relaunched: its new process's first line is a sign that a new attempt began
--   (a process group that a live process creates or destroys keeps the pid: no relaunch). Only the
--   process's own lines count.
SELECT host, rank, pid,
       min(first_ats) AS first_ats,
       max(last_ats) AS last_ats,
       CAST(sum(n) AS BIGINT) AS n,
       arg_min(file, first_ats) AS file,
       arg_min(first_line, first_ats) AS line
FROM aligned_groups
WHERE rank IS NOT NULL AND pid IS NOT NULL AND first_ats IS NOT NULL AND ts_ok
  -- lines about a process, not by it: the kernel's OOM report, a Slurm daemon's or torchrun agent's
  -- account of a task's exit name the pid of a process that is ending, not one that began
  AND format NOT IN ('kernel_dmesg', 'slurm_daemon', 'torch_elastic')
GROUP BY host, rank, pid
ORDER BY host NULLS LAST, rank, first_ats
