-- name: first_symptom
-- kind: detector
-- params: none (reads temp view aligned_events)
-- returns: per culprit (rank, else host+pid, else host, else pod): its first symptom line on the aligned
--   clock (watchdog timeout, peer closed, NCCL error chain, store error; a pod's container restarting in a
--   loop: kubectl's CrashLoopBackOff row or a not-ready row with repeated restarts, the kubelet's back-off), earliest
--   first. Weak: the first rank to complain is not the rank that failed, a crash loop says that a container
--   failed, not why; used only when nothing better exists.
WITH s AS (
    SELECT event_id, ats, ts_ok, host, rank, local_rank, pid, pod, gpu, kind, file, line, message,
           coalesce('rank:' || rank, 'host:' || host || '/pid:' || pid, 'host:' || host, 'pod:' || pod) AS culprit
    FROM aligned_events
    WHERE role = 'symptom' AND kind IN ('collective_timeout', 'watchdog_abort', 'peer_closed', 'nccl_error_chain',
                                        'store_error', 'comm_abort', 'crash_loop')
), f AS (   -- an aggregate, not a window: millions of symptom lines stay cheap
    SELECT culprit, arg_min(event_id, struct_pack(t := coalesce(ats, TIMESTAMP '9999-12-31'), f := file,
                                                  l := line)) AS event_id
    FROM s WHERE culprit IS NOT NULL GROUP BY culprit
)
SELECT s.event_id, ats, ts_ok, host, rank, local_rank, pid, pod, gpu, kind, file, line, message
FROM s JOIN f USING (event_id)
ORDER BY ats NULLS LAST, file, line
LIMIT 50
