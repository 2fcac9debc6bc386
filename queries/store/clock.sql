-- name: clock
-- kind: store
-- params: none
-- returns: table `clock_offsets` (host, offset_s, uncertainty_s, basis) and view
--   `events_aligned` (every column of events, plus offset_s, ats = ts - offset_s (the
--   time on the aligned clock) and attempt). offset_s = how far that host's clock runs ahead of the
--   reference host (design.md section 4); NULL uncertainty_s = no anchor shared with the
--   reference: assumed 0. After every ingest ranktrace fills clock_offsets with the
--   estimate of ranktrace.correlate.clock (the offsets `diagnose` starts from; its
--   --offset pins are not stored). ats is NULL for a time outside 1990..2100 (a bogus
--   year): it is kept out of alignment and ordering; `attempt` is the attempt of the run the line
--   belongs to (attempts.sql; NULL without a time); an interpolated time on another host's clock is
--   told on the line's own (table interpolated_times). In a connection that diagnosed, the temp table clock_offsets of the
--   diagnosis (pins included) is the one this view reads.
CREATE TABLE IF NOT EXISTS clock_offsets (
    host          VARCHAR,
    offset_s      DOUBLE,
    uncertainty_s DOUBLE,
    basis         VARCHAR
);
-- the lines whose time is interpolated from a line on another clock (a console many nodes write to),
-- that time told on their own clock (queries/align/interpolated_times.sql)
CREATE TABLE IF NOT EXISTS interpolated_times (
    event_id BIGINT,
    ts       TIMESTAMP
);
CREATE OR REPLACE VIEW events_aligned AS
SELECT a.* EXCLUDE (host_key),
       -- the attempt whose start on the line's host (attempts.sql) it has reached; NULL for a line with no
       -- time (a snapshot such as sacct output can be about any attempt). A hash join on the host with
       -- the time as a range: as cheap as no join on millions of lines
       CASE WHEN a.ats IS NOT NULL THEN coalesce(s.attempt, 1) END AS attempt
FROM (
    SELECT e.*,
           coalesce(o.offset_s, 0.0) AS offset_s,
           CASE WHEN e.ts >= TIMESTAMP '1990-01-01' AND e.ts < TIMESTAMP '2100-01-01'
                THEN e.ts - to_microseconds(CAST(round(coalesce(o.offset_s, 0.0) * 1e6) AS BIGINT)) END AS ats,
           coalesce(e.host, '') AS host_key
    FROM (SELECT e.* REPLACE (coalesce(it.ts, e.ts) AS ts)
          FROM events e LEFT JOIN interpolated_times it ON it.event_id = e.event_id) e
    LEFT JOIN clock_offsets o ON o.host = coalesce(e.host, '@' || e.file)   -- '@' || file: a file of no host (slurmctld)
) a
LEFT JOIN attempt_spans s ON s.host = a.host_key AND a.ats >= s.start AND a.ats < s.stop;
