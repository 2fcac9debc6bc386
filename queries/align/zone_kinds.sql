-- name: zone_kinds
-- kind: align
-- params: $zoned_envelopes (the catalog's envelopes whose time names its zone: CRI's, kubectl --timestamps', ...)
-- reads: table event_classes
-- returns: per file and time kind, whether its times were written with their zone (`exact`: the line's own
--   time names it; `envelope`: the envelope that gave it does): what ranktrace.correlate.zones compares a file
--   written with none against (made a temp view, zone_kinds, that zone_files.sql and zone_pairs.sql read).
SELECT file, ts_kind,
       bool_or(ts_kind = 'exact'
               OR (ts_kind = 'envelope'
                   AND list_contains($zoned_envelopes, split_part(envelopes, '>', 1)))) AS zoned
FROM event_classes GROUP BY ALL
