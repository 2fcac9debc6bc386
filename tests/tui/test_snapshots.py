"""SVG snapshots of the main screens (pytest-textual-snapshot).

They live in tests/tui/__snapshots__/; when a change alters a screen on
purpose, review the diff report and refresh them with
`pytest tests/tui --snapshot-update`. They are drawn from the incident picked
in conftest.py, so a new sample bundle or a parser change alters them too.
"""

from __future__ import annotations

import pytest

from tui_helpers import settle, verdict_with_evidence

pytestmark = pytest.mark.tui


async def _ready(pilot):
    await settle(pilot.app, pilot)


def _then(*keys):
    async def run(pilot):
        await settle(pilot.app, pilot)
        for k in keys:
            await pilot.press(k)
            await settle(pilot.app, pilot)
    return run


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
def test_snapshot_main(snap_compare, make_app, size):
    assert snap_compare(make_app(), terminal_size=size, run_before=_ready)


def test_snapshot_no_diagnosis(snap_compare, make_app):
    assert snap_compare(make_app(None), terminal_size=(120, 30), run_before=_ready)


def test_snapshot_help(snap_compare, make_app):
    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=_then("question_mark"))


def test_snapshot_evidence(snap_compare, make_app, incident):
    app = make_app(verdict_with_evidence(incident.verdict, incident.db))
    assert snap_compare(app, terminal_size=(200, 60), run_before=_then("2"))


def test_snapshot_sql(snap_compare, make_app):
    async def run(pilot):
        await settle(pilot.app, pilot)
        await pilot.press("3")
        await settle(pilot.app, pilot)
        pilot.app.query_one("#sql").show_timing = False
        pilot.app.query_one("#sql-text").cursor_blink = False
        pilot.app.query_one("#sql").run_text(
            "SELECT severity, role, count(*) AS n FROM events GROUP BY ALL ORDER BY n DESC, severity, role")
        await settle(pilot.app, pilot)
    assert snap_compare(make_app(), terminal_size=(120, 40), run_before=run)


def test_snapshot_light_theme_filtered(snap_compare, make_app):
    assert snap_compare(make_app(), terminal_size=(120, 40), run_before=_then("t", "s", "s"))
