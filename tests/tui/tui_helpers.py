"""Helpers for the TUI tests (imported by name: tests/ has no packages)."""

from __future__ import annotations

import asyncio
import functools
import os
from pathlib import Path


def run_async(fn):
    """Run an async test without an asyncio pytest plugin."""
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        return asyncio.run(fn(*a, **kw))
    return wrapper


async def settle(app, pilot, timeout: float = 20.0) -> None:
    """Wait until the app has its verdict, no list sync is pending and no
    worker runs (cancelled exclusive workers are fine)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    quiet = 0
    while loop.time() < end:
        await pilot.pause(0.02)
        quiet = quiet + 1 if not app.busy else 0
        if quiet >= 3:
            break
    await pilot.pause()


def screen_text(app) -> str:
    """What the terminal shows now, as plain text (one line per row)."""
    upd = app.screen._compositor.render_full_update(simplify=True)
    return "\n".join("".join(seg.text for strip in line for seg in strip) for line in upd.strips)


def verdict_with_evidence(verdict: dict, db: str) -> dict:
    """The verdict, plus (when it lists none) one hypothesis from the verdict
    itself and one evidence line pointing at the store's first timed error, so
    the evidence view has something to show and to jump to."""
    from ranktrace.tui.data import StoreData
    v = dict(verdict)
    vd = v.get("verdict") or {}
    if not v.get("hypotheses"):
        v["hypotheses"] = [{"kind": vd.get("kind"), "rank": vd.get("rank"), "host": vd.get("host"),
                            "score": vd.get("confidence", 1.0), "why": vd.get("summary", "")}]
    if not v.get("evidence"):
        s = StoreData(db)
        try:
            f, line, t, raw = s._cur().execute(
                "SELECT file, line, strftime(ts, '%Y-%m-%dT%H:%M:%S.%gZ'), raw FROM events "
                "WHERE severity IN ('error','critical') AND ts IS NOT NULL ORDER BY ts, file, line LIMIT 1"
            ).fetchone()
        finally:
            s.close()
        v["evidence"] = [{"file": f.rsplit("/", 1)[-1], "line": line, "time": t, "role": "symptom",
                          "text": raw.splitlines()[-1]}]
    return v


def ingest_relative(paths: list[str], db) -> str:
    """Ingest with paths relative to the first one's parent, so the store (and the snapshots that
    show file names) do not depend on where the checkout is."""
    from ranktrace.formats import load_catalog
    from ranktrace.ingest.pipeline import ingest
    parent = Path(paths[0]).parent
    rel = [str(Path(p).relative_to(parent)) for p in paths]
    old = os.getcwd()
    os.chdir(parent)
    try:
        ingest(rel, str(db), load_catalog([], check_samples=False))
    finally:
        os.chdir(old)
    return str(db)
