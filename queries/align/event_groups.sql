-- name: event_groups
-- kind: align
-- params: none (reads temp view event_rows_keyed, made by ranktrace.correlate.identity: event_rows
--   with srun_lbl, whether a line came through an srun --label stream that carries torchrun agents,
--   and srun_rank, the rank of its inner `[rankN]:` prefix, both NULL when srun runs no agents)
-- returns: the store's events in groups that share every column the identity links and the
--   aligned clock read (host, rank, local_rank, pid, pod, container, gpu, job, step, file,
--   format, srun label) and role, kind, severity, ts_kind and whether the time is sane
--   (1990..2100), and the attempt of the run the lines belong to (event_rows_keyed.attempt: 1 until
--   ranktrace.correlate.attempts has found the attempts): a few thousand rows for millions of lines,
--   made in one pass. Identity and
--   clock are resolved per group (temp view aligned_groups, ranktrace.correlate.clock), so
--   the detectors that need every line (per rank / per host activity, progress spans, the
--   first and last line, who is in the job) read groups, not the whole store:
--   n (lines), ts / max_ts (first / last logged time), min_line, first_line (the first line at ts),
--   last_line / last_event_id (the line at max_ts: the highest line there), n_teardown_text
--   (lines that say a worker failed / SIGTERM was sent), max_step / step_ts (the highest
--   training step written and the last time a step was written: lines of kind progress or
--   of no kind at info level that say `step N` / `iter N`), start_ts (the first line of no
--   kind that says `step N` / `iter N`: a sign that the job assembled), nranks / nranks_at (the
--   largest NCCL communicator size written, `nranks N`, and the line and time of its first line).
--
-- In two steps, because what many lines share is stored once per class (event_classes): the
-- lines are first grouped by their class and their own identity (integers: no join, no text
-- to hash per line), then those partial groups, a few per class, by the columns of the key.
-- Every aggregate here combines from its parts (counts add, min of mins, arg_max by its key).
WITH e AS (
    -- The per-line text tests (a step written, `step N` said, `nranks N`, teardown) were decided by
    -- the engine as it parsed (columns of the lines: crates/engine/src/summary.rs): no text is read here.
    SELECT class_id, rank, local_rank, pid, task, srun_lbl, srun_rank, attempt, ts, line, event_id,
           ts >= TIMESTAMP '1990-01-01' AND ts < TIMESTAMP '2100-01-01' AS sane,
           step,          -- a progress line's step (kind progress, or no kind at info level)
           says_step,     -- a line of no kind says `step N` / `iter N`
           nranks AS nr,  -- `nranks N` (allocation.sql's lines that say it)
           teardown,
           -- (time, line) in one number, to find a group's first and last line with one min / max
           -- (a sane time is after 1970: the packed number orders as the pair does)
           CAST(epoch_us(ts) AS HUGEINT) * 4294967296 + line AS tl
    FROM event_rows_keyed
), p AS (     -- partial groups: a class and a line's own identity
    SELECT class_id, rank, local_rank, pid, task, srun_lbl, srun_rank, attempt, sane,
           count(*) AS n,
           min(ts) AS ts,
           max(ts) AS max_ts,
           min(line) AS min_line,
           min(tl) AS min_tl,
           max(tl) AS max_tl,
           arg_max(event_id, tl) AS last_event_id,
           count(*) FILTER (WHERE teardown) AS n_teardown_text,
           max(step) AS max_step,
           max(ts) FILTER (WHERE step IS NOT NULL) AS step_ts,
           min(ts) FILTER (WHERE says_step) AS start_ts,
           max(nr) AS nranks,
           -- the NCCL communicator size (`comm ... nranks N`, one line per communicator init: hundreds of
           -- thousands with NCCL_DEBUG=INFO): the largest, and the first line that says it
           max(CAST(nr AS HUGEINT) * 4294967296 - line) AS nranks_key,
           arg_max(struct_pack(l := line, t := ts), CAST(nr AS HUGEINT) * 4294967296 - line) FILTER (WHERE nr IS NOT NULL)
               AS nranks_at
    FROM e
    GROUP BY ALL
)
SELECT k.host, p.rank, p.local_rank, p.pid, k.pod, k.container, k.gpu, k.job_id, k.step_id, k.file_id, k.file,
       k.format, p.task, p.srun_lbl, p.srun_rank, p.attempt,
       k.role, k.kind, k.severity, k.ts_kind, p.sane,
       CAST(sum(p.n) AS BIGINT) AS n,
       min(p.ts) AS ts,
       max(p.max_ts) AS max_ts,
       min(p.min_line) AS min_line,
       CAST(min(p.min_tl) % 4294967296 AS BIGINT) AS first_line,
       CAST(max(p.max_tl) % 4294967296 AS BIGINT) AS last_line,
       arg_max(p.last_event_id, p.max_tl) AS last_event_id,
       CAST(sum(p.n_teardown_text) AS BIGINT) AS n_teardown_text,
       max(p.max_step) AS max_step,
       max(p.step_ts) AS step_ts,
       min(p.start_ts) AS start_ts,
       max(p.nranks) AS nranks,
       arg_max(p.nranks_at, p.nranks_key) FILTER (WHERE p.nranks_at IS NOT NULL) AS nranks_at
FROM p JOIN event_classes k USING (class_id)
GROUP BY ALL
