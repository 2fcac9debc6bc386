-- name: host_activity
-- kind: detector
-- scope: all
-- params: none (reads temp view aligned_groups: the lines of every host, in groups, queries/align/event_groups.sql)
-- returns: per host: last aligned time of any line, of any job line (rank known or a launcher
--   line), counts of cause/symptom/lifecycle lines, whether the host's launcher wrote a teardown
--   (worker_failed / failure_summary / sigterm_sent / task_exit), and the time of its last cause or
--   symptom line (a kernel stall report aside). A host whose every line stops while the others go
--   on, with no teardown of its own, is a half-dead node; untimed_progress_after: one of its files
--   goes on past its last timed line with progress lines of no time of their own (a console's
--   Lightning / tqdm bars): it trained on after last_ats, for how long the logs do not say;
--   untimed_tails: (file_id, line) of each of its files whose last line of its own carries no time and comes
--   after its last timed line there (a console's untimed lines: it wrote until some time after last_ats).
WITH per_file AS (
    SELECT host, file_id,
           max(last_line) FILTER (WHERE ts_ok) AS timed_line,
           -- a group of lines with no time at all has no last line (it is found by time): its first stands in
           max(coalesce(last_line, min_line)) FILTER (WHERE NOT ts_ok AND (max_step IS NOT NULL OR kind = 'progress'))
               AS untimed_step_line,
           -- (lines with an inherited time: a group with none at all has no last line, and no time to bound)
           max(last_line) FILTER (WHERE NOT ts_ok) AS untimed_line
    FROM aligned_groups WHERE host IS NOT NULL
    GROUP BY host, file_id
), went_on AS (
    SELECT host, bool_or(untimed_step_line > coalesce(timed_line, 0)) AS untimed_progress_after,
           list({'file_id': file_id, 'line': untimed_line} ORDER BY file_id)
               FILTER (WHERE untimed_line > coalesce(timed_line, 0)) AS untimed_tails
    FROM per_file GROUP BY host
)
SELECT host,
       min(first_ats) FILTER (WHERE ts_ok) AS first_ats,
       max(last_ats) FILTER (WHERE ts_ok) AS last_ats,
       CAST(coalesce(sum(n) FILTER (WHERE role = 'cause'), 0) AS BIGINT) AS n_cause,
       CAST(coalesce(sum(n) FILTER (WHERE role = 'symptom'), 0) AS BIGINT) AS n_symptom,
       -- its last complaint or cause line, a kernel stall report left out (a frozen node's own last word)
       max(last_ats) FILTER (WHERE ts_ok AND role IN ('cause', 'symptom') AND kind NOT IN ('kernel_hung_task', 'kernel_lockup'))
           AS last_fail_ats,
       CAST(sum(CASE WHEN kind IN ('worker_failed', 'failure_summary', 'sigterm_sent', 'task_exit', 'signal_received')
                     THEN n ELSE n_teardown_text END) AS BIGINT) AS n_teardown,
       count(DISTINCT rank) AS n_ranks,
       CAST(sum(n) AS BIGINT) AS n,
       coalesce(any_value(w.untimed_progress_after), false) AS untimed_progress_after,
       any_value(w.untimed_tails) AS untimed_tails
FROM aligned_groups LEFT JOIN went_on w USING (host) WHERE host IS NOT NULL
GROUP BY host ORDER BY host
