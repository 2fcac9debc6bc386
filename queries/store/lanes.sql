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
--   In two steps: the lines are counted per class and rank first (event_rows alone: what
--   decides severity, role, host and source is its class, stored once), then those counts
--   per lane.
CREATE OR REPLACE TABLE lanes AS
WITH p AS (
    SELECT class_id, rank,
           -- times outside 1990..2100 (a bogus year) are kept out of the lane's span
           ts >= TIMESTAMP '1990-01-01' AND ts < TIMESTAMP '2100-01-01' AS sane,
           count(*) AS n, min(ts) AS min_ts, max(ts) AS max_ts
    FROM event_rows
    WHERE event_id NOT IN (SELECT event_id FROM echoes)   -- a --tee copy counts once (echoes.sql)
    GROUP BY ALL
)
SELECT c.host,
       c.pod,
       p.rank,
       CASE WHEN p.rank IS NULL THEN coalesce(c.program, c.format, 'log') END AS source,
       CAST(sum(p.n) AS BIGINT) AS events,
       CAST(coalesce(sum(p.n) FILTER (WHERE c.severity IN ('error', 'critical')), 0) AS BIGINT) AS errors,
       CAST(coalesce(sum(p.n) FILTER (WHERE c.role = 'cause'), 0) AS BIGINT) AS causes,
       min(p.min_ts) FILTER (WHERE p.sane) AS first_ts,
       max(p.max_ts) FILTER (WHERE p.sane) AS last_ts,
       min(p.min_ts) FILTER (WHERE p.sane AND c.role = 'cause') AS first_cause_ts,
       min(p.min_ts) FILTER (WHERE p.sane AND c.severity IN ('error', 'critical')) AS first_error_ts,
       max(p.max_ts) FILTER (WHERE p.sane AND (c.role IN ('cause', 'symptom') OR c.severity IN ('error', 'critical')))
           AS last_failure_ts
FROM p JOIN event_classes c USING (class_id)
GROUP BY ALL;
