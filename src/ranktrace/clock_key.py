"""The key of table clock_offsets a line takes its offset from: its host, or, for a file whose lines
name no host (a Slurm controller's log), '@' + its path. Light on purpose: the TUI reads it before its
first screen, without the correlator."""

from __future__ import annotations

FILE_CLOCK = "@"


def clock_key(alias: str | None = None) -> str:
    """SQL: the clock_offsets key of a line of table alias `alias` (None: unqualified columns)."""
    p = f"{alias}." if alias else ""
    return f"coalesce({p}host, '{FILE_CLOCK}' || {p}file)"
