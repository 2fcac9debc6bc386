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
WITH c AS (   -- what the per-line tests need of a line's class
    SELECT class_id,
           kind IS NULL OR kind = 'progress' AS step_kind,
           kind = 'progress' OR (kind IS NULL AND severity IN ('info', 'debug', 'notice')) AS progress_kind,
           kind IS NULL AS no_kind
    FROM event_classes
), m AS (
    SELECT r.*, c.progress_kind, c.no_kind,
           -- (the text tests on the lines the engine marked only: parsers/marks.toml)
           CASE WHEN c.step_kind AND has_mark(r.marks, 'summary') AND (r.message ILIKE '%tep%' OR r.message ILIKE '%iter%')
                THEN true END AS maybe_step
    FROM event_rows_keyed r JOIN c USING (class_id)
), e AS (
    SELECT class_id, rank, local_rank, pid, task, srun_lbl, srun_rank, attempt, ts, line, event_id,
           ts >= TIMESTAMP '1990-01-01' AND ts < TIMESTAMP '2100-01-01' AS sane,
           -- The step regexps need `tep` or `iter` (in any case: no letter of them has another
           -- case-folding than its ASCII pair): an exact prefilter, cheap on millions of lines.
           -- (CASE keeps the order: cheap tests first. An extract that finds nothing gives ''
           -- and TRY_CAST NULL: the same as testing the regexp first.)
           CASE WHEN maybe_step AND progress_kind
                THEN TRY_CAST(regexp_extract(message, '(?i)\b(?:global[_ ])?(?:step|iter|iteration)\s*[=:#]?\s*\[?(\d+)', 1) AS BIGINT)
           END AS step,
           CASE WHEN maybe_step AND no_kind
                THEN regexp_matches(message, '(?i)\b(?:step|iter|iteration)\s*[=:#]?\s*\d+') END AS says_step,
           -- allocation.sql's lines (raw says one of its words) whose message says `nranks N`
           CASE WHEN has_mark(marks, 'summary') AND (message LIKE '%nranks %')
                     AND (raw LIKE '%nranks %' OR raw LIKE '%gres/gpu%' OR raw LIKE '%nvidia.com/gpu%' OR raw LIKE '%world_size%'
                          OR raw LIKE '%WORLD_SIZE%' OR raw LIKE '%PET_NNODES%' OR raw LIKE '%NumNodes=%'
                          OR raw LIKE '%#SBATCH%' OR raw LIKE '%TresPerNode=%' OR raw LIKE '%local_ranks=[%')
                THEN TRY_CAST(regexp_extract(message, '\bnranks (\d+)', 1) AS INTEGER) END AS nr,
           CASE WHEN has_mark(marks, 'summary') AND (message LIKE '%failed (exitcode:%' OR message LIKE '%closing signal SIGTERM%')
                THEN true ELSE false END AS teardown,
           -- (time, line) in one number, to find a group's first and last line with one min / max
           -- (a sane time is after 1970: the packed number orders as the pair does)
           CAST(epoch_us(ts) AS HUGEINT) * 4294967296 + line AS tl
    FROM m
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
