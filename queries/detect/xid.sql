-- name: xid
-- kind: detector
-- params: none (reads temp view aligned_events)
-- returns: NVIDIA Xid reports (not those whose time was implausible), one row per line: ats, host, pci (bus id as written), xid (code),
--   pid (of the process the driver names, when given: 'pid=0' is the driver's own context, no pid), file, line, message. Join
--   queries/data/xid_catalog.csv (xid,name,meaning,action) for what it means and what to do.
SELECT event_id, ats, host,
       regexp_extract(message, 'Xid \(PCI:([0-9A-Fa-f:.]+)\)', 1) AS pci,
       TRY_CAST(regexp_extract(message, 'Xid \(PCI:[0-9A-Fa-f:.]+\): (\d+)', 1) AS INTEGER) AS xid,
       TRY_CAST(nullif(regexp_extract(message, 'pid=0*([1-9]\d*)', 1), '') AS BIGINT) AS pid,
       file, line, message
FROM aligned_events
WHERE message LIKE '%Xid (PCI:%'
  -- A year 0001/9999 (ats NULL), or a time ingest ignored as implausible (the line then
  -- inherits the line before's; its ts_text says what was written), would put the fault
  -- anywhere in the cascade (issue 15: a bogus Xid line became a 0.89 hypothesis).
  AND (ats IS NOT NULL OR ts IS NULL) AND NOT (ts_kind = 'interpolated' AND ts_text IS NOT NULL)
ORDER BY ats NULLS LAST, file, line
