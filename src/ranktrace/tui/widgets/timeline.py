"""The timeline: one lane per rank grouped under its host, node-level lanes,
an aligned time axis. Virtualized with the Line API: only the visible rows are
drawn, from per-bucket aggregates queried for the visible lanes and window."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone

from rich.segment import Segment
from rich.style import Style
from textual import events, work
from textual.binding import Binding
from textual.color import Color
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from ...safe_text import safe
from ..data import ERROR_SEV, SEV_RANK, Bucket, Lane, StoreData, fmt_time

AXIS_ROWS = 2
_STEPS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600,
          900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 2 * 86400, 7 * 86400]
_BARS = "▁▂▃▄▅▆▇█"
MIN_SPAN = 0.002


@dataclass
class Row:
    kind: str            # "host" | "lane"
    host: str
    lane: Lane | None = None
    lanes: tuple[Lane, ...] = ()   # for a host row: its lanes


def _fit_mid(s: str, n: int) -> str:
    """`s` in n cells, the middle elided: pod names differ at their end (…-worker-3)."""
    if len(s) <= n or n < 5:
        return s[:max(n, 0)]
    head = (n - 1) * 2 // 5
    return s[:head] + "…" + s[len(s) - (n - 1 - head):]


def _tick_label(t: float, step: float) -> str:
    try:
        d = datetime.fromtimestamp(t, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):   # a bogus year from a log line
        return "?"
    if step >= 86400:
        return d.strftime("%m-%d")
    if step >= 60:
        return d.strftime("%H:%M")
    if step >= 1:
        return d.strftime("%H:%M:%S")
    dec = 1 if step >= 0.1 else 2 if step >= 0.01 else 3
    frac = f"{t % 1:.{dec}f}"[1:]
    return d.strftime("%M:%S") + frac


class Timeline(Widget, can_focus=True):
    """Lanes x time. Keys below; the app's help screen lists them too."""

    BINDINGS = [
        Binding("left,h", "move(-1)", "← time", show=False),
        Binding("right,l", "move(1)", "→ time", show=False),
        Binding("shift+left,H", "pan(-1)", "pan ←", show=False),
        Binding("shift+right,L", "pan(1)", "pan →", show=False),
        Binding("up,k", "row(-1)", "lane ↑", show=False),
        Binding("down,j", "row(1)", "lane ↓", show=False),
        Binding("pageup", "row(-10)", "page ↑", show=False),
        Binding("pagedown", "row(10)", "page ↓", show=False),
        Binding("plus,equals_sign,i", "zoom(0.5)", "zoom in"),
        Binding("minus,o", "zoom(2)", "zoom out"),
        Binding("f", "fit", "fit incident"),
        Binding("a", "show_all", "all", show=False),
        Binding("g,home", "first_failure", "1st failure"),
        Binding("n", "next_error(1)", "next err"),
        Binding("p,N", "next_error(-1)", "prev err", show=False),
        Binding("full_stop", "culprit_event(1)", "culprit's next", show=False),
        Binding("comma", "culprit_event(-1)", "culprit's prev", show=False),
        Binding("e", "next_lane_error(1)", "lane w/ err", show=False),
        Binding("E", "next_lane_error(-1)", "prev lane w/ err", show=False),
        Binding("space,enter", "toggle_host", "fold host", show=False),
        Binding("c", "toggle_all", "fold all", show=False),
        Binding("v", "toggle_split", "node lanes", show=False),
    ]

    DEFAULT_CSS = """
    Timeline { height: 1fr; min-height: 6; }
    """

    class CursorMoved(Message):
        def __init__(self, t: float | None, lane: Lane | None, host: str | None) -> None:
            super().__init__()
            self.t = t
            self.lane = lane
            self.host = host

    class Loaded(Message):
        """Bucket aggregates arrived from a worker."""
        def __init__(self, token: tuple, data: dict) -> None:
            super().__init__()
            self.token = token
            self.data = data

    t0: reactive[float] = reactive(0.0, layout=False)
    t1: reactive[float] = reactive(1.0, layout=False)

    def __init__(self, store: StoreData, **kw) -> None:
        super().__init__(**kw)
        self.store = store
        self.all_lanes: list[Lane] = []
        self.collapsed: set[str] = set()
        self.rows: list[Row] = []
        self.cursor_row = 0
        self.cursor_t: float | None = None
        self.top = 0
        # The view was last placed by a jump that centred the cursor's lane: a resize centres it
        # again (the first layout often lands after the jump), a user's scroll ends it.
        self._centered = False
        self.extent: tuple[float, float] | None = None
        self.incident: tuple[float, float] | None = None
        self.first_failure: float | None = None
        self.culprit: tuple[str | None, int | None] = (None, None)
        self.cascade: set = set()
        self.data: dict = {}
        self.data_token: tuple | None = None
        self.fetching = False
        self.status = "loading…"
        self._pal: dict[str, Style] = {}
        self.silence_gap = 1.0
        self.split_nodes: bool | None = None   # None: auto (one lane per node source when they fit)
        self.nodes_split = False
        # A run that restarted (tui/attempts.py): its attempts (two or more, else none) and, per failed
        # one, its culprit over its own time (host, rank, from, to).
        self.attempts: list = []
        self._spans: list[tuple[str | None, int | None, float, float]] = []

    # ------------------------------------------------------------------ setup

    def on_mount(self) -> None:
        self._palette()
        self.watch(self.app, "theme", lambda *_: (self._palette(), self.refresh()), init=False)

    def set_model(self, lanes: list[Lane], extent, incident, first_failure, culprit, cascade) -> None:
        """Called once the store summary (and possibly the verdict) is known."""
        self.all_lanes = lanes
        self.extent = extent
        self.incident = incident
        self.first_failure = first_failure
        self.culprit = culprit
        self.cascade = cascade
        if extent:
            self.silence_gap = max(1.0, 0.02 * (extent[1] - extent[0]))
        self._build_rows()
        self.data_token = None   # offsets may have changed: reload even for the same window
        self._open_on(incident or extent, first_failure, culprit, unfold=False)
        self.status = ""
        self.request_load()

    def _open_on(self, win, first_failure, culprit, unfold: bool) -> None:
        """The window `win`, the cursor on the first failure and on the culprit's lane."""
        if win:
            self._set_window(win[0], win[1], cursor=first_failure if first_failure is not None else win[0])
        row = None
        if culprit != (None, None):
            row = self.ensure_lane_visible(*culprit) if unfold else self.lane_row(*culprit)
        if row is not None:
            self._set_row(row, center=True)

    def set_attempts(self, attempts: list) -> None:
        """The run's attempts. Two or more are marked: a rule at each one's start across every lane
        (its number on the axis), and each failed attempt's culprit lane shaded over that attempt's
        time. One attempt (or none known) draws as a run that never restarted."""
        self.attempts = list(attempts) if len(attempts) > 1 else []
        inf = math.inf
        self._spans = [(a.culprit[0], a.culprit[1], -inf if a.start is None else a.start,
                        inf if a.end is None else a.end)
                       for a in self.attempts if a.failed and a.culprit != (None, None)]
        self.refresh()

    def focus_incident(self, win, first_failure, culprit, cascade, view=None, cursor=None) -> None:
        """Show one incident: its window (what `f` fits to from now on), the failure marker at its
        time, its culprit highlighted and under the cursor (its host unfolded), its cascade. `view`
        and `cursor`: another window to show now and the cursor's time in it (an attempt's start)."""
        self.incident = win
        self.first_failure = first_failure
        self.culprit = culprit
        self.cascade = cascade
        self.show_window(view or win, cursor if cursor is not None else first_failure, culprit)

    def show_window(self, win, cursor, culprit=(None, None)) -> None:
        """The window `win`, the cursor at time `cursor` and on lane `culprit` (its host unfolded)."""
        self._open_on(win, cursor, culprit, unfold=True)
        self.refresh()

    def _palette(self) -> None:
        th = self.app.current_theme
        dark = th.dark
        css = self.app.get_css_variables()
        bg = Color.parse(css.get("background") or th.background or ("#1e1e1e" if dark else "#f5f5f5"))
        fg = Color.parse(css.get("foreground") or th.foreground or ("#e0e0e0" if dark else "#202020"))
        err = Color.parse(th.error or "#e05050")
        warn = Color.parse(th.warning or "#d0a000")
        acc = Color.parse("#c678dd" if dark else "#8a3ab9")   # the cascade colour
        prim = Color.parse(th.primary or "#4080f0")
        ok = Color.parse(th.success or "#40a040")
        muted = fg.blend(bg, 0.55)
        faint = fg.blend(bg, 0.8)
        culprit_bg = err.blend(bg, 0.78)
        bound = Color.parse("#56b6c2" if dark else "#0e7c86")   # attempt boundaries: apart from warn/err/cascade
        cursor_bg = prim.blend(bg, 0.7)

        def st(c: Color, bgc: Color | None = None, bold=False) -> Style:
            return Style(color=c.rich_color, bgcolor=bgc.rich_color if bgc else None, bold=bold)

        self._pal = {
            "bg": Style(bgcolor=bg.rich_color),
            "fg": st(fg), "muted": st(muted), "faint": st(faint),
            "err": st(err, bold=True), "warn": st(warn), "cause": Style(color=bg.rich_color,
                                                                        bgcolor=err.rich_color, bold=True),
            "sym": st(acc, bold=True), "info": st(ok.blend(fg, 0.5)),
            "culprit_bg": Style(bgcolor=culprit_bg.rich_color),
            "cursor_bg": Style(bgcolor=cursor_bg.rich_color),
            "label": st(fg), "host": st(fg, bold=True),
            "label_culprit": Style(color=bg.rich_color, bgcolor=err.rich_color, bold=True),
            "label_cascade": st(acc, bold=True),
            "label_cursor": Style(color=bg.rich_color, bgcolor=prim.rich_color, bold=True),
            "axis": st(muted), "tick": st(fg, bold=True), "ff": st(err, bold=True),
            "silent": st(err.blend(bg, 0.4)),
            "bound": st(bound, bold=True), "bound_bg": Style(bgcolor=bound.blend(bg, 0.75).rich_color),
            "label_incident": st(err, bold=True),
        }

    # ------------------------------------------------------------------ rows

    def _build_rows(self) -> None:
        """Host rows, each followed (unless folded) by its rank lanes and, when
        they fit on screen or the user asked (key v), one lane per node-level
        source; otherwise the host row itself draws the node-level events."""
        rows: list[Row] = []
        by_host: dict[str, list[Lane]] = {}
        for ln in self.all_lanes:
            if ln.first is None:   # no timed event: nothing to draw (still in the event list)
                continue
            by_host.setdefault(ln.host, []).append(ln)
        split = self.split_nodes
        if split is None:   # auto: split when everything fits
            need = sum(1 + (0 if h in self.collapsed else len(v)) for h, v in by_host.items())
            split = need <= max(self.body_height, 1)
        self.nodes_split = split
        for host, lanes in by_host.items():
            ranks = [ln for ln in lanes if ln.rank is not None]
            nodes = [ln for ln in lanes if ln.rank is None]
            folded = host in self.collapsed
            draw = tuple(lanes) if (folded or split) else tuple(nodes) or tuple(lanes)
            rows.append(Row("host", host, lanes=draw))
            if folded:
                continue
            rows.extend(Row("lane", host, lane=ln) for ln in ranks)
            if split:
                rows.extend(Row("lane", host, lane=ln) for ln in nodes)
        keep = self.rows[self.cursor_row] if self.rows and self.cursor_row < len(self.rows) else None
        self.rows = rows
        self.virtual_size = Size(self.size.width, len(rows) + AXIS_ROWS)
        if keep is not None:
            for i, r in enumerate(rows):
                if r.kind == keep.kind and r.host == keep.host and r.lane == keep.lane:
                    self.cursor_row = i
                    break
            else:
                for i, r in enumerate(rows):
                    if r.kind == "host" and r.host == keep.host:
                        self.cursor_row = i
                        break
        self.cursor_row = min(self.cursor_row, max(len(rows) - 1, 0))

    def lane_row(self, host: str | None, rank: int | None, source: str | None = None) -> int | None:
        for i, r in enumerate(self.rows):
            if r.kind == "lane" and r.lane and r.lane.host == host and r.lane.rank == rank and (
                    rank is not None or source is None or r.lane.source == source):
                return i
        for i, r in enumerate(self.rows):
            if r.kind == "host" and r.host == host:
                return i
        return None

    def ensure_lane_visible(self, host: str | None, rank: int | None, source: str | None = None) -> int | None:
        if host in self.collapsed:
            self.collapsed.discard(host)
            self._build_rows()
        return self.lane_row(host, rank, source)

    @property
    def body_height(self) -> int:
        return max(self.size.height - AXIS_ROWS, 1)

    @property
    def label_w(self) -> int:
        w = self.size.width
        return max(10, min(24, w // 5))

    @property
    def ncols(self) -> int:
        return max(self.size.width - self.label_w - 1, 1)

    @property
    def dt(self) -> float:
        return (self.t1 - self.t0) / self.ncols

    def col_of(self, t: float) -> int:
        return int(math.floor((t - self.t0) / self.dt))

    # ------------------------------------------------------------------ state changes

    def _set_window(self, t0: float, t1: float, cursor: float | None = None) -> None:
        span = max(t1 - t0, MIN_SPAN)
        self.t0, self.t1 = t0, t0 + span
        if cursor is not None:
            self.cursor_t = cursor
        if self.cursor_t is None or not (self.t0 <= self.cursor_t < self.t1):
            self.cursor_t = min(max(self.cursor_t if self.cursor_t is not None else self.t0, self.t0),
                                self.t1 - span / self.ncols / 2)
        self.request_load()
        self._moved()

    def _set_row(self, row: int, center: bool = False, recenter: bool = False) -> None:
        if not self.rows:
            return
        self.cursor_row = max(0, min(row, len(self.rows) - 1))
        visible = self.top <= self.cursor_row < self.top + self.body_height
        if recenter or (center and not visible):
            self.top = self.cursor_row - self.body_height // 2
        elif self.cursor_row < self.top:
            self.top = self.cursor_row
        elif self.cursor_row >= self.top + self.body_height:
            self.top = self.cursor_row - self.body_height + 1
        self.top = max(0, min(self.top, max(len(self.rows) - self.body_height, 0)))
        self._centered = center or recenter
        self.request_load()
        self._moved()

    def current_row(self) -> Row | None:
        return self.rows[self.cursor_row] if 0 <= self.cursor_row < len(self.rows) else None

    def _moved(self) -> None:
        r = self.current_row()
        self.post_message(self.CursorMoved(self.cursor_t, r.lane if r else None, r.host if r else None))
        self.refresh()

    def jump_to(self, t: float, host: str | None = None, rank: int | None = None,
                source: str | None = None) -> None:
        """Put the cursor on time t (and on a lane), zooming out if needed."""
        if host is not None or rank is not None:
            row = self.ensure_lane_visible(host, rank, source)
            if row is not None:
                self._set_row(row, center=True)
        if not (self.t0 <= t < self.t1):
            span = self.t1 - self.t0
            self._set_window(t - span / 2, t + span / 2, cursor=t)
        else:
            self.cursor_t = t
            self._moved()

    # ------------------------------------------------------------------ loading

    def on_resize(self, event: events.Resize) -> None:
        if self.all_lanes:
            self._build_rows()
        self.virtual_size = Size(self.size.width, len(self.rows) + AXIS_ROWS)
        self._set_row(self.cursor_row, recenter=self._centered) if self.rows else None
        self.request_load()

    def _visible_lanes(self) -> list[Lane]:
        out: list[Lane] = []
        for r in self.rows[self.top:self.top + self.body_height]:
            if r.kind == "lane" and r.lane:
                out.append(r.lane)
            elif r.kind == "host":
                out.extend(r.lanes)
        return list(dict.fromkeys(out))

    def _token(self) -> tuple:
        return (self.t0, self.t1, self.ncols, self.top, self.body_height, len(self.rows))

    def request_load(self) -> None:
        if not self.rows or self.extent is None or not self.is_mounted:
            return
        tok = self._token()
        if tok == self.data_token:
            return
        self.fetching = True
        self._load(tok, self.t0, self.t1, self.ncols, self._visible_lanes())

    @work(thread=True, exclusive=True, group="timeline-buckets")
    def _load(self, token, t0, t1, n, lanes) -> None:
        try:
            data = self.store.buckets(t0, t1, n, lanes)
        except Exception as exc:  # shown in the status line, never a crash
            data = {"__error__": str(exc)}
        self.post_message(self.Loaded(token, data))

    def on_timeline_loaded(self, msg: "Timeline.Loaded") -> None:
        msg.stop()
        if "__error__" in msg.data:
            self.status = f"query failed: {msg.data['__error__']}"
            self.data = {}
        else:
            self.data = msg.data
        self.data_token = msg.token
        self.fetching = msg.token != self._token()
        if self.fetching:
            self.request_load()
        self.refresh()

    # ------------------------------------------------------------------ drawing

    def render_line(self, y: int) -> Strip:
        w = self.size.width
        p = self._pal
        if not p:
            return Strip.blank(w)
        if not self.rows or self.extent is None:
            if y == 0:
                return Strip([Segment((" " + (self.status or "no timed events in this store")).ljust(w),
                                      p["muted"] + p["bg"])], w)
            return Strip.blank(w, p["bg"])
        if y < AXIS_ROWS:
            return self._axis_line(y, w)
        idx = self.top + y - AXIS_ROWS
        if idx >= len(self.rows):
            return Strip.blank(w, p["bg"])
        return self._row_line(idx, w)

    def _ticks(self) -> tuple[float, list[float]]:
        want = 14 * self.dt   # a label every >= 14 columns
        step = next((s for s in _STEPS if s >= want), _STEPS[-1])
        first = math.ceil(self.t0 / step) * step
        ticks = []
        t = first
        while t < self.t1 and len(ticks) < 500:
            ticks.append(t)
            t += step
        return step, ticks

    def _axis_line(self, y: int, w: int) -> Strip:
        p = self._pal
        lw = self.label_w
        n = self.ncols
        step, ticks = self._ticks()
        if y == 0:
            head = fmt_time(self.t0, 0)[:10] + " UTC"
            cells = [" "] * n
            for t in ticks:
                c = self.col_of(t)
                lab = _tick_label(t, step)
                if 0 <= c and c + len(lab) <= n:
                    cells[c:c + len(lab)] = list(lab)
            segs = [Segment(head[:lw].ljust(lw) + " ", p["muted"]), Segment("".join(cells), p["tick"])]
            return Strip(segs, w).adjust_cell_length(w, p["bg"]).apply_style(p["bg"])
        span = self.t1 - self.t0
        head = f"±{_fmt_span(span)} {'…' if self.fetching else ''}"
        cells = ["─"] * n
        styles = [p["axis"]] * n
        for t in ticks:
            c = self.col_of(t)
            if 0 <= c < n:
                cells[c] = "┴"
        bounds = self._bounds()
        for c in bounds:
            cells[c], styles[c] = "┃", p["bound"]
        if self.first_failure is not None:
            c = self.col_of(self.first_failure)
            if 0 <= c < n:
                cells[c], styles[c] = "▼", p["ff"]
        for c, aid in bounds.items():   # the attempt's number after its rule (else before), where the axis is free
            lab = f"#{aid}"
            for a in (c + 1, c - len(lab)):
                if 0 <= a and a + len(lab) <= n and all(x == "─" for x in cells[a:a + len(lab)]):
                    cells[a:a + len(lab)] = list(lab)
                    styles[a:a + len(lab)] = [p["bound"]] * len(lab)
                    break
        segs = [Segment(head[:lw].ljust(lw) + " ", p["muted"])] + [Segment(x, st) for x, st in zip(cells, styles)]
        return Strip(Segment.simplify(segs), w).adjust_cell_length(w, p["bg"]).apply_style(p["bg"])

    def _bounds(self) -> dict[int, int]:
        """Column -> attempt id, for each attempt start in the window (of a run that restarted)."""
        out: dict[int, int] = {}
        for a in self.attempts:
            if a.start is not None and self.t0 <= a.start < self.t1:
                c = self.col_of(a.start)
                if 0 <= c < self.ncols:
                    out[c] = a.id
        return out

    def _cols(self, t0: float, t1: float) -> tuple[int, int]:
        """The columns [first, last] that times t0..t1 cover (either may be infinite), clipped to
        one column beyond the window."""
        n = self.ncols
        a = -1 if t0 < self.t0 else min(self.col_of(t0), n)
        b = n if t1 >= self.t1 else max(self.col_of(t1), -1)
        return a, b

    def _is_culprit(self, lane: Lane | None, host: str) -> bool:
        return self._names(lane, host, *self.culprit)

    @staticmethod
    def _names(lane: Lane | None, host: str, ch: str | None, cr: int | None) -> bool:
        """Whether a verdict naming host ch / rank cr names this row (a host row: its host; a rank
        lane: its rank; a node-level lane: a verdict on its host without a rank)."""
        if ch is None and cr is None:
            return False
        if lane is None:
            return ch is not None and host == ch
        if cr is None:
            return lane.host == ch and lane.rank is None
        return lane.rank == cr and (ch is None or lane.host == ch)

    def _is_cascade(self, lane: Lane | None, host: str) -> bool:
        for h, r in self.cascade:
            if lane is None:
                if h == host:
                    return True
            elif lane.host == h and (r is None or lane.rank == r):
                return True
        return False

    def _silent(self, lane: Lane) -> bool:
        if lane.last is None or self.extent is None:
            return False
        peers = [ln.last for ln in self.all_lanes if ln.last is not None and (ln.rank is None) == (lane.rank is None)]
        if not peers:
            return False
        return max(peers) - lane.last > self.silence_gap

    def _row_line(self, idx: int, w: int) -> Strip:
        p = self._pal
        r = self.rows[idx]
        lw = self.label_w
        n = self.ncols
        is_cursor = idx == self.cursor_row
        culprit = self._is_culprit(r.lane, r.host)
        cascade = (not culprit) and self._is_cascade(r.lane, r.host)
        # A run that restarted: each failed attempt's culprit is shaded over its own attempt only;
        # one that is not the shown incident's gets a hollow marker.
        spans = [self._cols(a, b) for h, rk, a, b in self._spans if self._names(r.lane, r.host, h, rk)]
        incident = bool(spans) and not culprit
        lanes = r.lanes if r.kind == "host" else (r.lane,)
        # label
        if r.kind == "host":
            mark = "▸" if r.host in self.collapsed else "▾"
            nerr = sum(ln.errors for ln in lanes)
            label = f"{mark} {safe(r.host)}"   # log text: never a terminal control
            extra = (f" ✖{nerr}" if nerr else "")
            label = _fit_mid(label, lw - len(extra)) + extra
            lstyle = p["host"]
        else:
            ln = r.lane
            pre = "▶ " if culprit else "▷ " if incident else "  "
            label = pre + safe(ln.label)
            if self._silent(ln):
                label += " ⏹"
            lstyle = p["label"]
        if culprit:
            lstyle = p["label_culprit"]
        elif incident:
            lstyle = p["label_incident"]
        elif cascade:
            lstyle = p["label_cascade"]
        if is_cursor:
            lstyle = (p["label_culprit"] + Style(underline=True)) if culprit else p["label_cursor"]
        label = label[:lw].ljust(lw)
        segs = [Segment(label, lstyle), Segment("│" if not culprit else "┃", p["err"] if culprit else p["faint"])]
        # cells
        merged: dict[int, Bucket] = {}
        fresh = self.data_token is not None and self.data_token[:3] == (self.t0, self.t1, n)
        if fresh:
            for ln in lanes:
                for b, bk in self.data.get(ln.key, {}).items():
                    m = merged.get(b)
                    if m is None:
                        merged[b] = Bucket(bk.count, bk.sev, bk.cause, bk.symptom)
                    else:
                        m.count += bk.count
                        m.sev = max(m.sev, bk.sev)
                        m.cause |= bk.cause
                        m.symptom |= bk.symptom
        firsts = [ln.first for ln in lanes if ln.first is not None]
        lasts = [ln.last for ln in lanes if ln.last is not None]
        c_first = self.col_of(min(firsts)) if firsts else n
        c_last = self.col_of(max(lasts)) if lasts else -1
        silent = r.kind == "lane" and self._silent(r.lane)
        maxc = max((b.count for b in merged.values()), default=1)
        cur_col = self.col_of(self.cursor_t) if self.cursor_t is not None else -1
        row_bg = p["culprit_bg"] if culprit and not spans else None   # attempts unknown: the whole row
        bounds = self._bounds()
        for c in range(n):
            bk = merged.get(c)
            if bk is not None:
                if bk.cause:
                    ch, st = "✖", p["cause"]
                elif bk.sev >= ERROR_SEV:
                    ch, st = "●", (p["sym"] if bk.symptom else p["err"])
                elif bk.symptom:
                    ch, st = "◆", p["sym"]
                elif bk.sev >= SEV_RANK["warning"]:
                    ch, st = "▲", p["warn"]
                else:
                    lvl = int((len(_BARS) - 1) * math.log1p(bk.count) / math.log1p(max(maxc, 1)))
                    ch, st = _BARS[max(0, min(lvl, len(_BARS) - 1))], p["info"]
            elif c_first <= c <= c_last:
                ch, st = "─", p["faint"]
            elif silent and c > c_last >= -1 and c_last < n:
                ch, st = "·", p["silent"]
            else:
                ch, st = " ", p["fg"]
            if c in bounds:   # an attempt starts here: a rule, or its colour behind an event
                ch, st = ("┊", p["bound"]) if bk is None else (ch, st + p["bound_bg"])
            if c == cur_col:
                st = st + p["cursor_bg"]
            elif is_cursor:
                st = st + p["cursor_bg"] if ch == " " else st
            elif row_bg is not None:
                st = st + row_bg
            elif spans and any(a <= c <= b for a, b in spans):
                st = st + p["culprit_bg"]
            segs.append(Segment(ch, st))
        return Strip(Segment.simplify(segs), w).adjust_cell_length(w, p["bg"]).apply_style(p["bg"])

    # ------------------------------------------------------------------ actions

    def action_move(self, d: int) -> None:
        if self.cursor_t is None:
            return
        t = self.cursor_t + d * self.dt
        span = self.t1 - self.t0
        if t < self.t0:
            self._set_window(self.t0 - span / 4, self.t1 - span / 4, cursor=t)
        elif t >= self.t1:
            self._set_window(self.t0 + span / 4, self.t1 + span / 4, cursor=t)
        else:
            self.cursor_t = t
            self._moved()

    def action_pan(self, d: int) -> None:
        span = self.t1 - self.t0
        shift = d * span / 4
        self._set_window(self.t0 + shift, self.t1 + shift,
                         cursor=None if self.cursor_t is None else self.cursor_t + shift)

    def action_row(self, d: int) -> None:
        self._set_row(self.cursor_row + d)

    def action_zoom(self, factor: float) -> None:
        c = self.cursor_t if self.cursor_t is not None else (self.t0 + self.t1) / 2
        span = max((self.t1 - self.t0) * factor, MIN_SPAN)
        if self.extent and factor > 1:
            span = min(span, max((self.extent[1] - self.extent[0]) * 1.5, MIN_SPAN * 10))
        frac = (c - self.t0) / max(self.t1 - self.t0, 1e-9)
        t0 = c - frac * span
        self._set_window(t0, t0 + span, cursor=c)

    def action_fit(self) -> None:
        win = self.incident or self.extent
        if win:
            self._set_window(win[0], win[1],
                             cursor=self.first_failure if self.first_failure is not None else win[0])

    def action_show_all(self) -> None:
        if self.extent:
            span = self.extent[1] - self.extent[0]
            pad = max(span * 0.01, MIN_SPAN)
            self._set_window(self.extent[0] - pad, self.extent[1] + pad)

    def action_first_failure(self) -> None:
        if self.first_failure is None:
            self.notify("no failure found in this store", severity="warning")
            return
        ch, cr = self.culprit
        self.jump_to(self.first_failure, ch, cr) if (ch or cr is not None) else self.jump_to(self.first_failure)

    def action_next_error(self, d: int) -> None:
        if self.cursor_t is None:
            return
        t = self.cursor_t + (self.dt if d > 0 else 0)
        self._find_error(t, d)

    @work(thread=True, exclusive=True, group="timeline-jump")
    def _find_error(self, t: float, d: int) -> None:
        hit = self.store.next_error(t, d)
        self.app.call_from_thread(self._jump_hit, hit, d)

    def _jump_hit(self, hit, d: int, what: str = "error") -> None:
        if hit is None:
            self.notify(f"no {'next' if d > 0 else 'previous'} {what}", severity="information")
            return
        t, (h, r, s) = hit
        self.jump_to(t, h, r, s)

    def culprit_lanes(self) -> list[Lane]:
        """The lanes of the culprit shown (its rank's lane; a node-level verdict: its host's
        node-level lanes)."""
        ch, cr = self.culprit
        return [ln for ln in self.all_lanes if self._names(ln, ln.host, ch, cr)]

    def action_culprit_event(self, d: int) -> None:
        """The culprit's next (d > 0) or previous event from the cursor, whatever its severity: a
        rank that died often logged nothing worse than info (the launcher reports its death)."""
        lanes = self.culprit_lanes()
        if not lanes or self.cursor_t is None:
            self.notify("no culprit to step through", severity="information")
            return
        self._find_culprit_event(self.cursor_t, d, lanes)

    @work(thread=True, exclusive=True, group="timeline-jump")
    def _find_culprit_event(self, t: float, d: int, lanes: list[Lane]) -> None:
        hit = self.store.next_error(t, d, lanes=lanes, min_sev=SEV_RANK["debug"])
        self.app.call_from_thread(self._jump_hit, hit, d, "culprit event")

    def action_next_lane_error(self, d: int) -> None:
        i = self.cursor_row
        for _ in range(len(self.rows)):
            i += d
            if not (0 <= i < len(self.rows)):
                self.notify("no more lanes with errors", severity="information")
                return
            r = self.rows[i]
            lanes = r.lanes if r.kind == "host" else (r.lane,)
            if r.kind == "host" and r.host not in self.collapsed and self.nodes_split:
                continue   # its lanes follow
            if any(ln.errors or ln.causes for ln in lanes):
                self._set_row(i)
                return

    def action_toggle_host(self) -> None:
        r = self.current_row()
        if r is None:
            return
        if r.host in self.collapsed:
            self.collapsed.discard(r.host)
        else:
            self.collapsed.add(r.host)
        self._build_rows()
        for i, row in enumerate(self.rows):
            if row.kind == "host" and row.host == r.host:
                self._set_row(i)
                break
        self.data_token = None
        self.request_load()
        self.refresh()

    def action_toggle_split(self) -> None:
        self.split_nodes = not self.nodes_split
        self._build_rows()
        self._set_row(self.cursor_row)
        self.data_token = None
        self.request_load()
        self.refresh()

    def action_toggle_all(self) -> None:
        hosts = {ln.host for ln in self.all_lanes}
        self.collapsed = set() if self.collapsed >= hosts else set(hosts)
        self._build_rows()
        self._set_row(self.cursor_row)
        self.data_token = None
        self.request_load()
        self.refresh()

    # ------------------------------------------------------------------ mouse

    def on_click(self, event: events.Click) -> None:
        self.focus()
        if event.y >= AXIS_ROWS:
            self._set_row(self.top + event.y - AXIS_ROWS)
        if event.x > self.label_w and self.cursor_t is not None:
            self.cursor_t = self.t0 + (event.x - self.label_w - 1 + 0.5) * self.dt
            self._moved()
        elif event.x < self.label_w and event.y >= AXIS_ROWS and event.chain >= 2:
            self.action_toggle_host()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        if event.ctrl or event.y < AXIS_ROWS:
            self._zoom_at(event.x, 0.8)
        elif event.shift:
            self.action_pan(-1)
        else:
            self._scroll(-3)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        if event.ctrl or event.y < AXIS_ROWS:
            self._zoom_at(event.x, 1.25)
        elif event.shift:
            self.action_pan(1)
        else:
            self._scroll(3)

    def on_mouse_scroll_left(self, event: events.MouseScrollLeft) -> None:
        event.stop()
        self.action_pan(-1)

    def on_mouse_scroll_right(self, event: events.MouseScrollRight) -> None:
        event.stop()
        self.action_pan(1)

    def _scroll(self, d: int) -> None:
        self._centered = False
        self.top = max(0, min(self.top + d, max(len(self.rows) - self.body_height, 0)))
        self.cursor_row = max(self.top, min(self.cursor_row, self.top + self.body_height - 1))
        self.request_load()
        self._moved()

    def _zoom_at(self, x: int, factor: float) -> None:
        if x > self.label_w:
            self.cursor_t = self.t0 + (x - self.label_w - 1 + 0.5) * self.dt
        self.action_zoom(factor)

    # ------------------------------------------------------------------ text for tests/status

    def describe(self) -> str:
        return (f"{fmt_time(self.t0)} → {fmt_time(self.t1)} (span {_fmt_span(self.t1 - self.t0)}, "
                f"1 col = {_fmt_span(self.dt)})")


def _fmt_span(s: float) -> str:
    if s < 1:
        return f"{s * 1000:.0f}ms" if s >= 0.001 else f"{s * 1e6:.0f}µs"
    if s < 120:
        return f"{s:.1f}s" if s < 10 else f"{s:.0f}s"
    if s < 7200:
        return f"{s / 60:.0f}m"
    if s < 172800:
        return f"{s / 3600:.1f}h"
    return f"{s / 86400:.1f}d"
