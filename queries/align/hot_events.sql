-- name: hot_events
-- kind: align
-- params: none (reads temp view aligned_events)
-- returns: the few aligned events the detectors of queries/detect/ look at one by one, so that
--   they scan thousands of rows, not the whole store: the union of their own prefilters (each
--   term below is one detector's WHERE, or a condition every row of it meets). ranktrace.correlate
--   makes it once per diagnose as temp view hot_events; the filter reads only columns that
--   identity and clock leave as they are, so it runs on `events` before them. Detectors with
--   `-- scope: all` read aligned_events instead, those that need every line read the groups of
--   event_groups.sql. A detector that reads a new kind of line adds its prefilter here
--   (tests/correlate/test_hot_events.py checks that every detector finds the same rows in both).
--   The text tests run on the lines the engine marked `hot` only (has_mark, ranktrace.marks): a
--   text test added here needs a literal of its own in parsers/marks.toml (tests/correlate/test_marks.py);
--   a class term (a role, kind or format taken whole) its name in that file's mark `taken`, which the
--   engine sets on the lines of those classes (hot_ids.sql reads the lines of the two marks only).
SELECT * FROM aligned_events
WHERE role IN ('cause', 'symptom')                          -- first_cause, first_symptom, the cascade
   OR kind IN ('worker_failed', 'failure_summary', 'sigterm_sent', 'signal_received', 'task_exit', 'step_cancelled',
               'hang_report', 'rdzv_join', 'rdzv_complete', 'rdzv_timeout', 'store_unreachable', 'node_failure')
   -- attempts (queries/attempts/markers.sql)
   OR kind IN ('worker_start', 'group_restart', 'job_requeue', 'step_start', 'job_state')
   -- clean_end (a scope where nothing failed needs a line proving a normal end)
   OR kind IN ('worker_group_done', 'step_end', 'training_done')
   -- controlplane
   OR starts_with(kind, 'etcd_') OR starts_with(kind, 'apiserver_')
   -- topology
   OR format = 'slurm_topology'
   -- worker_exits: DeepSpeed's 'Killing subprocess N' glued to other output (no format claims it: no kind)
   OR (has_mark(marks, 'hot') AND (raw LIKE '%sigkill_handler] Killing subprocess %'))
   -- worker_exits: a Root Cause / Failures entry line by line (no literal of its own: it starts with
   -- a word; its first byte is one the regexp can start with: cheap, exact; ascii() of the first
   -- character, one test where nine starts_with were: t h r e, space, tab, LF, FF, CR)
   OR (ascii(raw) IN (116, 104, 114, 101, 32, 9, 10, 12, 13) AND NOT contains(raw, chr(10))
       AND regexp_matches(raw, '^\s*(time|host|rank|exitcode)\s*:'))
   -- gang: `kubectl get pods` rows (its first character, a digit or a lowercase letter, then a '/':
   -- exact; raw is tested for the '/' first, which costs no copy of the message)
   OR (contains(raw, '/') AND ascii(message) IN (48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102,
                                                 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115,
                                                 116, 117, 118, 119, 120, 121, 122)
       AND regexp_matches(message, '^[a-z0-9][a-z0-9.-]*\s+\d+/\d+\s+\S+\s+\d+'))
   -- The text tests, on the lines the engine marked (parsers/marks.toml holds a literal of each)
   OR (has_mark(marks, 'hot') AND (
      -- named_ranks
      message LIKE '%monitoredBarrier%' OR message LIKE '%from rank%' OR message LIKE '%from  rank%'
      OR message LIKE '%faulty rank%' OR message LIKE '%check rank%'
      -- node_events: its case-insensitive regexp's words ('%' also stands for the one letter, s,
      -- that has a second case-folding: U+017F)
      OR message ILIKE '%node failure on %' OR message ILIKE '%on failed node %' OR message ILIKE '%not re%ponding%'
      OR message ILIKE '%nodenotready%' OR message ILIKE '%lost contact with job shell on %'
      -- network: the IB async events of NCCL (after a port error, port active: the port came back)
      OR message LIKE '%async event%'
      -- rendezvous
      OR message LIKE '%min_nodes%' OR message LIKE '%max_nodes%' OR message LIKE '%nnodes%'
      OR message LIKE '%NodeList=%' OR message LIKE '%SLURM_JOB_NODELIST%' OR message LIKE '%SLURM_NODELIST%'
      OR message LIKE '%Rendezvous%' OR message LIKE '%rendezvous%'
      -- task_exits
      OR raw LIKE '%srun: error:%task%'
      -- watchdog
      OR message LIKE '%SeqNum=%'
      -- worker_exits (also read for the identity links of the launchers' exit reports)
      OR message LIKE '%failed (exitcode:%local_rank:%'
      OR (raw LIKE '%exitcode%' AND raw LIKE '%local_rank%' AND raw LIKE '%host%' AND raw LIKE '%time%')
      OR (NOT contains(raw, chr(10)) AND (raw LIKE '%Root Cause (first observed failure)%' OR raw LIKE '%Failures:%'))
      -- xid
      OR message LIKE '%Xid (PCI:%'
      -- controlplane
      OR ((message ILIKE '%status%' OR message ILIKE '%lease%')
          AND regexp_matches(message, 'Error updating node status|Unable to update node status|Failed to update lease|(?i:failed to (?:update|patch) status for pod)'))
      -- gang
      OR message LIKE '%Restart Count:%' OR message ILIKE '%back-off%restarting failed container%'
      OR message LIKE '%is restarting because%'
      -- stranded
      OR message LIKE '%Successfully assigned%' OR message LIKE '%Started container%'
      OR message LIKE '%FailedScheduling%' OR message LIKE '%nodes are available%' OR message LIKE '%UnexpectedAdmissionError%'
      OR message LIKE '%tasks in gang unschedulable%' OR message LIKE '%PodsReady timeout%'
      OR message LIKE '%Not all pods are ready or succeeded%' OR message LIKE '%couldn''t assign flavors%'
      OR message LIKE '%insufficient unused quota%'
      -- topology
      OR message LIKE '%topology%'
      -- allocation (its NCCL communicator sizes come from the groups)
      OR raw LIKE '%gres/gpu%' OR raw LIKE '%nvidia.com/gpu%' OR raw LIKE '%world_size%'
      OR raw LIKE '%WORLD_SIZE%' OR raw LIKE '%PET_NNODES%' OR raw LIKE '%NumNodes=%'
      OR raw LIKE '%#SBATCH%' OR raw LIKE '%TresPerNode=%' OR raw LIKE '%local_ranks=[%'
      -- clean_end: its case-insensitive regexp's words ('%ucceeded%': the `s` of Succeeded has a second
      -- case-folding, U+017F), then that regexp
      OR ((raw ILIKE '%ucceeded%' OR raw ILIKE '%exit code:%' OR raw ILIKE '%exited with %'
           OR raw ILIKE '%completed%' OR raw ILIKE '%training %')
          AND regexp_matches(raw, '(?i)\bSucceeded\b|JobSucceeded|\bExit Code:\s+0\s*$|exited with (?:exit )?code 0\b|'
                                  || '(?-i:\bCOMPLETED\b)|completed successfully|training (?:is )?(?:done|finished|complete)\b'))))
