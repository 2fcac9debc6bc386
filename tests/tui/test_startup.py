"""What `ranktrace tui` has imported when its first screen is drawn.

The first screen is timed from the command (benchmarks/measure.py
first_screen): whatever is imported before it is drawn is paid on every
start. The analysis side (the correlator, the report, polars, pyarrow, the
compiled engine, the format catalog) and the SQL console's TextArea are not
needed to draw it; the diagnosis imports its modules after the first paint."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.tui

NOT_BEFORE_FIRST_SCREEN = ("polars", "pyarrow", "numpy", "pandas", "ranktrace._core", "ranktrace.correlate",
                           "ranktrace.report", "ranktrace.formats", "ranktrace.ingest", "ranktrace.samples",
                           "ranktrace.tui.widgets.sql", "textual.widgets._text_area")

_PROBE = r"""
import asyncio, json, re, sys
from ranktrace import cli
cli._register_extras(cli._named_command(["tui"]))   # what `ranktrace tui` registers
cli.build_parser()
from ranktrace.commands.tui import cmd_tui          # noqa: F401  (and its imports)
from ranktrace.store import StoreError              # noqa: F401
from ranktrace.tui import app as tui_app
from ranktrace.tui.app import RanktraceApp
# the diagnosis starts after the first paint, or after this fallback when a paint never comes: on
# a machine busy enough the fallback came first and the test measured it, not the first screen
tui_app.FIRST_PAINT_WAIT_S = 170

seen = {}

class Probe(RanktraceApp):
    async def _painted(self):
        # the first screen is drawn; the diagnosis has not started (it waits for this)
        if "mods" not in seen:
            seen["mods"] = sorted(sys.modules)
            upd = self.screen._compositor.render_full_update(simplify=True)
            seen["screen"] = "\n".join("".join(s.text for strip in ln for s in strip) for ln in upd.strips)
        await super()._painted()

async def main():
    app = Probe(sys.argv[1])   # the real diagnosis (ranktrace.correlate), started after the first paint
    async with app.run_test(size=(160, 45)) as pilot:
        for _ in range(3000):   # until the first screen, then until the diagnosis is in
            await pilot.pause(0.02)
            if "mods" in seen and not app.busy:
                break

asyncio.run(main())
print(json.dumps(seen))
"""


def test_first_screen_imports_only_what_it_draws(incident):
    r = subprocess.run([sys.executable, "-c", _PROBE, incident.db], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert "mods" in seen, "the first screen was never drawn"
    # it is the real first screen: lanes from the store and a page of events
    assert re.search(r"^[▾▸▶ ] \S[^\n]*?[│┃]", seen["screen"], re.M), seen["screen"]
    assert re.search(r"^ \d\d:\d\d:\d\d\.\d{3}  ", seen["screen"], re.M), seen["screen"]
    bad = [m for m in seen["mods"] if any(m == p or m.startswith(p + ".") for p in NOT_BEFORE_FIRST_SCREEN)]
    assert not bad, f"imported before the first screen: {bad}"
