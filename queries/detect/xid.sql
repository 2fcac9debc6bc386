-- name: xid
-- kind: detector
-- params: none (reads temp view aligned_events)
-- returns: NVIDIA Xid reports, one row per line: ats, host, pci (bus id as written), xid (code),
--   pid (of the process the driver names, when given), file, line, message. Join
--   queries/data/xid_catalog.csv (xid,name,meaning,action) for what it means and what to do.
SELECT event_id, ats, host,
       regexp_extract(message, 'Xid \(PCI:([0-9A-Fa-f:.]+)\)', 1) AS pci,
       TRY_CAST(regexp_extract(message, 'Xid \(PCI:[0-9A-Fa-f:.]+\): (\d+)', 1) AS INTEGER) AS xid,
       TRY_CAST(nullif(regexp_extract(message, 'pid=(\d+)', 1), '') AS BIGINT) AS pid,
       file, line, message
FROM aligned_events
WHERE message LIKE '%Xid (PCI:%'
ORDER BY ats NULLS LAST, file, line
