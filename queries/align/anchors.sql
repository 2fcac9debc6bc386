-- name: anchors
-- kind: align
-- params: none (reads temp view events_id_a: events_id of the lines of anchor_lines.sql, made by
--   ranktrace.correlate.clock)
-- returns: host, akey, t (epoch seconds, as logged), unc_s (how far apart the same anchor may
--   truly be on two hosts), class. Events that must be (nearly) simultaneous on every host:
--   step N of a synchronous loop (progress), the start of collective SeqNum N of a watchdog
--   timeout (logged time minus "ran for"), a rendezvous completion (keyed by the round's master address and port). A run that restarts does
--   steps, sequence numbers and rendezvous again: a host gives one row per time it wrote the key
--   (more than 30 s after the one before), and ranktrace.correlate.clock pairs each with the
--   occurrence of the other host that most keys agree on (one attempt's step meets the same one,
--   whichever attempts each host took part in). A Slurm step's launch (slurmd's 'launch task') and its
--   cancel (slurmstepd's '*** STEP .. ON node CANCELLED AT') reach every node of the step at once,
--   from srun's fan-out: each node logs them on its own clock (class slurm_step, keyed by the step id;
--   a requeued job runs the same step id again, and the clock pairs the times most alike).
WITH timed AS (
    SELECT * FROM events_id_a
    WHERE ts IS NOT NULL AND host IS NOT NULL
      AND ts_kind IN ('exact', 'local', 'year_inferred', 'envelope')
),
progress AS (   -- the step of a progress line (decided by the engine as it parsed: column step), of
    -- the steps the clock reads (anchor_steps: all of them, or an even sample of a long run's)
    SELECT host, rank, step AS n, epoch(ts) AS t
    FROM timed
    WHERE step IN (SELECT step FROM anchor_steps)
),
progress_occ AS (   -- the k-th time a rank reached step n: a run that resumed from a checkpoint
    -- does steps again, and step n of one attempt must not meet step n of another (prints of one
    -- step less than GAP seconds apart are one time: a rank may print a step twice)
    SELECT host, rank, n, t,
           sum(CASE WHEN prev IS NULL OR t - prev > 30 THEN 1 ELSE 0 END)
               OVER (PARTITION BY host, rank, n ORDER BY t ROWS UNBOUNDED PRECEDING) AS occ
    FROM (SELECT host, rank, n, t, lag(t) OVER (PARTITION BY host, rank, n ORDER BY t) AS prev
          FROM progress WHERE n IS NOT NULL)
),
progress_first AS (   -- the first line of each time a rank reached a step
    SELECT host, rank, n, occ, min(t) AS t FROM progress_occ GROUP BY ALL
),
seq0 AS (
    SELECT host,
           TRY_CAST(regexp_extract(message, 'SeqNum=(\d+)', 1) AS BIGINT) AS n,
           epoch(ts) - TRY_CAST(regexp_extract(message, 'ran for (\d+) milliseconds', 1) AS DOUBLE) / 1000.0 AS t
    FROM timed
    WHERE has_mark(marks, 'hot') AND (message LIKE '%SeqNum=%' AND message LIKE '%ran for %milliseconds%')
),
seq AS (   -- sequence numbers start again in every attempt's process groups: the k-th time, as for steps
    SELECT host, n, t,
           sum(CASE WHEN prev IS NULL OR t - prev > 30 THEN 1 ELSE 0 END)
               OVER (PARTITION BY host, n ORDER BY t ROWS UNBOUNDED PRECEDING) AS occ
    FROM (SELECT host, n, t, lag(t) OVER (PARTITION BY host, n ORDER BY t) AS prev
          FROM seq0 WHERE n IS NOT NULL AND t IS NOT NULL)
),
rdzv AS (   -- a round of an elastic rendezvous: its result block names the round's master (every agent
    -- of the round reads the same address and port, each round a new port: real torchrun 2.13 runs);
    -- without it, one key for every round
    SELECT host, epoch(ts) AS t,
           'rdzv' || coalesce(':' || nullif(regexp_extract(raw, 'master_addr=(\S+)', 1), '') || ':'
                              || nullif(regexp_extract(raw, 'master_port=(\d+)', 1), ''), '') AS akey
    FROM timed WHERE kind = 'rdzv_complete'
),
slurm_step AS (   -- the first line of each time a node logged a step's launch or cancel (a node logs
    -- its launch once; a requeue launches the same step id again, minutes later)
    SELECT host, akey, min(t) AS t FROM (
        SELECT host, akey, t,
               sum(CASE WHEN prev IS NULL OR t - prev > 30 THEN 1 ELSE 0 END)
                   OVER (PARTITION BY host, akey ORDER BY t ROWS UNBOUNDED PRECEDING) AS occ
        FROM (SELECT host, akey, t, lag(t) OVER (PARTITION BY host, akey ORDER BY t) AS prev
              FROM (SELECT host, epoch(ts) AS t,
                           CASE WHEN kind = 'step_start'
                                THEN 'slurm_launch:' || regexp_extract(message, 'launch task (?:StepId=)?(\d+\.\S+) request', 1)
                                ELSE 'slurm_cancel:' || regexp_extract(message, '\*\*\* STEP (\d+\.\S+) ON \S+ CANCELLED AT', 1)
                           END AS akey
                    FROM timed WHERE kind IN ('step_start', 'step_cancelled'))
              WHERE akey NOT IN ('slurm_launch:', 'slurm_cancel:')))
    GROUP BY host, akey, occ
)
SELECT host, 'step:' || n AS akey, median(t) AS t, 0.05 AS unc_s, 'progress' AS class
FROM progress_first GROUP BY host, n, occ
UNION ALL
SELECT host, 'seq:' || n, median(t), 1.0, 'collective' FROM seq GROUP BY host, n, occ
UNION ALL
SELECT host, akey, t, 2.0, 'rendezvous' FROM rdzv
UNION ALL
SELECT host, akey, t, 1.0, 'slurm_step' FROM slurm_step
