-- name: clean_end
-- kind: detector
-- params: none (reads temp view aligned_events; ranktrace runs it over hot_events, which holds its lines)
-- returns: lines that prove a normal end (the positive evidence a verdict of `none` needs): a torchrun
--   agent's worker group SUCCEEDED, a Slurm step/job COMPLETED or exiting 0 (sacct, scontrol,
--   slurmctld `WEXITSTATUS 0`, slurmstepd `exited with exit code 0`, srun `job_rc = 0`), a Kubernetes
--   container/pod Completed/Succeeded with exit code 0, a training-operator `Succeeded` condition, a
--   launcher's own "exited with code 0", the framework's own end (Lightning `Trainer.fit` stopped, HF
--   Trainer 'Training completed.': kind training_done). Columns: event_id, ats, host, rank, kind, file, line, message.
--   A `step_end` line that reports a non-zero job_rc is not a clean end, nor Open MPI's 'Local abort ... completed
--   successfully'. COMPLETED is a scheduler's state, upper case only: the watchdog's own report of a hung
--   collective says '... last enqueued NCCL work: N, last completed NCCL work: M.' (ProcessGroupNCCL.cpp).
SELECT event_id, ats, host, rank, kind, file, line, message
FROM aligned_events
WHERE (kind IN ('worker_group_done', 'step_end', 'training_done')
       OR regexp_matches(raw, '(?i)\bSucceeded\b|JobSucceeded|\bExit Code:\s+0\s*$|exited with (?:exit )?code 0\b|'
                              || '(?-i:\bCOMPLETED\b)|completed successfully|training (?:is )?(?:done|finished|complete)\b'))
  -- Open MPI's ompi_mpi_abort (ompi/runtime/ompi_mpi_abort.c) 'Local abort %s completed successfully, but am not
  -- able to aggregate error messages ...': the abort of a process completed, not the job
  AND NOT regexp_matches(raw, '(?i)not completed|\bfailed\b|exit code [1-9]|exitcode[=: ]+-?[1-9]|WTERMSIG|signal \d|'
                              || 'job_rc = [1-9]|WEXITSTATUS [1-9]|\|[1-9]\d*:\d+\||\|0:[1-9]|Local abort ')
ORDER BY ats NULLS LAST, file, line
