-- name: markers
-- kind: attempts
-- params: none (reads temp view aligned_events; ranktrace runs it over hot_events)
-- returns: the lines that show the job's processes being launched or relaunched, one row each:
--   event_id, file, line, ats (aligned), ts (as logged), host, pid (the writer's: a torchrun agent's
--   own pid), kind and signal:
--     round   a torchrun agent starts a rendezvous round (rdzv_join; its rdzv_complete or
--             'Starting worker group' where it wrote no join line): every round after an agent's
--             first relaunches its workers
--     launch  a launcher process starts ('Starting elastic_operator with launch configs')
--     restart an agent says it restarts its worker group after a failure
--             ('Worker group FAILED. 2/3 attempts left; will restart worker group'): the end of
--             an attempt, not a start
--   ranktrace.correlate.attempts clusters these into the starts of attempts.
SELECT event_id, file, line, ats, ts, host, pid, kind,
       CASE WHEN kind = 'worker_start' AND message LIKE '%elastic_operator%' THEN 'launch'
            WHEN kind = 'worker_failed' THEN 'restart'
            ELSE 'round' END AS signal
FROM aligned_events
WHERE ats IS NOT NULL
  AND (kind IN ('rdzv_join', 'rdzv_complete', 'worker_start')
       OR (kind = 'worker_failed' AND message LIKE '%attempts left%will restart%'))
ORDER BY ats, file, line
