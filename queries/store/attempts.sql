-- name: attempts
-- kind: store
-- params: none
-- returns: tables `attempts` (one row per attempt of the run: attempt, start, "end", outcome
--   failed|completed|cancelled|running as its lines show it, basis = how its start was recognised,
--   file and line of that start's first sign, first_progress, last_progress, max_step) and
--   `attempt_spans` (host, attempt, start, stop: the aligned times each attempt begins and ends on
--   that host, the last one open (stop 9999-12-31); host '' for lines without one). Filled after every ingest by
--   ranktrace.correlate.attempts (a run that restarted from a checkpoint, was requeued or
--   relaunched is a sequence of attempts); view events_aligned gives every line its `attempt`.
--   `diagnose` finds them again (with its --offset pins) and gives each failed attempt a verdict.
CREATE TABLE IF NOT EXISTS attempts (
    attempt        INTEGER,
    start          TIMESTAMP,
    "end"          TIMESTAMP,
    outcome        VARCHAR,
    basis          VARCHAR,
    file           VARCHAR,
    line           BIGINT,
    first_progress TIMESTAMP,
    last_progress  TIMESTAMP,
    max_step       BIGINT
);
CREATE TABLE IF NOT EXISTS attempt_spans (
    host    VARCHAR,
    attempt INTEGER,
    start   TIMESTAMP,
    stop    TIMESTAMP
);
