-- name: arrival
-- kind: align
-- params: $files (the files whose timed lines come from more than one host: a console that pdsh,
--   srun or mpirun fed from many nodes), $max_line (the first lines of each are enough: a clock's
--   offset holds for the whole run)
-- returns: host_a, host_b, n, d95: for every two hosts whose lines follow each other in such a file,
--   host_a's line first, the 95th percentile of (time written on a) - (time written on b) over those
--   pairs of lines. The launcher writes the lines in the order they reach it, a moment after each was
--   written, so a's line was written before b's on one clock: offset(a) - offset(b) >= t_a - t_b (less
--   the delivery time). The pairs in the other order bound it from the other side;
--   ranktrace.correlate.clock makes an offset of the two bounds. A percentile, not the maximum: a
--   line held in a process's buffer arrives late and would bound too much.
WITH lines AS (
    SELECT file, line, host, epoch(ts) AS t
    FROM events
    WHERE file IN (SELECT unnest($files)) AND line <= $max_line AND host IS NOT NULL
      AND ts_kind IN ('exact', 'local', 'year_inferred', 'envelope')
      AND ts >= TIMESTAMP '1990-01-01' AND ts < TIMESTAMP '2100-01-01'
), pairs AS (
    SELECT lag(host) OVER w AS host_a, lag(t) OVER w AS t_a, host AS host_b, t AS t_b
    FROM lines
    WINDOW w AS (PARTITION BY file ORDER BY line)
)
SELECT host_a, host_b, count(*) AS n, quantile_cont(t_a - t_b, 0.95) AS d95
FROM pairs
WHERE host_a IS NOT NULL AND host_a <> host_b
GROUP BY host_a, host_b
ORDER BY host_a, host_b
