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
-- How: what a line's clock depends on (its host, or its file for a file of no host) is a column of its class,
-- so the offset is found once per class (a few thousand rows), not once per line, and the aligned time is
-- integer arithmetic on the line (make_timestamp(epoch_us(ts) - offset in us): the same instant as ts minus
-- that interval, at a third of its cost). On the long run's 15.4 M lines these two took the README's "last
-- progress per rank" from 2.3 to 1.4 CPU-s, and the CASE below to 1.0 (benchmarks/README.md, session 19). The attempt is
-- found here by a join on the host with the time as a range, whatever the spans are; when every host's
-- spans follow one another (as ranktrace.correlate.attempts writes them), ingest replaces this view by
-- one that finds it with a CASE over the host's span starts, read per class (store.make_aligned_view):
-- the same rows, without a join per line.
CREATE OR REPLACE VIEW events_aligned AS
-- (subqueries, not CTEs: a CTE's columns lose their NOT NULL, which DESCRIBE shows users)
SELECT a.* EXCLUDE (host_key),
       -- the attempt whose start on the line's host (attempts.sql) it has reached; NULL for a line with no
       -- time (a snapshot such as sacct output can be about any attempt)
       CASE WHEN a.ats IS NOT NULL THEN coalesce(s.attempt, 1) END AS attempt
FROM (   -- the columns of view events (queries/schema/002_views.sql), offset_s and ats
    SELECT r.event_id, r.file_id, k.file, r.line, r.end_line, r.byte_offset, r.ts, k.ts_kind, r.ts_text,
           k.format, k.pattern, k.envelopes, k.host, r.rank, r.local_rank, r.task, r.pid, r.tid,
           k.job_id, k.step_id, k.pod, k.namespace, k.container, k.gpu, k.program,
           k.level, k.severity, k.kind, k.role, r.message, r.raw, r.marks,
           r.step, r.says_step, r.nranks, r.teardown, r.ts_logged,
           k.offset_s,
           CASE WHEN r.ts >= TIMESTAMP '1990-01-01' AND r.ts < TIMESTAMP '2100-01-01'
                THEN make_timestamp(epoch_us(r.ts) - k.offset_us) END AS ats,
           k.host_key
    FROM (SELECT r.* REPLACE (coalesce(it.ts, r.ts) AS ts)
          FROM event_rows r LEFT JOIN interpolated_times it ON it.event_id = r.event_id) r
    JOIN (   -- each class with its clock's offset (its host's; a file of no host, such as slurmctld's:
             -- '@' || file), and the host its attempts' spans are keyed by
        SELECT c.*, coalesce(o.offset_s, 0.0) AS offset_s,
               CAST(round(coalesce(o.offset_s, 0.0) * 1e6) AS BIGINT) AS offset_us,
               coalesce(c.host, '') AS host_key
        FROM event_classes c
        LEFT JOIN clock_offsets o ON o.host = coalesce(c.host, '@' || c.file)
    ) k USING (class_id)
) a
LEFT JOIN attempt_spans s ON s.host = a.host_key AND a.ats >= s.start AND a.ats < s.stop;
