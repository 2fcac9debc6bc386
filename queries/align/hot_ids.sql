-- name: hot_ids
-- kind: align
-- params: none (reads view event_lines and table event_classes)
-- returns: the lines (every column of event_lines) hot_events.sql's filter may pass: the same terms,
--   wider and without view event_rows' message (its class-level terms as a list of classes; its text
--   tests as the mark 'hot' alone; its two tests without a literal on raw, the gang rows' message cut
--   out of raw only for lines with a '/' whose message starts with a character hot_events.sql's own
--   ascii() test admits). ranktrace.correlate.clock makes temp table hot_lines of them, then
--   hot_events.sql's filter runs on those lines only, through view events over them (in one pass over
--   events_keyed every line's message was cut out of its raw text before the filter: 4.3 CPU-s on a
--   long run's 15 M lines; 1.5 + 1.3 in two; and a second pass that took the lines by their ids read
--   every line again: 1.75 CPU-s on the 1 GB corpus). A term added to hot_events.sql needs its wider
--   form here (tests/correlate/test_hot_events.py holds the two filters together on real stores).
--   Every line the terms below pass is marked by the engine (parsers/marks.toml: `hot` by its literals,
--   `taken` by its class and its two line tests, the Root Cause entry and the pods row, exactly these
--   terms'): the marks, a filter on one integer column taken into the Parquet scan, come first, and
--   the terms read the text of the marked lines only (every line's raw was decoded for them: 2.2 of
--   the 11 CPU-s of the 1 GB corpus' end of ingest). A store whose marks are not this version's has
--   has_mark() true: every line is read, as before.
SELECT * FROM event_lines
WHERE (has_mark(marks, 'hot') OR has_mark(marks, 'taken'))
  AND (class_id IN (SELECT class_id FROM event_classes
                   WHERE role IN ('cause', 'symptom')
                      OR kind IN ('worker_failed', 'failure_summary', 'sigterm_sent', 'signal_received', 'task_exit',
                                  'step_cancelled', 'hang_report', 'rdzv_join', 'rdzv_complete', 'rdzv_timeout',
                                  'store_unreachable', 'node_failure')
                      OR kind IN ('worker_start', 'group_restart', 'job_requeue', 'step_start', 'job_state')
                      OR kind IN ('worker_group_done', 'step_end', 'training_done')
                      OR starts_with(kind, 'etcd_') OR starts_with(kind, 'apiserver_')
                      OR format = 'slurm_topology')
   OR has_mark(marks, 'hot')
   OR (ascii(raw) IN (116, 104, 114, 101, 32, 9, 10, 12, 13) AND NOT contains(raw, chr(10))
       AND regexp_matches(raw, '^\s*(time|host|rank|exitcode)\s*:'))
   -- (the message's first character before the regexp: 8 M of the corpus' 10.5 M lines hold a '/', their
   -- messages mostly start with an upper-case letter or a quote, which hot_events.sql's ascii() test refuses)
   OR (contains(raw, '/') AND ascii(substr(raw, message_at, 1)) IN (48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99,
                                                                  100, 101, 102, 103, 104, 105, 106, 107, 108, 109,
                                                                  110, 111, 112, 113, 114, 115, 116, 117, 118, 119,
                                                                  120, 121, 122)
       AND regexp_matches(substr(raw, message_at, message_len), '^[a-z0-9][a-z0-9.-]*\s+\d+/\d+\s+\S+\s+\d+')))
