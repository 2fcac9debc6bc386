-- name: host_activity
-- kind: detector
-- scope: all
-- params: none (reads temp view aligned_events)
-- returns: per host: last aligned time of any line, of any job line (rank known or a launcher
--   line), counts of cause/symptom/lifecycle lines, whether the host's launcher wrote a teardown
--   (worker_failed / failure_summary / sigterm_sent / task_exit). A host whose every line stops
--   while the others go on, with no teardown of its own, is a half-dead node.
SELECT host,
       min(ats) FILTER (WHERE ts_ok) AS first_ats,
       max(ats) FILTER (WHERE ts_ok) AS last_ats,
       count(*) FILTER (WHERE role = 'cause') AS n_cause,
       count(*) FILTER (WHERE role = 'symptom') AS n_symptom,
       count(*) FILTER (WHERE kind IN ('worker_failed', 'failure_summary', 'sigterm_sent', 'task_exit', 'signal_received')
                          OR message LIKE '%failed (exitcode:%' OR message LIKE '%closing signal SIGTERM%') AS n_teardown,
       count(DISTINCT rank) AS n_ranks,
       count(*) AS n
FROM aligned_events WHERE host IS NOT NULL
GROUP BY host ORDER BY host
