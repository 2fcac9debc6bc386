-- name: tables
-- kind: schema
-- params: none
-- returns: creates the core tables of a ranktrace store (idempotent).
-- All times are UTC, stored as TIMESTAMP (no zone) so that what you see does
-- not depend on the time zone of the machine that runs the query.

CREATE TABLE IF NOT EXISTS meta (
    key   VARCHAR PRIMARY KEY,
    value VARCHAR
);

-- One row per input file (a file on disk, or a member of an archive).
CREATE TABLE IF NOT EXISTS files (
    file_id     BIGINT PRIMARY KEY,  -- stable: derived from sha256 and path
    path        VARCHAR NOT NULL,    -- as given; archive members as archive!member
    source      VARCHAR,             -- absolute path it was read from (archive!member)
    format      VARCHAR,             -- the format that claimed most lines
    envelope    VARCHAR,             -- envelopes peeled (file-scoped first)
    compression VARCHAR,
    bytes       BIGINT,              -- bytes as found (compressed size if compressed)
    lines_read  BIGINT,
    events      BIGINT,
    unparsed    BIGINT,              -- non-blank lines no format claimed (kept as format 'raw')
    errors      VARCHAR[],           -- problems met reading this file
    sha256      VARCHAR NOT NULL,    -- of the bytes as found; (sha256, path) is unique
    host        VARCHAR,             -- hints from the path
    rank        INTEGER,
    local_rank  INTEGER,
    pod         VARCHAR,
    ingested_at TIMESTAMP,
    UNIQUE (sha256, path)
);

-- One row per event: a line, or a multi-line block (traceback, summary).
-- Read it through the view `events` (below): it is stored in three tables
-- because DuckDB pays ~120 ns for every VARCHAR value it appends, and 17 of
-- an event's columns take a few dozen distinct values in a whole bundle
-- (the file, host, format, kind, ...). They are kept once, in event_sources
-- and event_classes, under a 64-bit hash of their values; an event row
-- carries the two keys (inserting 1 M events: 3.0 s -> 1.4 s). The keys are
-- internal: join through `events`, not on them. For the same reason a
-- message that is the end of its raw line is kept as where it starts.
CREATE TABLE IF NOT EXISTS event_rows (
    -- No PRIMARY KEY: its index doubles the cost of every insert, and the id
    -- is unique by construction (file_id is unique in files, line in a file).
    event_id    BIGINT NOT NULL,     -- file_id << 32 | line: stable across stores
    file_id     BIGINT NOT NULL,
    line        BIGINT NOT NULL,
    end_line    BIGINT NOT NULL,
    byte_offset BIGINT,
    ts          TIMESTAMP,
    ts_text     VARCHAR,
    rank        INTEGER,
    local_rank  INTEGER,
    task        INTEGER,
    pid         BIGINT,
    tid         BIGINT,
    message     VARCHAR,             -- NULL when it is the end of raw: see message_at
    message_at  INTEGER,             -- the message is raw from this character on (1-based)
    raw         VARCHAR NOT NULL,
    source_id   UBIGINT NOT NULL,    -- -> event_sources
    class_id    UBIGINT NOT NULL     -- -> event_classes
);

-- Where an event comes from: its file and the identity its envelopes gave.
CREATE TABLE IF NOT EXISTS event_sources (
    source_id   UBIGINT PRIMARY KEY,
    file        VARCHAR NOT NULL,
    envelopes   VARCHAR,
    host        VARCHAR,
    job_id      VARCHAR,
    step_id     VARCHAR,
    pod         VARCHAR,
    namespace   VARCHAR,
    container   VARCHAR,
    gpu         VARCHAR
);

-- What an event is: its format, pattern and classification.
CREATE TABLE IF NOT EXISTS event_classes (
    class_id    UBIGINT PRIMARY KEY,
    ts_kind     VARCHAR NOT NULL,
    format      VARCHAR NOT NULL,
    pattern     VARCHAR,
    program     VARCHAR,
    level       VARCHAR,
    severity    VARCHAR NOT NULL,
    kind        VARCHAR,
    role        VARCHAR NOT NULL
);

-- The events, one row per event. LEFT JOINs: an event row is never lost to
-- a missing key, and the primary keys keep a key from matching twice.
CREATE OR REPLACE VIEW events AS
SELECT
    r.event_id,
    r.file_id,
    s.file,                          -- the file as given; archive members as archive!member
    r.line,                          -- 1-based first line
    r.end_line,                      -- last line (= line for one-line events)
    r.byte_offset,
    r.ts,                            -- UTC
    c.ts_kind,                       -- exact|local|year_inferred|envelope|interpolated|none
    r.ts_text,                       -- the time as written in the log
    c.format,                        -- 'raw' when no format claimed the line
    c.pattern,                       -- format.pattern (or format.block)
    s.envelopes,                     -- peeled envelopes, outermost first, '>'-joined
    s.host,
    r.rank,
    r.local_rank,
    r.task,                          -- the srun task (srun --label N:); under torchrun a node's agent
    r.pid,
    r.tid,
    s.job_id,
    s.step_id,
    s.pod,
    s.namespace,
    s.container,
    s.gpu,
    c.program,                       -- slurmd, kubelet, kernel, torchrun, nccl, ...
    c.level,                         -- the level as written (W, WARN, error, ...)
    c.severity,                      -- debug|info|notice|warning|error|critical
    c.kind,                          -- event kind from parsers/kinds.toml
    c.role,                          -- cause|symptom|lifecycle|info
    coalesce(r.message, substr(r.raw, r.message_at)) AS message,
    r.raw                            -- the original line or block
FROM event_rows r
LEFT JOIN event_sources s ON s.source_id = r.source_id
LEFT JOIN event_classes c ON c.class_id = r.class_id;
