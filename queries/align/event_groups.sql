-- name: event_groups
-- kind: align
-- params: none (reads temp view events_keyed, made by ranktrace.correlate.identity: events with
--   srun_lbl, whether a line came through an srun --label stream that carries torchrun agents,
--   srun_rank, the rank of its inner `[rankN]:` prefix, both NULL when srun runs no agents, and task)
-- returns: the store's events in groups that share every column the identity links and the
--   aligned clock read (host, rank, local_rank, pid, pod, container, gpu, job, step, file,
--   format, srun label) and role, kind, severity, ts_kind and whether the time is sane
--   (1990..2100): a few thousand rows for millions of lines, made in one pass. Identity and
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
WITH m AS (
    SELECT *, CASE WHEN kind IS NULL OR kind = 'progress' THEN message ILIKE '%tep%' OR message ILIKE '%iter%' END
                  AS maybe_step
    FROM events_keyed
), e AS (
    SELECT *,
           -- The step regexps need `tep` or `iter` (in any case: no letter of them has another
           -- case-folding than its ASCII pair): an exact prefilter, cheap on millions of lines.
           -- (CASE keeps the order: cheap tests first. An extract that finds nothing gives ''
           -- and TRY_CAST NULL: the same as testing the regexp first.)
           CASE WHEN maybe_step AND (kind = 'progress' OR (kind IS NULL AND severity IN ('info', 'debug', 'notice')))
                THEN TRY_CAST(regexp_extract(message, '(?i)\b(?:global[_ ])?(?:step|iter|iteration)\s*[=:#]?\s*\[?(\d+)', 1) AS BIGINT)
           END AS step,
           CASE WHEN maybe_step AND kind IS NULL
                THEN regexp_matches(message, '(?i)\b(?:step|iter|iteration)\s*[=:#]?\s*\d+') END AS says_step,
           -- allocation.sql's lines (raw says one of its words) whose message says `nranks N`
           CASE WHEN message LIKE '%nranks %'
                     AND (raw LIKE '%nranks %' OR raw LIKE '%gres/gpu%' OR raw LIKE '%nvidia.com/gpu%' OR raw LIKE '%world_size%'
                          OR raw LIKE '%WORLD_SIZE%' OR raw LIKE '%PET_NNODES%' OR raw LIKE '%NumNodes=%'
                          OR raw LIKE '%#SBATCH%' OR raw LIKE '%TresPerNode=%' OR raw LIKE '%local_ranks=[%')
                THEN TRY_CAST(regexp_extract(message, '\bnranks (\d+)', 1) AS INTEGER) END AS nr,
           -- (time, line) in one number, to find a group's first and last line with one min / max
           -- (a sane time is after 1970: the packed number orders as the pair does)
           CAST(epoch_us(ts) AS HUGEINT) * 4294967296 + line AS tl
    FROM m
)
SELECT host, rank, local_rank, pid, pod, container, gpu, job_id, step_id, file_id, file, format,
       task, srun_lbl, srun_rank,
       role, kind, severity, ts_kind,
       ts >= TIMESTAMP '1990-01-01' AND ts < TIMESTAMP '2100-01-01' AS sane,
       count(*) AS n,
       min(ts) AS ts,
       max(ts) AS max_ts,
       min(line) AS min_line,
       CAST(min(tl) % 4294967296 AS BIGINT) AS first_line,
       CAST(max(tl) % 4294967296 AS BIGINT) AS last_line,
       arg_max(event_id, tl) AS last_event_id,
       count(*) FILTER (WHERE message LIKE '%failed (exitcode:%' OR message LIKE '%closing signal SIGTERM%')
           AS n_teardown_text,
       max(step) AS max_step,
       max(ts) FILTER (WHERE step IS NOT NULL) AS step_ts,
       min(ts) FILTER (WHERE says_step) AS start_ts,
       -- the NCCL communicator size (`comm ... nranks N`, one line per communicator init: hundreds of
       -- thousands with NCCL_DEBUG=INFO): the largest, and the first line that says it
       max(nr) AS nranks,
       arg_max(struct_pack(l := line, t := ts), CAST(nr AS HUGEINT) * 4294967296 - line) FILTER (WHERE nr IS NOT NULL)
           AS nranks_at
FROM e
GROUP BY ALL
