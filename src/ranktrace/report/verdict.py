"""Where the report gets its verdict: `ranktrace.correlate.diagnose`.

The report never decides who failed; it presents what diagnose decided
(design.md section 4, verdict JSON). This module is the one place that
imports the correlate package, so the report and the exports can be built
and tested against the contract with a verdict dict made by hand.
"""

from __future__ import annotations

import importlib


class VerdictUnavailable(RuntimeError):
    """The correlate package (diagnose) is not installed or not importable."""


def _diagnose_fn():
    try:
        mod = importlib.import_module("ranktrace.correlate")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("ranktrace.correlate"):
            raise VerdictUnavailable(
                "ranktrace.correlate is not available in this installation; the report needs "
                "diagnose() for its verdict") from exc
        raise
    fn = getattr(mod, "diagnose", None)
    if fn is None:
        raise VerdictUnavailable("ranktrace.correlate has no diagnose() yet")
    return fn


def have_diagnose() -> bool:
    try:
        _diagnose_fn()
        return True
    except VerdictUnavailable:
        return False


def get_verdict(con, offsets: dict[str, float] | None = None) -> dict:
    """The verdict document for the store behind `con` (read-only is fine)."""
    fn = _diagnose_fn()
    v = fn(con, offsets=offsets or None)
    if not isinstance(v, dict) or "verdict" not in v:
        raise RuntimeError("diagnose() returned something that is not a verdict document")
    return v


def parse_offsets(items: list[str] | None) -> dict[str, float]:
    """`--offset HOST=SECONDS` (repeatable) -> {host: seconds}."""
    out: dict[str, float] = {}
    for it in items or []:
        host, sep, val = it.partition("=")
        if not sep or not host:
            raise ValueError(f"--offset {it!r}: expected HOST=SECONDS (e.g. node2=+37.5)")
        try:
            out[host] = float(val)
        except ValueError:
            raise ValueError(f"--offset {it!r}: {val!r} is not a number of seconds") from None
    return out
