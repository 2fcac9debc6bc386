"""`ranktrace tui`: the incident timeline in the terminal.

Every read goes through ranktrace.tui.data (StoreData) in thread workers that
post messages; the UI thread only draws."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from ..safe_text import safe
from . import attempts as att
from .data import Filters, Lane, StoreData, fmt_time
from .widgets.panes import (DetailPane, EventList, EvidenceView, FilterBar, HelpScreen,
                            VerdictHeader)
from .widgets.timeline import Timeline

# The diagnosis waits at most this long for the first screen to be drawn.
FIRST_PAINT_WAIT_S = 3.0

SEV_CYCLE = ["", "warning", "error", "critical"]
ROLE_CYCLE = ["", "cause", "cause,symptom", "symptom"]

# Every key, for the help screen (the bindings themselves live on the widgets).
HELP: list[tuple[str, list[tuple[str, str]]]] = [
    ("everywhere", [
        ("q / ctrl+q", "quit (ctrl+q also from inside the SQL editor)"), ("?", "this help"), ("t", "light / dark theme"),
        ("1 / 2 / 3 / 4", "timeline / evidence / SQL console / attempts (a run that restarted)"), ("tab / shift+tab", "next / previous pane"),
        ("d", "show / hide the detail pane"),
    ]),
    ("timeline", [
        ("← → / h l", "move the time cursor one column"), ("shift+← → / H L", "pan a quarter window"),
        ("↑ ↓ / k j, pgup pgdn", "move between lanes"), ("+ = i / - o", "zoom in / out at the cursor"),
        ("f", "fit to the incident (default view)"), ("a", "show the whole store"),
        ("g / home", "jump to the first failure (culprit lane)"), ("n / p (N)", "next / previous error"),
        ("e / E", "next / previous lane with errors"), ("space / enter", "fold / unfold a host"),
        ("c", "fold / unfold all hosts"),
        ("v", "node-level sources (slurmd, kernel, ...): own lanes / merged into the host row"),
        ("mouse", "click: cursor; wheel: lanes; wheel on axis or ctrl+wheel: zoom; shift+wheel: pan;"
                  " double-click a label: fold"),
    ]),
    ("a run that restarted (several attempts)", [
        ("] / [", "next attempt / this one's (then the previous) start: shown whole, the cursor on its start"),
        ("} / {", "next / previous incident (failed attempt): its failure, its culprit, its verdict"),
        (". / ,", "the culprit's next / previous event (its own lines, any severity)"),
        ("4", "the attempts list (enter: show the attempt in the timeline)"),
        ("timeline", "┃#N on the axis and ┊ in the lanes: attempt N starts; ▷ a lane that failed"
                     " another attempt, shaded over that attempt"),
    ]),
    ("event list and filters", [
        ("/", "filter: sev:error role:cause kind:oom host:NODE rank:N free text"),
        ("s", "cycle minimum severity (all, warning, error, critical)"),
        ("r", "cycle role (all, cause, cause+symptom, symptom)"),
        ("m", "only the lane under the timeline cursor (again: off)"), ("x", "clear all filters"),
        ("enter (in the list)", "show the event in the timeline"),
    ]),
    ("evidence", [("enter", "show the evidence event in the timeline")]),
    ("SQL console", [("ctrl+r", "run the query (read-only, first 500 rows)"), ("ctrl+g", "cancel the query"),
                     ("esc", "leave the editor (then 1/2/3, q, ? work again)"),
                     ("canned queries", "pick one from queries/canned/ in the list")]),
]


class KeyFooter(Footer):
    """Textual's Footer, recomposed once per refresh however often the bindings
    changed before it, and only when the keys it shows changed (Footer queues one
    recompose per change: three before the first screen, each remounting every
    key, ~15% of the UI thread's work; now one)."""

    _recompose_queued = False
    _shown: tuple | None = None   # the keys the last recompose drew

    def _shows(self) -> tuple:
        """What compose would draw: the screen's shown bindings."""
        return (self.compact, self.show_command_palette,
                tuple((b.key, b.action, b.description, b.group, enabled, tooltip)
                      for (_, b, enabled, tooltip) in self.screen.active_bindings.values() if b.show))

    def bindings_changed(self, screen) -> None:
        self._bindings_ready = True   # Footer.compose draws nothing until then
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._recompose_queued:
            self._recompose_queued = True
            self.call_after_refresh(self._recompose_once)

    async def _recompose_once(self) -> None:
        self._recompose_queued = False   # a change from here on queues another
        shows = self._shows()
        if shows == self._shown:   # the same keys (focus moved between widgets that add none)
            return
        self._shown = shows
        await self.recompose()


@dataclass
class Summary:
    counts: dict
    lanes: list[Lane]
    extent: tuple[float, float] | None
    incident: tuple[float, float] | None
    first_failure: float | None
    attempts: list   # tui/attempts.py Attempt, in order


class RanktraceApp(App):
    TITLE = "ranktrace"
    AUTO_FOCUS = "#timeline"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    CSS = """
    #status { height: 1; padding: 0 1; background: $boost; color: $text-muted; }
    #bottom { height: 45%; min-height: 5; }
    #events { width: 3fr; }
    #detail { width: 2fr; border-left: vkey $primary-background; }
    Screen.-narrow #detail { display: none; }
    Screen.-narrow.show-detail #detail { display: block; width: 1fr; }
    Screen.-narrow.show-detail #events { display: none; }
    Screen.-wide.hide-detail #detail { display: none; }
    TabbedContent { height: 1fr; }
    TabPane { padding: 0; }
    """

    BINDINGS = [
        Binding("q", "quit", "quit"),
        Binding("question_mark", "help", "help"),
        Binding("t", "toggle_theme", "theme", show=False),
        Binding("1", "tab('tab-timeline')", "timeline", show=False),
        Binding("2", "tab('tab-evidence')", "evidence", show=False),
        Binding("3", "tab('tab-sql')", "SQL", show=False),
        Binding("slash", "filter", "filter"),
        Binding("s", "cycle_sev", "severity", show=False),
        Binding("r", "cycle_role", "role", show=False),
        Binding("m", "lane_filter", "this lane", show=False),
        Binding("x", "clear_filters", "clear filters", show=False),
        Binding("d", "toggle_detail", "detail", show=False),
        # a run that restarted (check_action hides them otherwise)
        Binding("right_square_bracket", "attempt(1)", "next attempt"),
        Binding("left_square_bracket", "attempt(-1)", "prev attempt", show=False),
        Binding("right_curly_bracket", "incident(1)", "next incident"),
        Binding("left_curly_bracket", "incident(-1)", "prev incident", show=False),
        Binding("4", "tab('tab-attempts')", "attempts", show=False),
    ]

    class Ready(Message):
        def __init__(self, summary: Summary | None, phase: int, error: str | None = None) -> None:
            super().__init__()
            self.summary = summary
            self.phase = phase
            self.error = error

    class Found(Message):
        def __init__(self, row, note: str = "") -> None:
            super().__init__()
            self.row = row
            self.note = note

    def __init__(self, db: str, verdict_fn=None, store: StoreData | None = None,
                 warm: threading.Thread | None = None) -> None:
        """warm: a thread already reading store.summary() (its results are cached)."""
        super().__init__()
        self.db = db
        self._warm = warm
        self.store = store or StoreData(db, verdict_fn=verdict_fn)
        self.filters = Filters()
        self.summary: Summary | None = None
        self.phase = 0
        self._sync_timer = None
        self._sync_pending = False
        self._pending_select: int | None = None
        self._first_paint = threading.Event()
        self._tabs_mounted = False
        self.attempts: list = []
        self.shown_attempt: int | None = None   # the attempt the header and timeline are about
        self._attempts_view = None   # widgets/attempts.py AttemptsView, once the run has two attempts

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield VerdictHeader(id="verdict")
        with TabbedContent(initial="tab-timeline", id="tabs"):
            with TabPane("Timeline", id="tab-timeline"):
                yield Timeline(self.store, id="timeline")
                yield Static("", id="status")
                with Horizontal(id="bottom"):
                    yield EventList(self.store, id="events")
                    yield DetailPane(self.store, id="detail")
            # The tabs not on the first screen get their content once it is drawn
            # (_painted): mounting it (DataTables, TextArea, Select and their CSS)
            # held up the first screen on the UI thread.
            yield TabPane("Evidence", id="tab-evidence")
            yield TabPane("SQL", id="tab-sql")
        yield FilterBar(placeholder="sev:error role:cause kind:… host:… rank:N text   (Enter applies, Esc closes)",
                        id="filter", disabled=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one(VerdictHeader).show_loading(self.db)
        self.call_after_refresh(self.query_one(Timeline).focus)
        self._paint_timer = self.set_interval(0.03, self._check_first_paint)
        self._startup()

    def on_unmount(self) -> None:
        self._first_paint.set()   # the startup worker stops waiting
        self.store.interrupt()

    # ------------------------------------------------------------------ startup: two phases

    def _summary(self) -> Summary:
        d = self.store.summary()
        return Summary(counts=d["counts"], lanes=d["lanes"], extent=d["extent"], incident=d["incident"],
                       first_failure=d["first_failure"], attempts=self.store.attempts())

    @work(thread=True, exclusive=True, group="startup")
    def _startup(self) -> None:
        if self._warm is not None:
            self._warm.join()
        try:
            self.post_message(self.Ready(self._summary(), 1))
        except Exception as exc:
            self.post_message(self.Ready(None, 1, f"{type(exc).__name__}: {exc}"))
            return
        # The diagnosis takes DuckDB's threads for seconds on a large store:
        # it starts once the first screen (timeline and list) is drawn.
        self._first_paint.wait(FIRST_PAINT_WAIT_S)
        self.store.load_verdict()   # never raises
        try:
            self.post_message(self.Ready(self._summary(), 2))
        except Exception as exc:
            self.post_message(self.Ready(None, 2, f"{type(exc).__name__}: {exc}"))

    def on_ranktrace_app_ready(self, msg: "RanktraceApp.Ready") -> None:
        if msg.error:
            self.notify(f"reading the store failed: {safe(msg.error)}", severity="error", timeout=10, markup=False)
            return
        self.summary = msg.summary
        self.phase = msg.phase
        sm = msg.summary
        tl = self.query_one(Timeline)
        self.attempts = sm.attempts
        top = self.store.top_attempt(sm.attempts) if msg.phase == 2 else None
        self.shown_attempt = top.id if top is not None else None
        if msg.phase == 2:
            self.query_one(VerdictHeader).show_verdict(self.store, sm.counts, top, sm.attempts)
            try:
                self.query_one(EvidenceView).refresh_verdict()
            except NoMatches:
                pass   # not mounted yet (_painted): its on_mount shows the verdict
        tl.set_model(sm.lanes, sm.extent, sm.incident, sm.first_failure, self.store.culprit(),
                     self.store.cascade_keys())
        tl.set_attempts(sm.attempts)
        self._show_attempts_list()
        self.refresh_bindings()   # the attempt keys show for a run that restarted
        if sm.extent is None:
            self.query_one(EventList).load(None, self.filters)
        if self.focused is None:
            tl.focus()
        self._update_status()

    # ------------------------------------------------------------------ sync timeline -> list

    @on(Timeline.CursorMoved)
    def _cursor_moved(self, msg: Timeline.CursorMoved) -> None:
        self._update_status()
        if self._sync_timer is not None:
            self._sync_timer.stop()
        self._sync_pending = True
        # The first list comes at once; later ones wait for the cursor to rest.
        try:
            first = not self.query_one(EventList).items
        except NoMatches:   # the app is closing
            return
        if first:
            self._sync_list()
            return
        self._sync_timer = self.set_timer(0.12, self._sync_list)

    @property
    def busy(self) -> bool:
        """True while startup (verdict, the tabs' content), a pending list sync or any worker is in
        flight (tests wait on it)."""
        from textual.worker import WorkerState
        return (self.phase < 2 or self._sync_pending or not self._tabs_mounted
                or any(w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in self.workers))

    def _check_first_paint(self) -> None:
        """Polled until the timeline has its data and the list its first page;
        the first screen is drawn by the refresh after that (_painted)."""
        try:
            tl, el = self.query_one(Timeline), self.query_one(EventList)
        except NoMatches:
            return
        if self.phase >= 1 and (tl.data_token is not None or not tl.all_lanes) and (el.items or el.exhausted):
            self._paint_timer.stop()
            self.call_after_refresh(self._painted)

    async def _painted(self) -> None:
        """The first screen is on the terminal: the diagnosis may start (started
        when the data arrived, before the drawing, its imports and queries slowed
        the drawing), and the other tabs get their content."""
        self._first_paint.set()
        if self._tabs_mounted:
            return
        try:
            await self.query_one("#tab-evidence", TabPane).mount(EvidenceView(self.store, id="evidence"))
            from .widgets.sql import SqlConsole   # TextArea: imported after the first screen
            await self.query_one("#tab-sql", TabPane).mount(SqlConsole(self.store, id="sql"))
        except NoMatches:   # the app is closing
            return
        self._tabs_mounted = True
        active = self.query_one(TabbedContent).active
        if active != "tab-timeline":   # switched to before its content was there: focus it now
            self.action_tab(active)

    def _sync_list(self) -> None:
        self._sync_pending = False
        try:
            tl = self.query_one(Timeline)
        except NoMatches:   # the app is closing
            return
        if tl.cursor_t is None:
            start = None
        else:
            start = tl.t0 + tl.col_of(tl.cursor_t) * tl.dt
        sel, self._pending_select = self._pending_select, None
        self.query_one(EventList).load(start, self.filters, select_id=sel)

    def _update_status(self) -> None:
        try:
            tl = self.query_one(Timeline)
        except NoMatches:
            return
        r = tl.current_row()
        lane = ""
        if r is not None:
            lane = safe(r.host + ("" if r.kind == "host" else f" {r.lane.label}"))
        cur = fmt_time(tl.cursor_t)[11:] if tl.cursor_t is not None else "-"
        offs = f" · clock offsets for {len(self.store.offsets)} hosts" if self.store.offsets else ""
        self.query_one("#status", Static).update(
            Text(f"cursor {cur} · {lane} · filters: {self.filters.describe()}{offs}", no_wrap=True))

    @on(EventList.Selected)
    def _event_selected(self, msg: EventList.Selected) -> None:
        try:
            self.query_one(DetailPane).show(msg.row.event_id)
        except NoMatches:   # a selection still queued while the app closes
            pass

    @on(EventList.Opened)
    def _event_opened(self, msg: EventList.Opened) -> None:
        r = msg.row
        self._pending_select = r.event_id
        if r.time is not None:
            self.query_one(Timeline).jump_to(r.time, r.host or "(no host)", r.rank, r.source)
        self.query_one(DetailPane).show(r.event_id)

    # ------------------------------------------------------------------ evidence -> timeline

    @on(EvidenceView.Jump)
    def _evidence_jump(self, msg: EvidenceView.Jump) -> None:
        self._find(msg.item)

    @work(thread=True, exclusive=True, group="find")
    def _find(self, item: dict) -> None:
        row = self.store.find_event(item.get("file"), item.get("line"), item.get("time"))
        self.post_message(self.Found(row, f"{item.get('file')}:{item.get('line')}"))

    def on_ranktrace_app_found(self, msg: "RanktraceApp.Found") -> None:
        if msg.row is None:
            self.notify(f"evidence {safe(msg.note)} is not in the store", severity="warning", markup=False)
            return
        self.action_tab("tab-timeline")
        r = msg.row
        self._pending_select = r.event_id
        tl = self.query_one(Timeline)
        if r.time is not None:
            tl.jump_to(r.time, r.host or "(no host)", r.rank, r.source)
        tl.focus()
        self.query_one(DetailPane).show(r.event_id)

    # ------------------------------------------------------------------ actions

    def action_help(self) -> None:
        self.push_screen(HelpScreen(HELP))

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"

    def action_tab(self, tab: str) -> None:
        if tab == "tab-attempts" and self._attempts_view is None:
            self.notify("the run never restarted: one attempt", severity="information")
            return
        try:
            self.query_one(TabbedContent).active = tab
        except ValueError:   # the Attempts tab is being added: not there yet
            return
        target = {"tab-timeline": Timeline, "tab-evidence": "#evi", "tab-sql": "#sql-text",
                  "tab-attempts": "#att-table"}[tab]
        def focus() -> None:
            try:
                self.query_one(target).focus()
            except NoMatches:
                pass
        self.call_after_refresh(focus)

    def action_filter(self) -> None:
        fb = self.query_one(FilterBar)
        fb.disabled = False
        fb.add_class("open")
        fb.value = self.filters.describe()
        fb.focus()

    @on(FilterBar.Submitted)
    def _filter_submitted(self, event: FilterBar.Submitted) -> None:
        self.set_filters(Filters.parse(event.value))
        fb = self.query_one(FilterBar)
        fb.remove_class("open")
        fb.disabled = True
        self.query_one(Timeline).focus()

    def on_key(self, event) -> None:
        fb = self.query_one(FilterBar)
        if event.key == "escape" and fb.has_focus:
            fb.remove_class("open")
            fb.disabled = True
            self.query_one(Timeline).focus()
            event.stop()

    def set_filters(self, f: Filters) -> None:
        self.filters = f
        self._update_status()
        self._sync_list()

    def action_cycle_sev(self) -> None:
        i = SEV_CYCLE.index(self.filters.min_severity) if self.filters.min_severity in SEV_CYCLE else 0
        self.filters.min_severity = SEV_CYCLE[(i + 1) % len(SEV_CYCLE)]
        self.set_filters(self.filters)   # the status line shows it

    def action_cycle_role(self) -> None:
        i = ROLE_CYCLE.index(self.filters.role) if self.filters.role in ROLE_CYCLE else 0
        self.filters.role = ROLE_CYCLE[(i + 1) % len(ROLE_CYCLE)]
        self.set_filters(self.filters)

    def action_lane_filter(self) -> None:
        tl = self.query_one(Timeline)
        r = tl.current_row()
        if self.filters.host or self.filters.rank is not None or r is None:
            self.filters.host, self.filters.rank = "", None
        else:
            self.filters.host = r.host
            self.filters.rank = r.lane.rank if r.kind == "lane" and r.lane else None
        self.set_filters(self.filters)

    def action_clear_filters(self) -> None:
        self.set_filters(Filters())

    # ------------------------------------------------------------------ attempts (issue 27)

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in ("attempt", "incident"):
            return len(self.attempts) > 1   # False: hidden from the footer, the key does nothing
        return True

    def _show_attempts_list(self) -> None:
        """The Attempts tab, for a run of two attempts or more (added the first time)."""
        if len(self.attempts) < 2:
            return
        if self._attempts_view is None:
            from .widgets.attempts import AttemptsView
            self._attempts_view = AttemptsView(id="attempts")
            self.query_one(TabbedContent).add_pane(
                TabPane(f"Attempts ({len(self.attempts)})", self._attempts_view, id="tab-attempts"))
        self._attempts_view.show(self.attempts, self.shown_attempt, self.store.verdict)

    def _attempt(self, aid: int | None):
        return next((a for a in self.attempts if a.id == aid), None)

    def action_attempt(self, d: int) -> None:
        """The next attempt to start after the cursor (d > 0), or the last to start before it: from
        inside an attempt, `[` goes to its own start first."""
        tl = self.query_one(Timeline)
        if tl.extent is None:
            return
        t, half = tl.cursor_t, tl.dt / 2
        starts = [(a, a.start if a.start is not None else tl.extent[0]) for a in self.attempts]
        if d > 0:
            hit = next((a for a, s in starts if t is None or s > t + half), None)
        else:
            hit = next((a for a, s in reversed(starts) if t is None or s < t - half), None)
        if hit is None:
            self.notify(f"no {'next' if d > 0 else 'previous'} attempt", severity="information")
            return
        self.show_attempt(hit.id, at_failure=False)

    def action_incident(self, d: int) -> None:
        nxt = att.step(self.attempts, self.shown_attempt, d)
        if nxt is None:
            self.notify(f"no {'next' if d > 0 else 'previous'} incident", severity="information")
            return
        self.show_attempt(nxt.id, at_failure=True)

    def show_attempt(self, aid: int, at_failure: bool) -> None:
        """Show attempt `aid` in the timeline: at its failure (its window, its culprit's lane) or
        whole with the cursor on its start; its verdict in the header, its row in the list."""
        a = self._attempt(aid)
        tl = self.query_one(Timeline)
        if a is None or tl.extent is None:
            return
        self.shown_attempt = a.id
        top = self.store.top_attempt(self.attempts)
        cascade = self.store.cascade_keys() if top is not None and top.id == a.id else set()
        whole = att.whole(a, tl.extent)
        start = a.start if a.start is not None else whole[0]
        if a.verdict and a.failure_time is not None:
            win = att.window(a, tl.extent)
            if at_failure:
                tl.focus_incident(win, a.failure_time, a.culprit, cascade)
            else:
                tl.focus_incident(win, a.failure_time, a.culprit, cascade, view=whole, cursor=start)
        else:
            tl.show_window(whole, start)
        if self.summary is not None and self.phase >= 2:
            self.query_one(VerdictHeader).show_verdict(self.store, self.summary.counts, a, self.attempts)
        if self._attempts_view is not None:
            self._attempts_view.mark(a.id)

    def on_attempts_view_jump(self, msg) -> None:
        self.action_tab("tab-timeline")
        self.show_attempt(msg.attempt, at_failure=False)

    def action_toggle_detail(self) -> None:
        if self.screen.has_class("-narrow"):
            self.screen.toggle_class("show-detail")
        else:
            self.screen.toggle_class("hide-detail")



def run(db: str) -> int:
    app = RanktraceApp(db)
    try:
        app.run()
    finally:
        app.store.close()
    return 0
