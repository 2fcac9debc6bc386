-- name: lanes
-- kind: store
-- params: none
-- returns: rebuilds table `lanes` after every ingest: one row per timeline lane
--   (a rank, or a node-level source such as slurmd/kubelet/kernel where the
--   rank is unknown) with its event, error and cause counts, its first and
--   last logged time, and the times of its first cause, first error and last
--   failure event (cause, symptom or error). The TUI draws its first screen
--   from it without scanning `events`; a lane is one host, so its aligned
--   times are these minus the host's clock offset.
CREATE OR REPLACE TABLE lanes AS
SELECT host,
       rank,
       CASE WHEN rank IS NULL THEN coalesce(program, format, 'log') END AS source,
       count(*) AS events,
       count(*) FILTER (WHERE severity IN ('error', 'critical')) AS errors,
       count(*) FILTER (WHERE role = 'cause') AS causes,
       min(ts) AS first_ts,
       max(ts) AS last_ts,
       min(ts) FILTER (WHERE role = 'cause') AS first_cause_ts,
       min(ts) FILTER (WHERE severity IN ('error', 'critical')) AS first_error_ts,
       max(ts) FILTER (WHERE role IN ('cause', 'symptom') OR severity IN ('error', 'critical')) AS last_failure_ts
FROM events
GROUP BY ALL;
