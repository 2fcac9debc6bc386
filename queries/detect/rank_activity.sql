-- name: rank_activity
-- kind: detector
-- scope: all
-- params: none (reads temp view aligned_groups: the lines of every rank, in groups, queries/align/event_groups.sql)
-- returns: per rank (host, rank): first and last aligned time of any line, of progress, the last
--   progress step (a line of kind progress, or of no kind at info level, that says `step N` /
--   `iter N`), the count of own cause / symptom lines and the time of the last, whether the rank (or its launcher)
--   wrote a terminal report. Absence is evidence: a rank that stops early and says nothing
--   while its peers complain about a lost peer is the likely culprit.
SELECT host, rank,
       min(first_ats) FILTER (WHERE ts_ok) AS first_ats,
       max(last_ats) FILTER (WHERE ts_ok) AS last_ats,
       max(step_ats) FILTER (WHERE ts_ok) AS last_progress_ats,
       max(max_step) AS last_step,
       -- the same line in two files (srun's and torchrun's logs): the first file by name, whatever
       -- the order the files went in (a group is one file: its last line is the one at its last time)
       last(last_event_id ORDER BY last_ats, file DESC, last_line) FILTER (WHERE ts_ok AND last_ats IS NOT NULL)
           AS last_event_id,
       CAST(coalesce(sum(n) FILTER (WHERE role = 'cause'), 0) AS BIGINT) AS n_cause,
       CAST(coalesce(sum(n) FILTER (WHERE role = 'symptom'), 0) AS BIGINT) AS n_symptom,
       max(last_ats) FILTER (WHERE ts_ok AND role IN ('cause', 'symptom')) AS last_fail_ats,
       CAST(sum(n) AS BIGINT) AS n
FROM aligned_groups WHERE rank IS NOT NULL
GROUP BY host, rank
ORDER BY rank, host
