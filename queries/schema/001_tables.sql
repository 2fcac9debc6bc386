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

-- A line's own columns are view `event_lines` (made by ranktrace.store over the Parquet files
-- of the store's parts, which the engine's parser threads wrote: storing a DuckDB row per line
-- was the largest cost of ingest). Its columns, in order:
--   event_id    BIGINT     file_id << 32 | line: stable across stores
--   file_id     BIGINT
--   line        BIGINT     1-based first line
--   end_line    BIGINT     last line (= line for one-line events)
--   byte_offset BIGINT
--   ts          TIMESTAMP  UTC (a year-less time in the year the store inferred)
--   ts_text     VARCHAR    the time as written in the log (kept when implausible: ts_kind interpolated)
--   rank, local_rank, task INTEGER (task: the srun task of `srun --label N:`); pid, tid BIGINT
--   message_at, message_len INTEGER  where the message is in raw (1-based, characters): view
--               event_rows cuts it, substr(raw, message_at, message_len)
--   raw         VARCHAR    the original line or block
--   marks       INTEGER    prefilter bits (parsers/marks.toml): which text tests the line may pass
--   year_placeholder BOOLEAN  its time had no year (or came from a line without one): ts is in
--               the year ranktrace inferred for the store
--   step        BIGINT     the training step a progress line writes (kind progress, or no kind at
--               debug/info/notice level: `step N`, `iter N`, `global_step=[N]`); NULL on other lines
--   says_step   BOOLEAN    true: a line of no kind says `step N` / `iter N`; else NULL
--   nranks      INTEGER    the NCCL communicator size a line says (`nranks N`)
--   teardown    BOOLEAN    the line says a worker failed (exitcode) or SIGTERM was sent to one
--               (these four are decided by the engine as it parses: crates/engine/src/summary.rs)
--   progress_lo, progress_hi BIGINT  the least and greatest training position the line's rows of
--               fact table progress give, coalesce(epoch, 0) * 1000000000 + step (rows with a step);
--               NULL on other lines (written by the engine with the facts: crates/engine/src/out.rs)
--   class_id    BIGINT     its row of event_classes
--   ts_logged   TIMESTAMP  the time as the line gave it: ts before the year was placed (a year-less
--               time is in the placeholder year 2000); readers filter a window on it too, which the
--               files' statistics answer (ranktrace.store.logged_window)
-- The files of the fact tables the parts keep (ranktrace.store.PART_FACTS: progress, about a row
-- per line): each such table is a view of its name over its files here, relative to the store's
-- directory, in order (the other fact tables are DuckDB tables).
CREATE TABLE IF NOT EXISTS fact_files (
    tbl         VARCHAR NOT NULL,     -- the fact table (view) it belongs to
    path        VARCHAR NOT NULL,     -- parts/<part>/<table>.parquet
    part        VARCHAR NOT NULL,     -- the part it came with
    "rows"      BIGINT NOT NULL,      -- its rows
    seq         BIGINT NOT NULL,      -- its place in the view
    PRIMARY KEY (tbl, path)
);
-- The lines files the view reads, relative to the store's directory, in order.
CREATE TABLE IF NOT EXISTS lines_files (
    path        VARCHAR PRIMARY KEY,  -- parts/<part>/event_lines-N.parquet
    part        VARCHAR NOT NULL,     -- the part it came with
    lines       BIGINT NOT NULL,      -- its rows
    seq         BIGINT NOT NULL       -- its place in the view
);
