"""Helpers for the report / export tests (fixtures in conftest.py): REAL stores, built by ingesting
real logs (the sample incidents of sample_logs/ and, when present,
../shared/real_log_shapes). Nothing is copied into the repository.

Paths are ingested relative to the bundle's parent directory, so the store
(and the report) say `demo_sigkill_4node/node1.log`, not a temp path: the
golden files do not depend on where the tests run.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest

from rt_testlib import SAMPLE_NOT_LOGS as NOT_LOGS

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_LOGS = Path(os.environ.get("RANKTRACE_SAMPLE_LOGS", ROOT / "sample_logs"))
SHAPES = Path(os.environ.get("RANKTRACE_SHAPES", ROOT.parent / "shared" / "real_log_shapes"))
GOLDEN = Path(__file__).with_name("golden")


def sample_bundles() -> list[Path]:
    if not SAMPLE_LOGS.is_dir():
        return []
    return sorted(p for p in SAMPLE_LOGS.iterdir()
                  if p.is_dir() and not p.name.startswith((".", "_"))
                  and any(f.is_file() and f.name not in NOT_LOGS for f in p.rglob("*")))


@contextmanager
def chdir(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def open_ro(db: Path):
    from ranktrace.store import open_readonly
    return open_readonly(db)


def verdict_of(con, bundle: Path | None = None) -> dict:
    """The real diagnosis when ranktrace.correlate exists; else the bundle's
    expected_verdict.json (ground truth in the contract); else skip."""
    from ranktrace.report.verdict import get_verdict, have_diagnose
    if have_diagnose():
        return get_verdict(con)
    if bundle is not None and (bundle / "expected_verdict.json").exists():
        return json.loads((bundle / "expected_verdict.json").read_text())
    pytest.skip("no ranktrace.correlate.diagnose yet and no expected_verdict.json")


def copy_bundle(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(*NOT_LOGS))
    return dst


URLISH = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|<script\b[^>]*\bsrc|@import|url\(\s*["']?\s*(?:https?:)?//|"""
                    r"""<link\b|<iframe\b|<object\b|<embed\b""", re.I)


def assert_self_contained(html: str) -> None:
    assert html.lstrip().startswith("<!DOCTYPE html>")
    m = URLISH.search(html)
    assert m is None, f"external reference: {html[max(0, m.start() - 80):m.end() + 80]!r}"
    assert "<script" not in html.lower()  # no script at all, inline or not
    assert "<svg" in html and "</svg>" in html
