-- name: step_buckets
-- kind: attempts
-- params: none (reads temp table progress_keys, made by ranktrace.correlate.attempts.progress_keys; ranktrace
--   runs it only where fact table progress exists)
-- returns: the training steps a rank (or a file, where no rank is known) wrote, per minute of the
--   aligned clock: host, rank, file, t (the minute), first_ats / last_ats (of its lines in that
--   minute), lo / hi (the least and greatest position: the step, after the epoch where the line
--   says one, so that a per-epoch batch counter that starts again at 0 is no step back). A step that goes back below what the same rank
--   had reached (a resume from a checkpoint) is a sign that a new attempt began. Minutes, not
--   lines: a few hundred rows for hours of training.
--   What aligned_events would give a progress line with a time of its own (ts_ok) and a progress fact, in
--   two steps: a line's host, rank, file and clock offset are those of its identity key (its class and
--   its own identity columns: progress_keys, resolved once per key, as the groups of event_groups.sql
--   are), so the lines are read as integers (key, aligned microseconds, line, position) and grouped per
--   key and minute first, then those partial rows per (host, rank, file, minute). (Through aligned_events,
--   every one of a long run's 15 M progress lines was resolved and grouped by text: 9.7 of its 62 CPU-s.)
--   A line's positions are its columns progress_lo / progress_hi, which the engine wrote from its progress
--   facts (the least and greatest coalesce(epoch, 0) * 1000000000 + step of its rows with a step): joining
--   every line with fact table progress on event_id (15 M rows each side) cost 8 of this query's ~9.5 CPU-s.
WITH l AS (
    SELECT k.kid, epoch_us(r.ts) - k.shift_us AS aus, r.line, r.progress_lo AS lo, r.progress_hi AS hi
    FROM event_rows_keyed r
    JOIN progress_keys k ON k.class_id = r.class_id AND k.k_rank IS NOT DISTINCT FROM r.rank
         AND k.k_local_rank IS NOT DISTINCT FROM r.local_rank AND k.pid IS NOT DISTINCT FROM r.pid
         AND k.task IS NOT DISTINCT FROM r.task AND k.k_srun_lbl IS NOT DISTINCT FROM r.srun_lbl
         AND k.k_srun_rank IS NOT DISTINCT FROM r.srun_rank
    -- ts_ok: a time of its own (the class's ts_kind) in 1990..2100
    WHERE k.ts_ok AND r.ts >= TIMESTAMP '1990-01-01' AND r.ts < TIMESTAMP '2100-01-01' AND r.progress_lo IS NOT NULL
), part AS (   -- per key and aligned minute; (aligned microsecond, line) in one number: the key's first line
    SELECT kid, aus // 60000000 AS minute, min(aus) AS lo_us, max(aus) AS hi_us, min(lo) AS lo, max(hi) AS hi,
           min(CAST(aus AS HUGEINT) * 4294967296 + line) AS first_key
    FROM l GROUP BY kid, minute
), g AS (
    SELECT k.host, k.rank, CASE WHEN k.rank IS NULL THEN k.file END AS gfile, k.file, part.*,
           CAST(part.first_key % 4294967296 AS BIGINT) AS first_line
    FROM part JOIN progress_keys k USING (kid)
)
-- (time_bucket's minutes start at its origin, 2000-01-03 00:00 UTC: a whole minute since the epoch)
SELECT host, rank, gfile AS file, make_timestamp(minute * 60000000) AS t,
       make_timestamp(min(lo_us)) AS first_ats, make_timestamp(max(hi_us)) AS last_ats,
       min(lo) AS lo, max(hi) AS hi,
       -- (the first line of the minute; of lines written in the same microsecond, the first by file and line:
       -- the same whatever order the lines are read in, as in a store merged from parts)
       arg_min(file, (lo_us, file, first_line)) AS first_file, arg_min(first_line, (lo_us, file, first_line)) AS first_line
FROM g
GROUP BY host, rank, gfile, minute
ORDER BY host NULLS LAST, rank NULLS LAST, file NULLS LAST, t
