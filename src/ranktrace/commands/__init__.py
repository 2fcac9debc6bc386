"""CLI commands beyond ingest/sql/formats; each module has register(sub, db_arg, formats_arg)."""
