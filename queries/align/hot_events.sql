-- name: hot_events
-- kind: align
-- params: none (reads temp view aligned_events)
-- returns: the few aligned events any detector of queries/detect/ looks at (causes, symptoms,
--   lifecycle, launcher reports, watchdog / barrier / srun / Xid / node / rendezvous lines), so
--   that detectors scan thousands of rows, not the whole store. ranktrace.correlate materialises
--   it once per diagnose as temp table hot_events; detectors with `-- scope: all` read
--   aligned_events instead (plain symptoms can be millions of lines: they are aggregated there). A detector that needs a new kind of line adds its prefilter here.
SELECT * FROM aligned_events
WHERE role IN ('cause', 'lifecycle')
   OR kind IN ('worker_failed', 'failure_summary', 'sigterm_sent', 'signal_received', 'task_exit', 'step_cancelled',
               'hang_report', 'rdzv_join', 'rdzv_complete', 'store_unreachable', 'node_failure')
   OR message LIKE '%SeqNum=%'
   OR message LIKE '%monitoredBarrier%' OR message LIKE '%faulty rank%' OR message LIKE '%check rank%'
   OR (message LIKE '%rank%' AND message LIKE '%from%')
   OR raw LIKE '%srun: error:%'
   OR raw LIKE '%exitcode%' OR raw LIKE '%Root Cause%' OR raw LIKE '%Failures:%'
   OR regexp_matches(left(raw, 24), '^\s*(time|host|rank|exitcode)\s*:')
   OR message LIKE '%Xid%'
   OR message ILIKE '%node%' AND (message ILIKE '%fail%' OR message ILIKE '%not responding%' OR message LIKE '%NotReady%')
   OR message ILIKE '%rendezvous%' OR message LIKE '%min_nodes%' OR message LIKE '%max_nodes%'
   OR message ILIKE '%nnodes%' OR message LIKE '%NodeList%' OR message LIKE '%NODELIST%'
   OR raw LIKE '%local_ranks=[%' OR raw LIKE '%global_ranks=[%'
