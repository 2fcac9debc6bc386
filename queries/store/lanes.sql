-- name: lanes
-- kind: store
-- params: none
-- returns: rebuilds table `lanes` after every ingest: one row per timeline lane
--   (a rank, or a node-level source such as slurmd/kubelet/kernel where the
--   rank is unknown) with its event, error and cause counts and its first and
--   last logged time. The TUI draws its first screen from it without scanning
--   `events`.
CREATE OR REPLACE TABLE lanes AS
SELECT host,
       rank,
       CASE WHEN rank IS NULL THEN coalesce(program, format, 'log') END AS source,
       count(*) AS events,
       count(*) FILTER (WHERE severity IN ('error', 'critical')) AS errors,
       count(*) FILTER (WHERE role = 'cause') AS causes,
       min(ts) AS first_ts,
       max(ts) AS last_ts
FROM events
GROUP BY ALL;
