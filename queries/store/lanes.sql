-- name: lanes
-- kind: store
-- params: none
-- returns: rebuilds table `lanes` after every ingest: one row per timeline lane
--   (a rank, or a node-level source such as slurmd/kubelet/kernel where the
--   rank is unknown) with its event, error and cause counts, its first and
--   last logged time, and the times of its first cause, first error and last
--   failure event (cause, symptom or error). `pod` splits a lane by Kubernetes
--   pod: an event with a pod and no host belongs to the lane group of its pod
--   (the TUI's "pod NAME"), not to one "(no host)" group. The TUI draws its first screen
--   from it without scanning `events`; a lane is one host, so its aligned
--   times are these minus the host's clock offset.
CREATE OR REPLACE TABLE lanes AS
SELECT host,
       pod,
       rank,
       CASE WHEN rank IS NULL THEN coalesce(program, format, 'log') END AS source,
       count(*) AS events,
       count(*) FILTER (WHERE severity IN ('error', 'critical')) AS errors,
       count(*) FILTER (WHERE role = 'cause') AS causes,
       -- times outside 1990..2100 (a bogus year) are kept out of the lane's span
       min(ts) FILTER (WHERE sane) AS first_ts,
       max(ts) FILTER (WHERE sane) AS last_ts,
       min(ts) FILTER (WHERE sane AND role = 'cause') AS first_cause_ts,
       min(ts) FILTER (WHERE sane AND severity IN ('error', 'critical')) AS first_error_ts,
       max(ts) FILTER (WHERE sane AND (role IN ('cause', 'symptom') OR severity IN ('error', 'critical')))
           AS last_failure_ts
FROM (SELECT *, ts >= TIMESTAMP '1990-01-01' AND ts < TIMESTAMP '2100-01-01' AS sane FROM events
      WHERE event_id NOT IN (SELECT event_id FROM echoes))   -- a --tee copy counts once (echoes.sql)
GROUP BY ALL;
