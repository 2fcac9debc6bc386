"""Where the data directories (parsers/, queries/, sample_logs/) live.

In a source checkout they sit at the repository top; in an installed wheel
they are package data under ranktrace/_data (see pyproject.toml)."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the directory `name` (parsers, queries, sample_logs)."""
    installed = _PKG / "_data" / name
    if installed.is_dir():
        return installed
    checkout = _PKG.parent.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        f"ranktrace data directory {name!r} not found (looked in {installed} and {checkout}); "
        "reinstall the package"
    )
