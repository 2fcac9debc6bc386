-- name: step_buckets
-- kind: attempts
-- params: none (reads temp view aligned_events and the fact table progress; ranktrace runs it only
--   where that table exists)
-- returns: the training steps a rank (or a file, where no rank is known) wrote, per minute of the
--   aligned clock: host, rank, file, t (the minute), first_ats / last_ats (of its lines in that
--   minute), lo / hi (the least and greatest position: the step, after the epoch where the line
--   says one, so that a per-epoch batch counter that starts again at 0 is no step back). A step that goes back below what the same rank
--   had reached (a resume from a checkpoint) is a sign that a new attempt began. Minutes, not
--   lines: a few hundred rows for hours of training.
SELECT e.host, e.rank, CASE WHEN e.rank IS NULL THEN e.file END AS file,
       time_bucket(INTERVAL 1 MINUTE, e.ats) AS t,
       min(e.ats) AS first_ats, max(e.ats) AS last_ats,
       min(coalesce(p.epoch, 0) * 1000000000 + p.step) AS lo,
       max(coalesce(p.epoch, 0) * 1000000000 + p.step) AS hi,
       -- (the first line of the minute; of lines written in the same microsecond, the first by file and line:
       -- the same whatever order the lines are read in, as in a store merged from parts)
       arg_min(e.file, (e.ats, e.file, e.line)) AS first_file, arg_min(e.line, (e.ats, e.file, e.line)) AS first_line
FROM aligned_events e JOIN progress p USING (event_id)
WHERE e.kind = 'progress' AND e.ats IS NOT NULL AND e.ts_ok AND p.step IS NOT NULL
GROUP BY ALL
ORDER BY host NULLS LAST, rank NULLS LAST, file NULLS LAST, t
