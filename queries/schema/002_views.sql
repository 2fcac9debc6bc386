-- name: views
-- kind: schema
-- params: none
-- returns: convenience views over the core tables (recreated on open).

-- The kind catalogue of parsers/kinds.toml, loaded into table `kinds` at
-- ingest; this view joins it for readers.
CREATE OR REPLACE VIEW events_classified AS
SELECT e.*, k.failure AS failure_kind
FROM events e LEFT JOIN kinds k ON k.kind = e.kind;
