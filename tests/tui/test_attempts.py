"""The TUI on runs that restarted (issue 27), driven with Pilot on real bundles of sample_logs/
(torchrun --max-restarts, a Slurm requeue after a node failure, an elastic node loss, a crash that
recurs in every attempt) ingested into real stores, diagnosed by the real `diagnose` path.

What the store says (its `attempts` table, its events) is read here with plain SQL, apart from
the TUI's data module; what the user sees is read from the screen."""

from __future__ import annotations

from pathlib import Path

import pytest

from ranktrace.store import connect as store_connect
from tui_helpers import ingest_relative, run_async, screen_text, settle

pytestmark = pytest.mark.tui

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
RESTARTED = ("torchrun_restart_resume", "slurm_requeue_node_failure", "torchrun_elastic_node_lost",
             "torchrun_restart_recurring_crash")
RECURRING = "torchrun_restart_recurring_crash"   # three failed attempts, the same culprit each time
SIZE = (120, 36)
# The store's attempt starts (the ingest's clock) and the diagnosis' (its clock) agree within this.
CLOCK_SLACK_S = 5.0


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, str]:
    out = {}
    for name in RESTARTED:
        d = SAMPLES / name
        if not d.is_dir():
            continue
        out[name] = ingest_relative([str(d)], tmp_path_factory.mktemp("att") / f"{name}.duckdb")
    if not out:
        pytest.skip("sample_logs/ has none of the restarted runs")
    return out


def _store(stores, name: str) -> str:
    if name not in stores:
        pytest.skip(f"sample_logs/{name} is missing")
    return stores[name]


def store_attempts(db: str) -> list[tuple]:
    """(attempt, outcome, start epoch s) of the store's `attempts` table."""
    con = store_connect(db)
    try:
        return con.execute("SELECT attempt, outcome, epoch_us(start) / 1e6 FROM attempts ORDER BY attempt").fetchall()
    finally:
        con.close()


def app_for(db: str, verdict_fn=None):
    from ranktrace.tui.app import RanktraceApp
    return RanktraceApp(db, verdict_fn=verdict_fn)


def axis_cell(app, col: int) -> str:
    """The character on the timeline's axis (its second row) at time column `col`."""
    tl = app.query_one("#timeline")
    lines = screen_text(app).splitlines()
    return lines[tl.region.y + 1][tl.region.x + tl.label_w + 1 + col]


def header(app) -> str:
    return str(app.query_one("#verdict").content)


async def _press(app, pilot, *keys) -> None:
    for k in keys:
        await pilot.press(k)
        await settle(app, pilot)


@pytest.mark.parametrize("name", RESTARTED)
@run_async
async def test_timeline_marks_each_attempt_start(stores, name):
    db = _store(stores, name)
    rows = store_attempts(db)
    assert len(rows) >= 2, rows
    app = app_for(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot, 60)
        # the TUI's attempts are the store's: the same ids, outcomes, starts
        assert [(a.id, a.outcome) for a in app.attempts] == [(r[0], r[1]) for r in rows]
        for a, r in zip(app.attempts, rows):
            assert abs(a.start - r[2]) <= CLOCK_SLACK_S, (a, r)
        await _press(app, pilot, "a")   # the whole store: every start in view
        tl = app.query_one("#timeline")
        cols = {}
        for a in app.attempts:
            assert tl.t0 <= a.start < tl.t1
            cols[tl.col_of(a.start)] = a.id
        assert len(cols) == len(app.attempts), "two attempt starts share a column at this width"
        axis = screen_text(app).splitlines()[tl.region.y + 1][tl.region.x + tl.label_w + 1:]
        ff = tl.col_of(tl.first_failure) if tl.first_failure is not None else None
        for c, aid in cols.items():
            if c == ff:   # the first failure's ▼ wins the cell
                continue
            assert axis[c] == "┃", (aid, c, axis)
        last = app.attempts[-1].id   # its number next to its rule
        assert f"┃#{last}" in axis or f"#{last}┃" in axis, axis
        # no rule where no attempt starts
        assert axis.count("┃") == len([c for c in cols if c != ff]), axis
        # the lanes: the rule continues below the axis where a lane has no event
        body = screen_text(app).splitlines()[tl.region.y + 2:tl.region.y + tl.region.height]
        for c in cols:
            if c == ff:
                continue
            x = tl.region.x + tl.label_w + 1 + c
            assert any(line[x] == "┊" for line in body if len(line) > x), c


@pytest.mark.parametrize("name", RESTARTED)
@run_async
async def test_next_attempt_key_moves_to_its_start(stores, name):
    db = _store(stores, name)
    rows = store_attempts(db)
    app = app_for(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot, 60)
        assert "next attempt" in screen_text(app).splitlines()[-1]   # the footer shows the key
        tl = app.query_one("#timeline")
        for _ in range(len(rows) + 2):   # back to the first attempt's start
            await _press(app, pilot, "left_square_bracket")
        assert app.shown_attempt == rows[0][0]
        assert abs(tl.cursor_t - rows[0][2]) <= CLOCK_SLACK_S
        await _press(app, pilot, "right_square_bracket")
        a2 = app.attempts[1]
        assert app.shown_attempt == a2.id == rows[1][0]
        assert tl.cursor_t == a2.start and abs(tl.cursor_t - rows[1][2]) <= CLOCK_SLACK_S
        assert tl.t0 <= a2.start < tl.t1
        c = tl.col_of(a2.start)
        assert axis_cell(app, c) in "┃▼"
        assert f"attempt {a2.id} of {len(rows)}" in header(app)
        assert (a2.outcome.upper() in header(app)) if not a2.verdict else (a2.verdict["kind"].upper() in header(app))
        await _press(app, pilot, "left_square_bracket")   # from attempt 2's start: attempt 1's
        assert app.shown_attempt == rows[0][0] and tl.cursor_t == app.attempts[0].start


@run_async
async def test_incident_keys_step_between_failed_attempts(stores):
    db = _store(stores, RECURRING)
    rows = store_attempts(db)
    failed = [r[0] for r in rows if r[1] == "failed"]
    assert len(failed) >= 2, rows
    app = app_for(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot, 60)
        tl = app.query_one("#timeline")
        assert app.shown_attempt == failed[-1]   # the top-level verdict: the last failed attempt
        seen = [app.shown_attempt]
        for _ in range(len(failed)):
            await _press(app, pilot, "left_curly_bracket")
            seen.append(app.shown_attempt)
        assert seen == failed[::-1] + [failed[0]]   # the first one stays: no previous incident
        for k, aid in enumerate(failed[:2]):
            if k:
                await _press(app, pilot, "right_curly_bracket")
            a = next(x for x in app.attempts if x.id == aid)
            assert app.shown_attempt == aid
            assert tl.cursor_t == a.failure_time and tl.t0 <= a.failure_time < tl.t1
            assert tl.culprit == a.culprit
            row = tl.current_row()
            assert row.lane is not None and (row.lane.host, row.lane.rank) == a.culprit
            h = header(app)
            assert f"incident {k + 1} of {len(failed)}" in h and a.verdict["kind"].upper() in h


@run_async
async def test_culprit_keys_step_through_its_events(stores):
    db = _store(stores, RECURRING)
    app = app_for(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot, 60)
        tl = app.query_one("#timeline")
        await _press(app, pilot, "left_curly_bracket")
        host, rank = tl.culprit
        assert rank is not None
        off = app.store.offsets.get(host, 0.0)
        con = store_connect(db)
        times = sorted({r[0] - off for r in con.execute(
            "SELECT epoch_us(ts) / 1e6 FROM events WHERE host = ? AND rank = ? AND ts IS NOT NULL",
            [host, rank]).fetchall()})
        con.close()
        t = tl.cursor_t
        want = [x for x in times if x > t + 1e-6][:3]
        assert len(want) == 3, (t, times)
        got = []
        for _ in want:
            await _press(app, pilot, "full_stop")
            got.append(tl.cursor_t)
            row = tl.current_row()
            assert (row.lane.host, row.lane.rank) == (host, rank)
        assert got == pytest.approx(want, abs=1e-3)
        await _press(app, pilot, "comma")
        assert tl.cursor_t == pytest.approx(want[1], abs=1e-3)


@pytest.mark.parametrize("name", [RECURRING, "torchrun_restart_resume"])
@run_async
async def test_attempts_list_lists_the_store_and_selecting_scrolls_the_timeline(stores, name):
    from textual.widgets import DataTable
    db = _store(stores, name)
    rows = store_attempts(db)
    app = app_for(db)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(app, pilot, 60)
        await _press(app, pilot, "4")
        table = app.query_one("#att-table", DataTable)
        assert app.focused is table
        assert table.row_count == len(rows)
        cols = [str(c.label) for c in table.columns.values()]
        for want in ("#", "start (UTC)", "end", "outcome", "kind", "culprit"):
            assert want in cols, cols
        from ranktrace.tui.data import fmt_time
        for i, (aid, outcome, start) in enumerate(rows):
            cells = dict(zip(cols, (str(c) for c in table.get_row_at(i))))
            assert cells["#"] == str(aid) and cells["outcome"] == outcome
            a = app.attempts[i]
            assert cells["start (UTC)"] == fmt_time(a.start, 0)
            if outcome == "failed":
                assert cells["kind"] == a.verdict["kind"] and cells["culprit"]
            else:
                assert cells["kind"] == "" and cells["culprit"] == ""
        text = screen_text(app)
        assert f"{len(rows)} attempts" in text
        # select attempt 2: the timeline shows it, the cursor on its start
        target = app.attempts[1]
        while table.cursor_row != 1:
            await _press(app, pilot, "down" if table.cursor_row < 1 else "up")
        await _press(app, pilot, "enter")
        tl = app.query_one("#timeline")
        assert app.query_one("#tabs").active == "tab-timeline"
        assert app.shown_attempt == target.id
        assert tl.cursor_t == target.start and tl.t0 <= target.start < tl.t1
        assert f"attempt {target.id} of {len(rows)}" in header(app)


@run_async
async def test_before_the_diagnosis_the_store_attempts_show(stores):
    """No diagnosis (it failed, or is still running): the attempts come from the store's table."""
    name = "torchrun_restart_resume" if "torchrun_restart_resume" in stores else next(iter(stores))
    db = stores[name]
    rows = store_attempts(db)
    app = app_for(db, verdict_fn=lambda con: None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot, 60)
        assert [(a.id, a.outcome, a.start) for a in app.attempts] == [tuple(r) for r in rows]
        await _press(app, pilot, "right_square_bracket")
        tl = app.query_one("#timeline")
        assert tl.cursor_t in {r[2] for r in rows}
        assert axis_cell(app, tl.col_of(tl.cursor_t)) in "┃▼"


@run_async
async def test_log_text_in_attempts_is_never_markup(stores):
    """The verdict's fields come from log text: brackets show as written, never parsed."""
    from ranktrace.tui.data import default_verdict_fn
    name = "torchrun_restart_resume" if "torchrun_restart_resume" in stores else next(iter(stores))
    db = stores[name]

    def tainted(con):
        doc = default_verdict_fn(con)
        doc["verdict"]["kind"] = "crash[/]"
        for e in doc["attempts"]:
            e["boundary"]["basis"] = "[bold red]restart[/] \x1b[2J"
            if e.get("verdict"):
                e["verdict"]["kind"] = "crash[/]"
                e["verdict"]["host"] = "[link=x]n1[/link]"
        return doc
    app = app_for(db, verdict_fn=tainted)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(app, pilot, 60)
        await _press(app, pilot, "4")
        text = screen_text(app)
        assert "[bold red]restart[/] \\x1b[2J" in text
        assert "crash[/]" in text and "[link=x]n1[/link]" in text
        await _press(app, pilot, "1")
        assert "CRASH[/]" in header(app)
        await _press(app, pilot, "right_square_bracket")   # an attempt without a verdict: the run's below
        assert "the run's verdict:  CRASH[/]" in header(app)


@run_async
async def test_a_run_that_never_restarted_has_no_attempt_keys(make_app, incident):
    con = store_connect(incident.db)
    n = con.execute("SELECT count(*) FROM attempts").fetchone()[0]
    con.close()
    assert n <= 1
    app = make_app()
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(app, pilot)
        tl = app.query_one("#timeline")
        before = (tl.cursor_t, tl.t0, tl.t1)
        assert "next attempt" not in screen_text(app).splitlines()[-1]
        assert not app.query("#tab-attempts")
        await _press(app, pilot, "right_square_bracket", "right_curly_bracket", "4")
        assert (tl.cursor_t, tl.t0, tl.t1) == before
        assert "┃#" not in screen_text(app)
