"""The TUI driven with Pilot on a real incident store (see conftest.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tui_helpers import run_async, screen_text, settle, verdict_with_evidence

pytestmark = pytest.mark.tui
SIZES = [(80, 24), (200, 60)]


def _culprit(incident):
    v = incident.verdict["verdict"]
    return v.get("host"), v.get("rank")


# --------------------------------------------------------------------------- headless core

def test_core_never_imports_textual():
    code = ("import importlib, sys\n"
            "import ranktrace.cli, ranktrace.tui.data, ranktrace.tui.attempts, ranktrace.commands.tui\n"
            "try:\n    importlib.import_module('ranktrace.correlate')\n"
            "except ModuleNotFoundError as e:\n    assert e.name == 'ranktrace.correlate', e\n"
            "ranktrace.cli._register_extras()\n"
            "ranktrace.cli.build_parser()\n"
            "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_viewer_starts_without_polars():
    """The TUI reads through DuckDB only; importing polars would add ~0.2 s
    to every start (first paint is measured from the command)."""
    code = ("import sys\n"
            "import ranktrace.cli, ranktrace.commands.tui, ranktrace.tui.data, ranktrace.tui.app\n"
            "assert 'polars' not in sys.modules, 'polars imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cli_missing_store(tmp_path):
    r = subprocess.run([sys.executable, "-m", "ranktrace.cli", "tui", "--db", str(tmp_path / "nope.duckdb")],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "no such store" in r.stderr and "ranktrace ingest" in r.stderr


# --------------------------------------------------------------------------- data module

def test_data_module_pages_and_aggregates(incident):
    from ranktrace.tui.data import Filters, StoreData
    s = StoreData(incident.db, verdict_fn=lambda con: incident.verdict)
    try:
        s.load_verdict()
        assert s.culprit() == _culprit(incident)
        lanes = s.lanes()
        host, rank = _culprit(incident)
        assert any(ln.host == host and ln.rank == rank for ln in lanes)
        ext = s.extent()
        assert ext and ext[0] <= ext[1]
        b = s.buckets(ext[0], ext[1] + 1e-3, 50, lanes)
        assert sum(bk.count for lane in b.values() for bk in lane.values()) == s._cur().execute(
            "SELECT count(ts) FROM events WHERE event_id NOT IN (SELECT event_id FROM echoes)").fetchone()[0]
        page = s.events_page(None, Filters(), limit=3)
        assert len(page) == 3
        assert [r.time for r in page if r.time is not None] == sorted(r.time for r in page if r.time is not None)
        errs = s.events_page(None, Filters.parse("sev:error"), limit=50)
        assert errs and all(r.severity in ("error", "critical") for r in errs)
        ctx = s.context(page[1].event_id, 1)
        assert [me for _, _, me in ctx].count(True) == 1
        res = s.run_sql("SELECT * FROM events", limit=2)
        assert res.error is None and len(res.rows) == 2 and res.truncated and res.summary.startswith("2 of >2")
        bad = s.run_sql("SELECT nope FROM events")
        assert bad.error and "nope" in bad.error
        assert s.run_sql("CREATE TABLE x (a INT)").error   # read-only
    finally:
        s.close()


def test_summary_tables_agree_with_a_scan_of_events(incident):
    """The first screen reads `lanes` and `lane_buckets` (built at ingest)
    instead of scanning events: same failure times, same lane totals,
    severities and cause marks, cells off by at most one."""
    from ranktrace.tui.data import StoreData
    host, _ = _culprit(incident)
    v = dict(incident.verdict, clock=[{"host": host, "offset_s": 2.5, "uncertainty_s": 0.1}])
    fast = StoreData(incident.db, verdict_fn=lambda con: v)
    slow = StoreData(incident.db, verdict_fn=lambda con: v)
    try:
        for s in (fast, slow):
            s.load_verdict()
        assert fast.bucket_width is not None and fast.has_lane_failures
        slow.bucket_width, slow.has_lane_failures = None, False
        slow._lane_failures = None
        assert fast._failure_times() == pytest.approx(slow._failure_times(), abs=1e-3)
        assert fast.summary()["incident"] == pytest.approx(slow.summary()["incident"], abs=1e-3)
        lanes = fast.lanes()
        ext = fast.extent()
        n = int((ext[1] - ext[0]) / (4 * fast.bucket_width))
        assert n >= 5, "the incident must span enough slots of lane_buckets to compare"
        a, b = fast.buckets(ext[0], ext[1] + 1e-3, n, lanes), slow.buckets(ext[0], ext[1] + 1e-3, n, lanes)
        assert a.keys() == b.keys()
        for key in a:
            assert sum(x.count for x in a[key].values()) == sum(x.count for x in b[key].values()), key
            assert max(x.sev for x in a[key].values()) == max(x.sev for x in b[key].values()), key
            ca = sorted(i for i, x in a[key].items() if x.cause)
            cb = sorted(i for i, x in b[key].items() if x.cause)
            assert len(ca) <= len(cb) and all(min(abs(i - j) for j in cb) <= 1 for i in ca), key
            assert bool(ca) == bool(cb), key
    finally:
        fast.close()
        slow.close()


def test_data_module_degrades_without_diagnosis(incident):
    from ranktrace.tui.data import StoreData

    def broken(con):
        raise RuntimeError("detector exploded")
    s = StoreData(incident.db, verdict_fn=broken)
    assert s.load_verdict() is None and "detector exploded" in s.verdict_error
    assert s.culprit() == (None, None) and s.offsets == {}
    assert s.lanes()
    s.close()


def test_clock_offsets_shift_aligned_time(incident):
    from ranktrace.tui.data import StoreData
    host, _ = _culprit(incident)
    v = dict(incident.verdict, clock=[{"host": host, "offset_s": 37.0, "uncertainty_s": 0.1}])
    s = StoreData(incident.db, verdict_fn=lambda con: v)
    lanes0 = {ln.key: ln for ln in s.lanes()}
    s.load_verdict()
    assert s.offsets == {host: 37.0}
    for ln in s.lanes():
        a = lanes0[ln.key]
        if ln.first is not None:
            want = a.first - 37.0 if ln.host == host else a.first
            assert abs(ln.first - want) < 1e-3
    s.close()


# --------------------------------------------------------------------------- app

@pytest.mark.parametrize("size", SIZES)
@run_async
async def test_opens_on_verdict_with_culprit_lane_marked(make_app, incident, size):
    from ranktrace.tui.widgets.timeline import Timeline
    app = make_app()
    host, rank = _culprit(incident)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        text = screen_text(app)
        kind = incident.verdict["verdict"]["kind"].upper()
        assert kind in text
        assert f"rank {rank}" in text and host[:20] in text
        tl = app.query_one(Timeline)
        row = tl.lane_row(host, rank)
        assert row is not None and tl.rows[row].lane is not None
        assert tl.cursor_row == row                     # opens on the culprit lane
        line = tl.render_line(row - tl.top + 2).text   # the drawn lane
        assert line.startswith("▶ rank") and f"rank {rank}" in line   # the culprit marker
        assert tl._is_culprit(tl.rows[row].lane, host)
        # the culprit label is drawn in the culprit style (error colour background)
        seg = tl.render_line(row - tl.top + 2)._segments[0]
        assert seg.style.bgcolor == tl._pal["label_culprit"].bgcolor


@run_async
async def test_a_resize_after_the_jump_centres_the_culprit_lane_again(make_app, incident):
    """The first layout often lands after the jump to the culprit (and a user resizes the terminal):
    the culprit's lane is centred in the timeline's final height, not the one it had at the jump."""
    from ranktrace.tui.widgets.timeline import Timeline
    app = make_app()
    host, rank = _culprit(incident)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        tl = app.query_one(Timeline)
        for size in [(80, 40), (100, 30)]:
            await pilot.resize_terminal(*size)
            await settle(app, pilot)
            row = tl.lane_row(host, rank)
            assert tl.cursor_row == row
            centred = max(0, min(row - tl.body_height // 2, len(tl.rows) - tl.body_height))
            assert tl.top == centred, (size, tl.top, centred, tl.body_height)
        tl._scroll(1)                                   # the user scrolls: a resize keeps the view
        top = tl.top
        await pilot.resize_terminal(120, 30)              # wider, as high
        await settle(app, pilot)
        assert tl.top == top


@run_async
async def test_the_diagnosis_starts_after_the_first_screen_is_drawn(incident):
    """On a large store the diagnosis holds DuckDB's threads for seconds: it
    must not delay the first screen, so it starts once the timeline has its
    data and the list its first page."""
    from ranktrace.tui.app import RanktraceApp
    from ranktrace.tui.widgets.panes import EventList
    from ranktrace.tui.widgets.timeline import Timeline
    seen = {}

    def verdict(con):
        seen["timeline"] = app.query_one(Timeline).data_token is not None
        seen["list"] = bool(app.query_one(EventList).items)
        return incident.verdict
    app = RanktraceApp(incident.db, verdict_fn=verdict)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        assert app.phase == 2
    assert seen == {"timeline": True, "list": True}


@run_async
async def test_no_diagnosis_available(make_app):
    app = make_app(None)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert "no diagnosis available" in screen_text(app)


@run_async
async def test_real_diagnose_path_does_not_crash(incident):
    from ranktrace.tui.app import RanktraceApp
    app = RanktraceApp(incident.db)   # ranktrace.correlate.diagnose if it exists
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        text = screen_text(app)
        assert ("no diagnosis available" in text) or app.store.verdict is not None


@pytest.mark.parametrize("size", SIZES)
@run_async
async def test_zoom_pan_fit_keys(make_app, size):
    from ranktrace.tui.widgets.timeline import Timeline
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        tl = app.query_one(Timeline)
        tl.focus()
        await pilot.pause()
        span0 = tl.t1 - tl.t0
        fit = (tl.t0, tl.t1)
        await pilot.press("plus")
        assert abs((tl.t1 - tl.t0) - span0 / 2) < 1e-6
        assert tl.t0 <= tl.cursor_t < tl.t1                   # zoom keeps the cursor in view
        await pilot.press("minus", "minus")
        assert abs((tl.t1 - tl.t0) - span0 * 2) < 1e-6 or tl.t1 - tl.t0 > span0
        t0 = tl.t0
        await pilot.press("L")
        assert tl.t0 > t0                                     # pan right
        await pilot.press("H", "H")
        assert tl.t0 < t0
        await pilot.press("f")
        assert (tl.t0, tl.t1) == fit                          # fit-to-incident is the opening view
        await pilot.press("a")
        assert tl.t0 <= tl.extent[0] and tl.t1 >= tl.extent[1]
        await settle(app, pilot)


@run_async
async def test_mouse_click_scroll_and_zoom(make_app):
    """A click puts the cursor on the lane and time under the pointer; the
    wheel scrolls lanes, shift+wheel pans, ctrl+wheel zooms at the pointer;
    a double click on a host label folds it."""
    from textual import events
    from ranktrace.tui.widgets.timeline import AXIS_ROWS, Timeline
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(app, pilot)
        tl = app.query_one(Timeline)
        x, y = tl.label_w + 11, AXIS_ROWS + 2
        assert await pilot.click(Timeline, offset=(x, y))
        await pilot.pause()
        assert tl.cursor_row == tl.top + 2
        assert tl.col_of(tl.cursor_t) == x - tl.label_w - 1

        def wheel(kind, **mods):
            ev = kind(tl, x, y, 0, 0, 0, mods.get("shift", False), False, mods.get("ctrl", False))
            getattr(tl, "on_" + {events.MouseScrollUp: "mouse_scroll_up",
                                 events.MouseScrollDown: "mouse_scroll_down"}[kind])(ev)

        span = tl.t1 - tl.t0
        wheel(events.MouseScrollUp, ctrl=True)
        assert tl.t1 - tl.t0 == pytest.approx(span * 0.8)          # zoom in at the pointer
        assert tl.t0 <= tl.cursor_t < tl.t1
        t0 = tl.t0
        wheel(events.MouseScrollDown, shift=True)
        assert tl.t0 > t0                                          # pan right
        if len(tl.rows) > tl.body_height:
            top = tl.top
            wheel(events.MouseScrollDown)
            assert tl.top == min(top + 3, len(tl.rows) - tl.body_height)
        host_row = next(i for i, r in enumerate(tl.rows) if r.kind == "host")
        tl.top = 0
        tl.refresh()
        await pilot.pause()
        host = tl.rows[host_row].host
        assert await pilot.click(Timeline, offset=(2, AXIS_ROWS + host_row), times=2)
        await pilot.pause()
        assert host in tl.collapsed
        await settle(app, pilot)


@run_async
async def test_a_lane_that_stops_early_is_drawn_silent(make_app):
    """Silence is visible: after the last event of a lane whose peers go on
    logging, its row shows the silence marker instead of blank space."""
    from ranktrace.tui.widgets.timeline import Timeline
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(app, pilot)
        tl = app.query_one(Timeline)
        await pilot.press("a")                     # the whole extent: every lane's end is in view
        await settle(app, pilot)
        # In the real incident some node-level lanes (the agent's, torch's)
        # of the nodes that did not fail stop while the failing node goes on.
        quiet = next((ln for ln in tl.all_lanes if tl._silent(ln)), None)
        assert quiet is not None, "the incident has a lane that stops early"
        peers_last = max(ln.last for ln in tl.all_lanes if ln.last is not None and
                         (ln.rank is None) == (quiet.rank is None))
        assert peers_last - quiet.last > tl.silence_gap
        loud = [ln for ln in tl.all_lanes if ln.last == peers_last]
        assert loud and not any(tl._silent(ln) for ln in loud)
        idx = next(i for i, r in enumerate(tl.rows) if r.kind == "lane" and r.lane is quiet)
        text = "".join(seg.text for seg in tl._row_line(idx, tl.size.width))
        after = text[tl.label_w + 1 + tl.col_of(quiet.last) + 1:]
        assert after.strip() and set(after.strip()) <= {"·", "│"}, after
        await settle(app, pilot)


@run_async
async def test_jump_keys(make_app, incident):
    from ranktrace.tui.widgets.timeline import Timeline
    app = make_app()
    host, rank = _culprit(incident)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(app, pilot)
        tl = app.query_one(Timeline)
        tl.focus()
        await pilot.pause()
        await pilot.press("a", "j", "j")
        await pilot.press("g")                                # first failure, on the culprit lane
        await settle(app, pilot)
        assert tl.cursor_t == pytest.approx(tl.first_failure, abs=1e-3)
        assert tl.current_row().lane.rank == rank
        # next / previous error land on error-or-cause events, in time order
        await pilot.press("home")
        before = tl.cursor_t
        await pilot.press("n")
        await settle(app, pilot)
        hit = app.store.next_error(before + tl.dt, 1)
        if hit is not None:
            assert tl.cursor_t == pytest.approx(hit[0], abs=1e-3)
            assert tl.cursor_t > before
            after = tl.cursor_t
            await pilot.press("p")
            await settle(app, pilot)
            assert tl.cursor_t < after
        # next lane with errors
        tl._set_row(0)
        await pilot.press("e")
        r = tl.current_row()
        lanes = r.lanes if r.kind == "host" else (r.lane,)
        assert any(ln.errors or ln.causes for ln in lanes)


@run_async
async def test_fold_host(make_app, incident):
    from ranktrace.tui.widgets.timeline import Timeline
    app = make_app()
    host, rank = _culprit(incident)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        tl = app.query_one(Timeline)
        tl.focus()
        await pilot.pause()
        n = len(tl.rows)
        await pilot.press("space")
        assert host in tl.collapsed and len(tl.rows) < n
        await pilot.press("space")
        assert host not in tl.collapsed and len(tl.rows) == n


@run_async
async def test_event_list_follows_cursor_and_filters(make_app, incident):
    from ranktrace.tui.widgets.panes import EventList
    from ranktrace.tui.widgets.timeline import Timeline
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(app, pilot)
        el = app.query_one(EventList)
        tl = app.query_one(Timeline)
        assert el.items
        col_start = tl.t0 + tl.col_of(tl.cursor_t) * tl.dt
        assert el.items[0].time is None or el.items[0].time >= col_start - 1e-6
        tl.focus()
        await pilot.pause()
        await pilot.press("s", "s")                          # severity >= error
        await settle(app, pilot)
        assert app.filters.min_severity == "error"
        assert all(r.severity in ("error", "critical") for r in el.items)
        await pilot.press("x", "r")                          # role: cause
        await settle(app, pilot)
        assert all(r.role == "cause" for r in el.items)
        tl.jump_to(tl.extent[0])                               # from the start: the culprit may go silent
        await pilot.press("x", "slash")
        _, rank = _culprit(incident)
        await pilot.press(*f"rank:{rank}")
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.filters.rank == rank
        assert el.items and all(r.rank == rank for r in el.items)
        assert f"rank:{rank}" in screen_text(app)
        await pilot.press("x")
        await settle(app, pilot)
        assert not app.filters.active()


@run_async
async def test_event_list_pages_backward_from_the_cursor(make_app):
    """The list opens at the cursor's time; Up on its first row brings the
    events just before, in order, without gaps or repeats; forward paging
    still continues after the last row."""
    from ranktrace.tui.widgets import panes
    from ranktrace.tui.widgets.panes import EventList
    from ranktrace.tui.widgets.timeline import Timeline
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(app, pilot)
        el, tl = app.query_one(EventList), app.query_one(Timeline)
        everything = app.store.events_page(None, limit=100_000)
        timed = [r for r in everything if r.time is not None]
        mid = timed[len(timed) // 2]
        tl.jump_to(mid.time)
        await settle(app, pilot)
        first = el.items[0]
        assert first.time >= tl.t0 + tl.col_of(mid.time) * tl.dt - 1e-6
        pos = [r.event_id for r in everything].index(first.event_id)
        assert pos > 0, "the list must start after some earlier events"
        el.focus()
        el.move_cursor(row=0)
        await pilot.press("up")
        await settle(app, pilot)
        got = [r.event_id for r in el.items]
        want = [r.event_id for r in everything[max(0, pos - panes.PAGE):pos]]
        assert got[:len(want)] == want and got[len(want)] == first.event_id
        assert el.cursor_row == len(want) - 1              # one row up from where it was
        assert el.items[el.cursor_row].event_id == everything[pos - 1].event_id
        n = len(el.items)
        el.move_cursor(row=n - 1)                           # forward paging still continues
        await settle(app, pilot)
        ids = [r.event_id for r in el.items]
        assert len(ids) == len(set(ids))
        assert ids == [r.event_id for r in everything[pos - len(want):pos - len(want) + len(ids)]]


@run_async
async def test_enter_in_list_jumps_timeline_and_detail_shows_context(make_app):
    from ranktrace.tui.widgets.panes import DetailPane, EventList
    from ranktrace.tui.widgets.timeline import Timeline
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(app, pilot)
        el = app.query_one(EventList)
        el.focus()
        await pilot.pause()
        await pilot.press("down", "down")
        await settle(app, pilot)
        row = el.items[el.cursor_row]
        await pilot.press("enter")
        await settle(app, pilot)
        tl = app.query_one(Timeline)
        if row.time is not None:
            assert tl.col_of(tl.cursor_t) == tl.col_of(row.time)
        dp = app.query_one(DetailPane)
        assert dp.event_id == row.event_id
        text = screen_text(app)
        assert "aligned" in text and "logged" in text


@run_async
async def test_evidence_enter_jumps_to_event(make_app, incident):
    from ranktrace.tui.data import StoreData
    from ranktrace.tui.widgets.panes import DetailPane, EvidenceView
    from ranktrace.tui.widgets.timeline import Timeline
    verdict = verdict_with_evidence(incident.verdict, incident.db)
    incident = type(incident)(incident.name, incident.paths, verdict, incident.db)
    app = make_app(verdict)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        ev = app.query_one(EvidenceView)
        assert len(ev.evidence) == len(incident.verdict["evidence"])
        assert "evidence" in screen_text(app)
        await pilot.press("enter")
        await settle(app, pilot)
        from textual.widgets import TabbedContent
        assert app.query_one(TabbedContent).active == "tab-timeline"
        assert app.query_one(DetailPane).event_id is not None
        assert app.query_one(Timeline).has_focus


@pytest.mark.parametrize("size", SIZES)
@run_async
async def test_sql_console_rows_and_errors(make_app, size):
    from textual.widgets import DataTable
    from ranktrace.tui.widgets.panes import SqlConsole
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        sql = app.query_one(SqlConsole)
        sql.run_text("SELECT host, rank, count(*) AS n FROM events GROUP BY ALL ORDER BY n DESC")
        await settle(app, pilot)
        grid = app.query_one("#sql-grid", DataTable)
        assert sql.result.error is None and grid.row_count == len(sql.result.rows) > 0
        assert "rows in" in screen_text(app)
        sql.run_text("SELECT * FROM no_such_table")
        await settle(app, pilot)
        assert sql.result.error and "no_such_table" in sql.result.error
        assert "no_such_table" in screen_text(app)
        # ctrl+r from the editor runs it
        app.query_one("#sql-text").focus()
        sql.query_one("#sql-text").text = "SELECT 42 AS answer"
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        assert sql.result.rows == [(42,)]


@run_async
async def test_sql_cancel_interrupts_a_slow_query(make_app):
    from ranktrace.tui.widgets.panes import SqlConsole
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        sql = app.query_one(SqlConsole)
        sql.run_text("SELECT count(*) FROM range(100000000000) a")
        for _ in range(20):
            await pilot.pause(0.05)
        assert sql.running
        await pilot.press("ctrl+g")
        for _ in range(100):
            await pilot.pause(0.05)
            if not sql.running:
                break
        assert not sql.running and sql.result.cancelled


@run_async
async def test_canned_queries_listed(make_app):
    from ranktrace.tui.data import _canned_dir
    from ranktrace.tui.widgets.panes import SqlConsole
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        sql = app.query_one(SqlConsole)
        d = _canned_dir()
        names = sorted(p.name for p in d.glob("*.sql")) if d else []
        assert sorted(q.path.name for q in sql.canned) == names
        for q in sql.canned:                                  # every canned query runs in the console
            res = app.store.run_sql(q.sql, 10)
            assert res.error is None or "parameter" in res.error.lower(), (q.name, res.error)


@pytest.mark.parametrize("size", SIZES)
@run_async
async def test_help_lists_every_key(make_app, size):
    from ranktrace.tui.app import HELP
    from ranktrace.tui.widgets.timeline import Timeline
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        from ranktrace.tui.widgets.panes import HelpScreen
        assert isinstance(app.screen, HelpScreen)
        help_text = str(app.screen.query_one("#help-text").content)
        for _, keys in HELP:
            for k, what in keys:
                assert k in help_text and what in help_text
        # every binding of the app and the timeline is documented
        documented = help_text
        for b in list(app.BINDINGS) + list(Timeline.BINDINGS):
            first = b.key.split(",")[0]
            name = {"question_mark": "?", "slash": "/", "plus": "+", "minus": "-", "space": "space",
                    "shift+left": "shift+←", "left": "←", "right": "→", "up": "↑", "down": "↓",
                    "shift+right": "shift+←", "home": "g", "pageup": "pgup", "pagedown": "pgdn",
                    "right_square_bracket": "]", "left_square_bracket": "[", "right_curly_bracket": "}",
                    "left_curly_bracket": "{", "full_stop": ".", "comma": ","}.get(first, first)
            assert name in documented, b.key
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


@run_async
async def test_theme_toggle_and_quit(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        dark = app.current_theme.dark
        await pilot.press("t")
        await pilot.pause()
        assert app.current_theme.dark != dark
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


def test_a_line_that_names_no_host_is_aligned_on_its_files_clock(tmp_path):
    """slurmctld's log names no host: diagnose gives it a clock of its own ('@' + its file, the clock
    list's key), and the TUI reads its lines on it, as the report and diagnose do."""
    from tui_helpers import ingest_relative

    from ranktrace.tui.data import StoreData
    from conftest import SAMPLES
    db = ingest_relative([str(SAMPLES / "slurm_scancel")], tmp_path / "s")
    ctl = "slurm_scancel/slurm/slurmctld.log"
    v = {"verdict": {"kind": "cancelled"}, "clock": [{"host": "@" + ctl, "offset_s": 30.0, "uncertainty_s": 1.0}]}
    s = StoreData(db, verdict_fn=lambda con: v)
    try:
        s.load_verdict()
        eid = s._cur().execute("SELECT min(event_id) FROM events WHERE file = ? AND ts IS NOT NULL",
                               [ctl]).fetchone()[0]
        other = s._cur().execute("SELECT min(event_id) FROM events WHERE file <> ? AND ts IS NOT NULL",
                                 [ctl]).fetchone()[0]
        e, o = s.event(eid), s.event(other)
        assert e["aligned"] == pytest.approx(e["orig"] - 30.0, abs=1e-3)
        assert o["aligned"] == pytest.approx(o["orig"], abs=1e-3)
    finally:
        s.close()
