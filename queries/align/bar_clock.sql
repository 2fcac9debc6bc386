-- name: bar_clock
-- kind: align
-- params: $files (the files whose lines are on more than one clock, as queries/align/interpolated_times.sql
--   takes them), and temp table interpolated_times (that query's: a line's inherited time told on its own
--   clock, where it came from another clock)
-- returns: (event_id, ts) for the progress bars that have no time of their own but print their
--   elapsed time (tqdm's `[12:34<56:07, ...]`, Lightning's and HF's bars): the time each was at the
--   latest, as far as the bar's lines tell, on the line's own clock; only where it is later than
--   the time the line inherited (the timed line before it, which may be minutes earlier); and, in a
--   file on one clock, the other untimed lines after such a bar line (an NCCL line, a traceback): no
--   earlier than the bar line before them.
-- Why: a bar's line has no clock, so it took the time of the timed line before it. A console whose
--   training shows only as bars then reads as if training stopped at its last timed line: a node
--   that froze while the job still trained looks like a rank that hung before training went on.
-- How: tqdm prints the time since the bar started, [H:]MM:SS (tqdm.std.format_interval: int(t),
--   truncated to the second), and restarts it with each bar (a new tqdm, `reset()`: Lightning's
--   epochs). A line is written no earlier than the timed line before it in the file (its inherited
--   time T) and no later than a timed line after it (U: the next one in the file, or a later bar's T):
--   so its bar started in (T - elapsed - 1, U - elapsed]. The start is the latest lower bound of all
--   the bar's lines; each line is then at start + its elapsed, which is never later than the truth
--   (every lower bound is below the true start). Bars whose bounds cross (output that a pipe held
--   back, two bars read as one) tell nothing and keep their inherited times.
--   A bar is one stream's (the line's rank / task / local rank as written), one description's
--   ('Epoch 3', 'Validation DataLoader 0'), up to where its elapsed time or its step goes back.
--   The bar's shape read here is parsers/formats/training_progress.toml's tqdm pattern (its desc and elapsed
--   groups, which the store does not keep): keep them equal.
WITH cand AS MATERIALIZED (
    SELECT e.event_id, e.file_id, e.line, coalesce(it.ts, e.ts) AS ts, e.step,
           concat_ws('/', e.rank, e.task, e.local_rank) AS stream,
           regexp_extract(e.message, '^\s*(?:([^|]*?):? +)?\d+%\|[^|]*\| *\d+/\d+ \[(?:(\d+):)?(\d+):(\d\d)<',
                          ['descr', 'h', 'm', 's']) AS el
    FROM (   -- (has_mark reads the line's own event_id and raw: asked before the join, which has two event_ids)
        SELECT * FROM events
        WHERE ts_kind = 'interpolated' AND kind = 'progress' AND ts IS NOT NULL
          -- (the mark first: a filter on an integer column the lines' scan takes in, so that only the text of
          -- the lines that hold a '|' is decoded; the class terms above are a join the scan cannot take in)
          AND has_mark(marks, 'bar') AND (message LIKE '%|%')
    ) e LEFT JOIN interpolated_times it ON it.event_id = e.event_id
), bars AS (
    SELECT event_id, file_id, line, ts, step, stream, coalesce(el.descr, '') AS descr,
           coalesce(TRY_CAST(nullif(el.h, '') AS BIGINT), 0) * 3600 + CAST(el.m AS BIGINT) * 60
               + CAST(el.s AS BIGINT) AS elapsed
    FROM cand WHERE el.m <> ''
), runs AS (   -- each inherited time's lines, and the time of a timed line after them (an upper bound)
    SELECT r.file_id, r.ts, least(CASE WHEN r.next_ts > r.ts THEN r.next_ts END,
                                  CASE WHEN t.ts > r.ts THEN t.ts END) AS up
    FROM (SELECT file_id, ts, max(line) AS last_line,
                 lead(ts) OVER (PARTITION BY file_id ORDER BY min(line)) AS next_ts   -- a later bar's
          FROM bars GROUP BY file_id, ts) r
    ASOF LEFT JOIN (   -- the next timed line of the file (on its own clock: a console of several clocks
        -- may bound too early, and its bar then keeps its inherited times, as before)
        SELECT file_id, line, ts FROM events
        WHERE file_id IN (SELECT DISTINCT file_id FROM bars) AND ts IS NOT NULL
          AND ts_kind NOT IN ('interpolated', 'collector', 'none')
    ) t ON t.file_id = r.file_id AND t.line > r.last_line
), marked AS (
    SELECT b.*, r.up,
           CASE WHEN b.elapsed < lag(b.elapsed) OVER w OR b.step < lag(b.step) OVER w THEN 1 ELSE 0 END AS restart
    FROM bars b JOIN runs r USING (file_id, ts)
    WINDOW w AS (PARTITION BY b.file_id, b.stream, b.descr ORDER BY b.line)
), numbered AS (
    SELECT *, sum(restart) OVER (PARTITION BY file_id, stream, descr ORDER BY line) AS bar FROM marked
), starts AS (
    SELECT file_id, stream, descr, bar,
           max(epoch_us(ts) - (elapsed + 1) * 1000000) AS lo,
           min(epoch_us(up) - elapsed * 1000000) AS hi
    FROM numbered GROUP BY ALL
), placed AS MATERIALIZED (
    SELECT n.event_id, n.file_id, n.line, n.ts AS inherited, make_timestamp(s.lo + n.elapsed * 1000000) AS ts
    FROM numbered n JOIN starts s USING (file_id, stream, descr, bar)
    WHERE s.hi IS NULL OR s.lo <= s.hi
), followers AS (   -- the other untimed lines of a file on one clock, after a placed bar
    SELECT e.event_id, e.file_id, e.line, e.ts FROM events e
    WHERE e.file_id IN (SELECT file_id FROM placed) AND e.ts_kind = 'interpolated'
      AND e.file NOT IN (SELECT unnest($files)) AND e.event_id NOT IN (SELECT event_id FROM placed)
)
SELECT event_id, ts FROM placed WHERE ts > inherited
UNION ALL
SELECT f.event_id, p.ts FROM followers f ASOF JOIN placed p ON p.file_id = f.file_id AND f.line > p.line
WHERE p.ts > f.ts
