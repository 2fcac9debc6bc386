-- name: echoes
-- kind: store
-- params: none
-- returns: rebuilds table `echoes` (event_id, of_event_id, ts) after every ingest: an event that
--   repeats another one of the same rank with the same message, within 2 s, in another
--   file, e.g. torchrun --tee with --log-dir writes every line of a rank both to the console
--   (the srun or job output) and to attempt_N/R/stdout.log. The copy kept (of_event_id) is
--   the one in the most specific file: a file whose path names the rank, then one whose path
--   names the host, then the file with fewest ranks, then by path; the nearest in time, then
--   the lowest event_id. Readers (the TUI, diagnose's and the report's evidence and cascade)
--   skip the events listed here; they stay in `events`.
--   An echo and its copy are lines of one rank in two files written within 2 s of each other (or both
--   without a time): the (rank, file) pairs whose lines span times that another file of the same rank
--   reaches are found first (integers and times, one scan of event_rows: spans), and only their lines'
--   messages are compared (none in most stores; none in a long run whose every rank writes to one
--   Slurm job output per attempt, one after the other: grouping its 15 M messages cost 18 CPU-s).
--   A (rank, message) in two such files may have its most specific copy in any file, so g reads
--   every line of the pairs found (a pair in one such file only has no copy within reach: no echo).
CREATE OR REPLACE TABLE echoes AS
WITH spans AS (            -- when each rank's lines of each file were written
    SELECT rank, file_id, min(ts) AS lo, max(ts) AS hi, bool_or(ts IS NULL) AS untimed
    FROM event_rows WHERE rank IS NOT NULL GROUP BY rank, file_id
),
shared AS (                -- a rank's files that another file of that rank reaches in time (both have
                           -- lines without a time, or their spans come within 2 s: 3 s here, a margin)
    SELECT DISTINCT a.rank, a.file_id FROM spans a JOIN spans b ON b.rank = a.rank AND b.file_id <> a.file_id
    WHERE (a.untimed AND b.untimed) OR (epoch(a.lo) - 3.0 <= epoch(b.hi) AND epoch(b.lo) - 3.0 <= epoch(a.hi))
),
multi AS (                 -- (rank, message) pairs seen in more than one of those files
    SELECT e.rank, e.message FROM events e SEMI JOIN shared s ON s.rank = e.rank AND s.file_id = e.file_id
    WHERE e.message IS NOT NULL AND e.message <> ''
    GROUP BY e.rank, e.message HAVING count(DISTINCT e.file_id) > 1
),
g AS (
    SELECT e.event_id, e.file_id, e.file, e.rank, e.message, e.ts
    FROM events e SEMI JOIN multi m ON m.rank = e.rank AND m.message = e.message
),
spec AS (                  -- how specific each file of those events is
    SELECT g.file_id,
           (f.rank IS NOT NULL OR f.local_rank IS NOT NULL)::INTEGER * 2 + (f.host IS NOT NULL)::INTEGER AS spec,
           (SELECT count(DISTINCT rank) FROM events x WHERE x.file_id = g.file_id) AS nranks,
           any_value(g.file) AS file
    FROM (SELECT DISTINCT file_id, file FROM g) g LEFT JOIN files f ON f.file_id = g.file_id
    GROUP BY g.file_id, f.rank, f.local_rank, f.host
),
best AS (
    SELECT g.rank, g.message, first(g.file_id ORDER BY s.spec DESC, s.nranks, s.file, g.file_id) AS file_id
    FROM g JOIN spec s USING (file_id) GROUP BY g.rank, g.message
),
pairs AS (
    SELECT a.event_id, k.event_id AS of_event_id,
           row_number() OVER (PARTITION BY a.event_id
                              ORDER BY abs(epoch(a.ts) - epoch(k.ts)) NULLS LAST, k.event_id) AS n
    FROM g a
    JOIN best b ON b.rank = a.rank AND b.message = a.message AND a.file_id <> b.file_id
    JOIN g k ON k.file_id = b.file_id AND k.rank = a.rank AND k.message = a.message
    WHERE (a.ts IS NULL AND k.ts IS NULL) OR abs(epoch(a.ts) - epoch(k.ts)) <= 2.0
)
SELECT p.event_id, p.of_event_id, g.ts        -- ts: the echo's logged time (readers skip by window)
FROM pairs p JOIN g USING (event_id) WHERE p.n = 1
ORDER BY g.ts, p.event_id;
