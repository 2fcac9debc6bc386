-- name: ray_actor_fields
-- kind: detector
-- scope: all
-- params: none (reads temp view aligned_events)
-- returns: the dead actors a driver's ActorDiedError names (python/ray/exceptions.py ActorDiedError: after 'The
--   actor died unexpectedly before finishing this task.' one '\t{field}: {value}' line per field: class_name,
--   actor_id, pid, name, namespace, ip (the actor's node)), one row per block: its pid and ip read from the
--   field lines' text (the lines' own identity is the writer's, a '(BackendExecutor pid=.., ip=..)' prefix's),
--   the ip line's file and line. The pid field is the block's nearest one above its ip field, at most 6 lines up.
--   Columns: file, line, pid, ip.
WITH f AS (
    SELECT file, line, pattern, message
    FROM aligned_events
    WHERE pattern IN ('ray.actor_field_pid', 'ray.actor_field_ip')
), ips AS (
    SELECT file, line, nullif(regexp_extract(message, 'ip: (\d{1,3}(?:\.\d{1,3}){3})\s*$', 1), '') AS ip
    FROM f WHERE pattern = 'ray.actor_field_ip'
)
SELECT i.file, i.line,
       (SELECT CAST(regexp_extract(p.message, 'pid: (\d+)\s*$', 1) AS BIGINT)
        FROM f p
        WHERE p.pattern = 'ray.actor_field_pid' AND p.file = i.file AND p.line < i.line AND p.line >= i.line - 6
        ORDER BY p.line DESC LIMIT 1) AS pid,
       i.ip
FROM ips i
WHERE i.ip IS NOT NULL
ORDER BY i.file, i.line
