-- name: xid
-- kind: detector
-- params: none (reads temp view aligned_events)
-- returns: NVIDIA Xid reports (not those whose time was implausible), one row per GPU (host, pci:
--   the bus id as written), in the order of its first report: that report's event_id, ats, xid
--   (code) and pid (of the process the driver names, when given); first_n, its place among all
--   the reports (1: the first Xid of the bundle); xids, every code the GPU reported. One row per
--   GPU, not per line: a store with millions of Xid lines gives the detector a few hundred rows.
--   Join queries/data/xid_catalog.csv (xid,name,meaning,action) for what a code means and what to do.
WITH x AS (   -- every report, numbered in the bundle's order
    SELECT *, row_number() OVER (ORDER BY ats NULLS LAST, file, line) AS n
    FROM (
        SELECT event_id, ats, host, file, line,
               regexp_extract(message, 'Xid \(PCI:([0-9A-Fa-f:.]+)\)', 1) AS pci,
               TRY_CAST(regexp_extract(message, 'Xid \(PCI:[0-9A-Fa-f:.]+\): (\d+)', 1) AS INTEGER) AS xid,
               TRY_CAST(nullif(regexp_extract(message, 'pid=(\d+)', 1), '') AS BIGINT) AS pid
        FROM aligned_events
        WHERE message LIKE '%Xid (PCI:%'
          -- A year 0001/9999 (ats NULL), or a time ingest ignored as implausible (the line then
          -- inherits the line before's; its ts_text says what was written), would put the fault
          -- anywhere in the cascade (issue 15: a bogus Xid line became a 0.89 hypothesis).
          AND (ats IS NOT NULL OR ts IS NULL) AND NOT (ts_kind = 'interpolated' AND ts_text IS NOT NULL)
    ) WHERE xid IS NOT NULL
)
SELECT host, pci, arg_min(event_id, n) AS event_id, arg_min(ats, n) AS ats, arg_min(xid, n) AS xid,
       arg_min(pid, n) AS pid, min(n) AS first_n, list(DISTINCT xid ORDER BY xid) AS xids
FROM x
GROUP BY host, pci
ORDER BY first_n
