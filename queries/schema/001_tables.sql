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

-- One row per event (a line, or a multi-line block: traceback, summary) is
-- view `events` (002_views.sql): what is each line's own is in event_rows,
-- what many lines of a file share (format, pattern, identity text, level,
-- classification) is stored once in event_classes. Read `events`; its
-- columns are documented here.
CREATE TABLE IF NOT EXISTS event_classes (
    class_id    BIGINT NOT NULL,     -- file_id << 32 | k: the k-th class of the file, first seen first
    file_id     BIGINT NOT NULL,
    file        VARCHAR NOT NULL,
    ts_kind     VARCHAR NOT NULL,    -- exact|local|year_inferred|envelope|interpolated|none
    format      VARCHAR NOT NULL,    -- 'raw' when no format claimed the line
    pattern     VARCHAR,             -- format.pattern (or format.block)
    envelopes   VARCHAR,             -- peeled envelopes, outermost first, '>'-joined
    host        VARCHAR,
    job_id      VARCHAR,
    step_id     VARCHAR,
    pod         VARCHAR,
    namespace   VARCHAR,
    container   VARCHAR,
    gpu         VARCHAR,
    program     VARCHAR,             -- slurmd, kubelet, kernel, torchrun, nccl, ...
    level       VARCHAR,             -- the level as written (W, WARN, error, ...)
    severity    VARCHAR NOT NULL,    -- debug|info|notice|warning|error|critical
    kind        VARCHAR,             -- event kind from parsers/kinds.toml
    role        VARCHAR NOT NULL     -- cause|symptom|lifecycle|info
);

-- A line's own columns. Its message is not stored again: it is a span of
-- raw, substr(raw, message_at, message_len), which view event_rows
-- (002_views.sql) gives back as column `message` (a store of schema 4 keeps
-- its lines' messages as text, in `message`). Storing the message's text cost
-- a third of DuckDB's insert; readers cut it only on the lines their marks
-- let through (has_mark, ranktrace/marks.py), which costs them nothing measurable.
CREATE TABLE IF NOT EXISTS event_lines (
    -- No PRIMARY KEY: its index doubles the cost of every insert, and the id
    -- is unique by construction (file_id is unique in files, line in a file).
    event_id    BIGINT NOT NULL,     -- file_id << 32 | line: stable across stores
    file_id     BIGINT NOT NULL,
    line        BIGINT NOT NULL,     -- 1-based first line
    end_line    BIGINT NOT NULL,     -- last line (= line for one-line events)
    byte_offset BIGINT,
    ts          TIMESTAMP,           -- UTC
    ts_text     VARCHAR,             -- the time as written in the log (kept when implausible: ts_kind interpolated)
    rank        INTEGER,
    local_rank  INTEGER,
    task        INTEGER,             -- the srun task (srun --label N:); under torchrun a node's agent
    pid         BIGINT,
    tid         BIGINT,
    message_at  INTEGER,             -- where the message starts in raw (1-based, characters)
    message_len INTEGER,             -- its length in characters
    message     VARCHAR,             -- NULL but in lines of schema 4 stores (their message's text)
    raw         VARCHAR NOT NULL,    -- the original line or block
    marks       INTEGER,             -- prefilter bits (parsers/marks.toml): which text tests the line may pass; NULL: unknown (may pass all)
    class_id    BIGINT NOT NULL      -- its row of event_classes
);
