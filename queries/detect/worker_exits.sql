-- name: worker_exits
-- kind: detector
-- params: none (reads temp view aligned_events; macro is_pod_hostname, correlate/identity.py define_macros)
-- returns: one row per worker exit stated by a launcher: torchrun agent lines
--   `failed (exitcode: N) local_rank: L (pid: P)` (source 'agent', host from the event, aligned
--   time) and Root Cause / Failures entries (source 'root_cause' / 'failures', 1 s resolution,
--   entry time as written, not aligned; the entry may be one block event or one event per
--   line); the DeepSpeed launcher's `{cmd} exits with return code = N` (source 'launcher';
--   deepspeed/launcher/launch.py sigkill_handler: it prints 'Killing subprocess {pid}' for every
--   subprocess, then the command of the LAST one it spawned, whichever failed: the line names no
--   local rank, and a pid only when one subprocess was killed, and then the command's --local_rank
--   is that process's own, 0: a higher one says the paste lost the other kills; a report cut before its return
--   code has code NULL); Ray's raylet on a worker it lost
--   (source 'ray'; src/ray/raylet/node_manager.cc: '... Worker IP address: {ip} Worker port: {port}
--   Worker PID: {pid} Worker exit type: {type} ...': the host is the worker's IP, the exit type is
--   in the text; or ActorDiedError's cause line with the pid and ip ray.toml carried to it); paddle's launcher
--   on the container it saw fail (source 'paddle': its local rank and exit code, no pid); vLLM's worker
--   monitor on a worker process it lost (source 'vllm': its pid and exit code, or its rank). Columns: event_id, source, ats,
--   host, rank, local_rank, pid, exitcode, signal (exit by signal N, else NULL), file, line, text.
WITH agent AS (
    SELECT event_id, 'agent' AS source, ats, host, CAST(NULL AS INTEGER) AS rank_ev, file, line, message AS text,  -- an agent line is no rank's own
           -- the raw text: a terminal may hard-wrap the line anywhere after the exit code (torch_elastic.failed_wrapped);
           -- a hard wrap only inserts a newline, so the text without it is the line as written
           regexp_extract(replace(raw, chr(10), ''), 'failed \(exitcode: (-?\d+)\)\s*local_rank: (\d+) \(pid: (\d+)\)',
                          ['exitcode', 'local_rank', 'pid']) AS m
    FROM aligned_events
    WHERE raw LIKE '%failed (exitcode:%'
), ds AS (
    SELECT event_id, file_id, file, line, ats, host, message,
           TRY_CAST(regexp_extract(message, 'exits with return code = (-?\d+)', 1) AS INTEGER) AS code,
           -- the previous report in the file: the kills before it are another launcher's (one console, several nodes)
           lag(line) OVER (PARTITION BY file_id ORDER BY line) AS prev_line
    FROM aligned_events
    WHERE kind = 'worker_failed' AND (message LIKE '%exits with return code = %'
                                      -- the handler's ERROR line cut before its return code (a paste): still a failure
                                      OR raw LIKE '%] [ERROR] [launch.py:%:sigkill_handler] [%')
), ds_kill AS (   -- the handler's 'Killing subprocess N' lines just before its report, also one glued to other
                   -- output (a stray print without its newline: no format claims it, and it is still a process killed)
    -- (host: where the killed subprocess ran, as its pid's links name it (identity's id_pid: NCCL's
    -- 'host:pid:tid' lines); a launcher's children run on its node, so its report, untagged in a console
    -- several nodes write, is the node all its kills name)
    SELECT file_id, line, host, TRY_CAST(regexp_extract(raw, 'Killing subprocess (\d+)', 1) AS BIGINT) AS kpid
    FROM aligned_events
    WHERE raw LIKE '%sigkill_handler] Killing subprocess %'
), launcher_kills AS (
    SELECT d.event_id, any_value(d.ats) AS ats,
           coalesce(any_value(d.host),
                    CASE WHEN count(DISTINCT lower(k.host)) = 1 AND count(k.host) = count(k.kpid)
                         THEN any_value(k.host) END) AS host,
           any_value(d.code) AS code,
           any_value(d.file) AS file, any_value(d.line) AS line, any_value(d.message) AS text,
           count(DISTINCT k.kpid) AS kills, any_value(k.kpid) AS kpid,
           TRY_CAST(nullif(regexp_extract(any_value(d.message), '--local_rank=(\d+)', 1), '') AS INTEGER) AS cmd_lrank
    FROM ds d LEFT JOIN ds_kill k ON k.file_id = d.file_id AND k.line < d.line AND k.line >= d.line - 64
                                  AND k.line > coalesce(d.prev_line, 0)
    GROUP BY d.event_id
), launcher AS (
    -- one subprocess killed: the command printed is that process's own (the spawn loop's last is its only), and
    -- then its --local_rank is 0 (launch.py numbers its processes from 0: 'for local_proc in range(0,
    -- num_local_procs)'); a command with --local_rank=K > 0 says K + 1 processes were spawned, so a report
    -- showing one kill is a paste cut above its other kills: neither that pid nor the command's rank is the failed one's
    SELECT event_id, ats, host, code, file, line, text,
           CASE WHEN kills = 1 AND coalesce(cmd_lrank, 0) = 0 THEN kpid END AS pid,
           CASE WHEN kills = 1 AND cmd_lrank = 0 THEN 0 END AS lrank
    FROM launcher_kills
), ray AS (
    SELECT event_id, ats, file, line, message AS text,
           regexp_extract(message, 'Worker IP address: (\S*) Worker port: \d+ Worker PID: (\d+)', ['ip', 'pid']) AS m
    FROM aligned_events
    WHERE kind IN ('worker_failed', 'host_oom') AND message LIKE '%Worker PID: %'
    UNION ALL   -- the same exit detail as ray.exceptions.ActorDiedError's cause line (python/ray/exceptions.py:
                -- '\tpid: {pid}', '\tip: {ip}' lines, then 'The actor is dead because its worker process has
                -- died. Worker exit type: {type} ...'): ray.toml carries the pid and ip to that line
    SELECT event_id, ats, file, line, message AS text,
           {'ip': coalesce(host, ''), 'pid': coalesce(CAST(pid AS VARCHAR), '')} AS m
    FROM aligned_events
    WHERE kind = 'worker_failed' AND message LIKE 'The actor is dead because its worker process has died.%'
), vllm AS (   -- vLLM's monitor of its worker processes on one it lost (the workers of one node: the line's host):
               -- v0 vllm/executor/multiproc_worker_utils.py WorkerMonitor 'Worker {name} pid {pid} died, exit code:
               -- {code}'; v1 vllm/v1/executor/multiproc_executor.py 'Worker proc {name} died unexpectedly, shutting
               -- down executor.', the process named f"VllmWorker-{rank}"; ray_executor_v2.py 'RayWorkerProc
               -- rank=[{ranks}] died unexpectedly' (one rank only: several name no culprit)
    SELECT event_id, ats, host, file, line, message AS text,
           TRY_CAST(nullif(coalesce(nullif(regexp_extract(message, '^Worker proc VllmWorker-(\d+) died unexpectedly', 1), ''),
                                    regexp_extract(message, '^RayWorkerProc rank=\[(\d+)\] died unexpectedly', 1)), '') AS INTEGER) AS rank,
           TRY_CAST(nullif(regexp_extract(message, '^Worker \S+ pid (\d+) died, exit code: ', 1), '') AS BIGINT) AS pid,
           TRY_CAST(nullif(regexp_extract(message, '^Worker \S+ pid \d+ died, exit code: (-?\d+)', 1), '') AS INTEGER) AS code
    FROM aligned_events
    WHERE kind = 'worker_failed' AND (message LIKE 'Worker % died%' OR message LIKE 'RayWorkerProc rank=[%] died unexpectedly%')
), paddle AS (   -- paddle.distributed.launch on the worker it saw fail (launch/controllers/controller.py watch():
                 -- logger.error('Container failed !!!\n{}'.format(fc[0])), job/container.py Container.__str__
                 -- 'Container rank {rank} status {status} cmd {entrypoint} code {exit_code} log {errfile}'; the rank
                 -- is the container's index in its pod (job/pod.py add_container: len(self._containers)), so a
                 -- local rank, as torchrun's local_rank; no pid)
    SELECT event_id, ats, host, file, line, message AS text,
           regexp_extract(message, 'Container rank (\d+) status failed cmd .* code (-?\d+) log ',
                          ['local_rank', 'exitcode']) AS m
    FROM aligned_events
    WHERE message LIKE '%Container rank % status failed cmd %'
), entries AS (
    -- between fields: white space, or (outside a pod's log) a line end and the next line's prefix: a launcher's that
    -- wrote every line of the summary, SkyPilot's '(worker1, rank=1, pid=P, ip=A) ', pdsh's 'host: '. In a pod's own
    -- log every line has the runtime's prefix (CRI '<time> stderr F '), and the summary's 'host' is the POD's hostname
    -- (see exits): its entries are read there only where white space alone parts the fields, as before
    SELECT event_id, file, line, raw, ats, host AS ev_host, pod AS ev_pod,
           CASE WHEN strpos(raw, 'Root Cause') > 0 THEN strpos(raw, 'Root Cause') ELSE 1000000000 END AS rc_pos,
           unnest(regexp_extract_all(raw, replace(
             '\[\d+\]:SEPtime\s*:\s*\S+SEPhost\s*:\s*\S+SEPrank\s*:\s*\d+\s*\(local_rank:\s*\d+\)SEPexitcode\s*:\s*-?\d+\s*\(pid:\s*\d+\)',
             'SEP', CASE WHEN pod IS NULL THEN '(?:\s+|[^\n]*\n[^\n]*?)' ELSE '\s+' END))) AS s
    FROM aligned_events
    WHERE raw LIKE '%exitcode%' AND raw LIKE '%local_rank%' AND raw LIKE '%host%' AND raw LIKE '%time%'
), lines AS (   -- the same entries when each line is its own event
    SELECT event_id, file_id, file, line, ats, host AS ev_host, pod AS ev_pod,
           CASE WHEN regexp_matches(raw, 'Root Cause \(first observed failure\)') THEN 'root_cause'
                WHEN regexp_matches(raw, '^\s*Failures:\s*$') THEN 'failures' END AS hdr,
           nullif(regexp_extract(raw, '^\s*time\s*:\s*(\S+)', 1), '') AS t,
           nullif(regexp_extract(raw, '^\s*host\s*:\s*(\S+)', 1), '') AS h,
           nullif(regexp_extract(raw, '^\s*rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)', 1), '') AS rk,
           nullif(regexp_extract(raw, '^\s*rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)', 2), '') AS lr,
           nullif(regexp_extract(raw, '^\s*exitcode\s*:\s*(-?\d+)\s*\(pid:\s*(\d+)\)', 1), '') AS code,
           nullif(regexp_extract(raw, '^\s*exitcode\s*:\s*(-?\d+)\s*\(pid:\s*(\d+)\)', 2), '') AS epid,
           raw
    FROM aligned_events
    WHERE NOT contains(raw, chr(10))   -- not strpos() = 0: it counts characters through every line (1 s vs 0.2 s on 3 M events)
      AND (raw LIKE '%Root Cause (first observed failure)%' OR regexp_matches(raw, '^\s*Failures:\s*$')
           OR regexp_matches(raw, '^\s*(time|host|rank|exitcode)\s*:'))
), w AS (
    SELECT *,
        last_value(hdr IGNORE NULLS) OVER win AS sec, last_value(t IGNORE NULLS) OVER win AS t2,
        last_value(h IGNORE NULLS) OVER win AS h2, last_value(rk IGNORE NULLS) OVER win AS rk2,
        last_value(lr IGNORE NULLS) OVER win AS lr2
    FROM lines
    WINDOW win AS (PARTITION BY file_id ORDER BY line ROWS BETWEEN 4 PRECEDING AND CURRENT ROW)
), w2 AS (
    SELECT *, last_value(hdr IGNORE NULLS) OVER (PARTITION BY file_id ORDER BY line
                                                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS section
    FROM w
), entries2 AS (
    SELECT event_id, file, line, s, ev_host, ev_pod,
           CASE WHEN strpos(raw, s) > rc_pos THEN 'root_cause' ELSE 'failures' END AS source,
           regexp_extract(s, 'time\s*:\s*(\S+)(?:\s+|[^\n]*\n[^\n]*?)host\s*:\s*(\S+)(?:\s+|[^\n]*\n[^\n]*?)rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)(?:\s+|[^\n]*\n[^\n]*?)exitcode\s*:\s*(-?\d+)\s*\(pid:\s*(\d+)\)',
                          ['time', 'host', 'rank', 'local_rank', 'exitcode', 'pid']) AS m
    FROM entries
), exits AS (
    SELECT event_id, source, ats, host, rank_ev AS rank, CAST(m.local_rank AS INTEGER) AS local_rank,
           CAST(m.pid AS BIGINT) AS pid, CAST(m.exitcode AS INTEGER) AS exitcode,
           file, line, text
    FROM agent WHERE m.pid <> ''
    UNION ALL
    SELECT event_id, 'paddle', ats, host, CAST(NULL AS INTEGER), CAST(m.local_rank AS INTEGER), CAST(NULL AS BIGINT),
           CAST(m.exitcode AS INTEGER),
           file, line, text
    FROM paddle WHERE m.local_rank <> ''
    UNION ALL
    SELECT event_id, 'launcher', ats, host, CAST(NULL AS INTEGER), lrank, pid, code,
           file, line, text
    FROM launcher
    UNION ALL
    SELECT event_id, 'ray', ats, nullif(m.ip, ''), CAST(NULL AS INTEGER), CAST(NULL AS INTEGER), CAST(m.pid AS BIGINT),
           CAST(NULL AS INTEGER), file, line, text
    FROM ray WHERE m.pid <> ''
    UNION ALL
    SELECT event_id, 'vllm', ats, host, rank, CAST(NULL AS INTEGER), pid, code,
           file, line, text
    FROM vllm WHERE rank IS NOT NULL OR pid IS NOT NULL
    UNION ALL
    -- the agent writes its own socket.getfqdn() (torch/distributed/elastic/multiprocessing/errors/__init__.py
    -- ChildFailedError._format_failure: 'hostname=socket.getfqdn()'): inside a pod that is the POD's hostname
    -- (macro is_pod_hostname, correlate/identity.py define_macros), not a node: a summary in a pod's own log names
    -- the node its pod ran on (the event's host, NULL when the bundle does not say), never a node of the pod's name
    -- beside it (a hostNetwork pod's hostname is its node's: kept)
    SELECT event_id, source, try_strptime(m.time, '%Y-%m-%d_%H:%M:%S') AS ats,
           CASE WHEN is_pod_hostname(m.host, ev_pod) THEN ev_host ELSE m.host END,
           CAST(m.rank AS INTEGER), CAST(m.local_rank AS INTEGER), CAST(m.pid AS BIGINT),
           CAST(m.exitcode AS INTEGER),
           file, line, s
    FROM entries2 WHERE m.pid <> ''
    UNION ALL
    SELECT event_id, coalesce(section, 'failures'), try_strptime(t2, '%Y-%m-%d_%H:%M:%S'),
           CASE WHEN is_pod_hostname(h2, ev_pod) THEN ev_host ELSE h2 END,   -- the pod's hostname, as above
           CAST(rk2 AS INTEGER), CAST(lr2 AS INTEGER), CAST(epid AS BIGINT), CAST(code AS INTEGER),
           file, line, raw
    FROM w2 WHERE code IS NOT NULL AND epid IS NOT NULL
)
-- a negative exit code is the signal that ended the process (as Python subprocess reports it); above 128, the shell form 128 + N
SELECT event_id, source, ats, host, rank, local_rank, pid, exitcode,
       CASE WHEN exitcode < 0 THEN -exitcode WHEN exitcode > 128 THEN exitcode - 128 END AS signal,
       file, line, text
FROM exits
ORDER BY ats NULLS LAST, file, line
