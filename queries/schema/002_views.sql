-- name: views
-- kind: schema
-- params: none
-- returns: convenience views over the core tables (recreated on open).

-- A line's own columns, its message cut out of raw (001_tables.sql).
CREATE OR REPLACE VIEW event_rows AS
SELECT event_id, file_id, line, end_line, byte_offset, ts, ts_text, rank, local_rank, task, pid, tid,
       substr(raw, message_at, message_len) AS message, raw, marks, step, says_step, nranks, teardown,
       progress_lo, progress_hi, class_id, ts_logged
FROM event_lines;

-- Every event with all its columns, in this order (001_tables.sql says what
-- each is): a line's own columns joined to its class.
CREATE OR REPLACE VIEW events AS
SELECT r.event_id, r.file_id, c.file, r.line, r.end_line, r.byte_offset, r.ts, c.ts_kind, r.ts_text,
       c.format, c.pattern, c.envelopes, c.host, r.rank, r.local_rank, r.task, r.pid, r.tid,
       c.job_id, c.step_id, c.pod, c.namespace, c.container, c.gpu, c.program,
       c.level, c.severity, c.kind, c.role, r.message, r.raw, r.marks,
       r.step, r.says_step, r.nranks, r.teardown, r.ts_logged
FROM event_rows r JOIN event_classes c USING (class_id);

-- The kind catalogue of parsers/kinds.toml, loaded into table `kinds` at
-- ingest; this view joins it for readers.
CREATE OR REPLACE VIEW events_classified AS
SELECT e.*, k.failure AS failure_kind
FROM events e LEFT JOIN kinds k ON k.kind = e.kind;
