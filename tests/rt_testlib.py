"""Helpers shared by the test suites (a unique module name: several
conftest.py files exist under tests/, so `from conftest import` is ambiguous)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHAPES = Path(os.environ.get("RANKTRACE_SHAPES", REPO.parent / "shared" / "real_log_shapes"))


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path
