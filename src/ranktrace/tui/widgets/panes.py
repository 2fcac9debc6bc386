"""The other panes: verdict header, event list, detail, evidence, help (the SQL
console: widgets/sql.py)."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from ...safe_text import safe
from .timeline import _fit_mid
from ..data import EventRow, Filters, StoreData, fmt_time, parse_time

PAGE = 200
# A new list (the first screen's among them) starts with fewer rows: DataTable
# measures and lays out every row it is given, and ~20 are on screen; the
# next pages (PAGE) load as the cursor nears the end.
FIRST_PAGE = 64
SEV_STYLE = {"critical": "bold red", "error": "red", "warning": "yellow", "notice": "cyan",
             "info": "", "debug": "dim"}
ROLE_STYLE = {"cause": "bold reverse red", "symptom": "magenta", "lifecycle": "cyan", "info": "dim"}


def _short_time(t: float | None) -> str:
    return fmt_time(t)[11:] if t is not None else "–"


def _clip(s: str, n: int) -> Text:
    """Plain text for a cell (a Text, so DataTable never parses it as markup;
    control characters and bidi overrides shown escaped: safe_text)."""
    s = safe((s or "").replace("\n", "⏎ "))
    return Text(s if len(s) <= n else s[: n - 1] + "…", no_wrap=True)


def _plain(s) -> Text:
    return Text("" if s is None else safe(s), no_wrap=True)


# --------------------------------------------------------------------------- header

class VerdictHeader(Static):
    """Kind, culprit, time, confidence and the one-line summary."""

    DEFAULT_CSS = """
    VerdictHeader { height: auto; max-height: 3; padding: 0 1; background: $panel; }
    """

    def show_loading(self, db: str) -> None:
        self.update(Text.assemble(("ranktrace ", "bold"), (safe(db), "dim"), "  diagnosing…"))

    def show_verdict(self, store: StoreData, counts: dict | None, shown=None, attempts: list = ()) -> None:
        """The run's verdict; for a run that restarted (two attempts or more), the verdict of the
        attempt `shown` (tui/attempts.py Attempt) with its place among the attempts and incidents."""
        v = store.verdict
        stats = ""
        if counts:
            pods = f"{counts['pods']} pods · " if counts.get("pods") else ""
            stats = (f"{counts['events']:,} events · {counts['files']} files · {counts['hosts']} hosts · "
                     f"{pods}{counts['ranks']} ranks")
        if not v or not v.get("verdict"):
            why = f" ({safe(store.verdict_error)})" if store.verdict_error else ""
            self.update(Text.assemble(("no diagnosis available", "bold yellow"), (why, "dim"), "\n",
                                      (stats, "dim")))
            return
        vd, imp, tag, note = v["verdict"], v.get("impact"), "", ""
        if len(attempts) > 1 and shown is not None:
            failed = [a for a in attempts if a.failed]
            tag = f"attempt {shown.id} of {len(attempts)}"
            if shown.failed:
                tag += f" · incident {failed.index(shown) + 1} of {len(failed)}"
            top = store.top_attempt(attempts)
            if top is None or shown.id != top.id:
                if not shown.verdict:
                    self._show_outcome(shown, vd, top, tag, stats)
                    return
                vd, imp = shown.verdict, shown.cost
            note = incident_note(v, shown)
        head = Text.assemble(
            *_verdict_head(vd),
            (f"  {tag}" if tag else "", "bold"),
        )
        if self.size.width == 0 or head.cell_len + 3 + len(stats) <= self.size.width - 2:
            head.append("   " + stats, "dim")
        summary = safe(vd.get("summary") or "")
        from ...correlate.impact import impact_line   # issue 14: what the incident cost
        cost = impact_line(imp)
        if cost:
            summary = safe(cost.split(" (", 1)[0]) + " · " + summary
        self.update(Text.assemble(head, "\n", (note, "bold"), (summary, "italic")))

    def _show_outcome(self, a, run_vd: dict, top, tag: str, stats: str) -> None:
        """An attempt without a verdict of its own (completed, running, cancelled without a
        failure, or before the diagnosis): its outcome and span, then the run's verdict."""
        out = (a.outcome or "unknown").upper()
        span = f"  {fmt_time(a.start, 0)} → {fmt_time(a.end, 0)[11:]} UTC" if a.start is not None else ""
        step = f"  reached step {a.max_step}" if a.max_step is not None else ""
        head = Text.assemble((f" {out} ", "bold reverse green" if a.outcome in ("completed", "running")
                              else "bold reverse yellow"), " ", (tag, "bold"), span, (step, "dim"))
        if self.size.width == 0 or head.cell_len + 3 + len(stats) <= self.size.width - 2:
            head.append("   " + stats, "dim")
        where = f" (attempt {top.id})" if top is not None else ""
        run = Text.assemble(("the run's verdict: ", "dim"), *_verdict_head(run_vd)[:3], (where, "dim"),
                            ("   } / { incidents · ] / [ attempts", "dim"))
        self.update(Text.assemble(head, "\n", run))


def who(vd: dict) -> str:
    """The culprit a verdict names: rank, host, pod, GPU (log text: made safe)."""
    parts = []
    if vd.get("rank") is not None:
        parts.append(f"rank {vd['rank']}")
    if vd.get("host"):
        parts.append(f"on {vd['host']}")
    if vd.get("pod"):
        parts.append(f"pod {vd['pod']}")
    if vd.get("gpu") not in (None, ""):
        parts.append(f"GPU {vd['gpu']}")
    return safe(" ".join(parts))


def _verdict_head(vd: dict) -> list[tuple[str, str] | str]:
    """The header's first line for a verdict: kind, culprit, time, confidence (Text.assemble parts)."""
    kind = safe(vd.get("kind") or "unknown")
    t = parse_time(vd.get("time"))
    conf = vd.get("confidence")
    return [(f" {kind.upper()} ", "bold reverse red" if kind != "none" else "bold reverse green"), " ",
            (who(vd) or "no single culprit", "bold"),
            ("  at " + fmt_time(t) + " UTC" if t is not None else "", ""),
            (f"  confidence {conf:.2f}" if isinstance(conf, (int, float)) else "", "dim")]


def run_notes(doc: dict, attempt: int | None = None) -> list[str]:
    """What the verdict JSON says of a run that restarted beyond each attempt's verdict: the nodes
    (GPUs) a root cause recurs on (`recurrence`) and the advice to stop restarting (`stop`); only
    those that name attempt `attempt` when given. Log text: made safe."""
    notes = []
    for r in doc.get("recurrence") or []:
        if isinstance(r, dict) and (attempt is None or attempt in (r.get("attempts") or [])):
            gpu = f" GPU {r['gpu']}" if r.get("gpu") is not None else ""
            ids = ", ".join(str(i) for i in r.get("attempts") or [])
            notes.append(safe(f"recurs on {r.get('host')}{gpu}: attempts {ids}"))
    stop = doc.get("stop")
    if isinstance(stop, dict) and (attempt is None or attempt in (stop.get("attempts") or [])):
        notes.append(safe("STOP restarting: " + str(stop.get("why") or "")))
    return notes


def incident_note(doc: dict, a) -> str:
    """run_notes for attempt a, as the header's line 2 begins (ends with " · " when not empty)."""
    notes = run_notes(doc, a.id)
    return " · ".join(notes) + " · " if notes else ""


# --------------------------------------------------------------------------- event list

class EventList(DataTable):
    """A page of events from the timeline cursor's time, in aligned order.
    More pages load as the cursor reaches the end (never all events)."""

    BINDINGS = [Binding("enter", "open", "jump to event", show=False)]

    class Selected(Message):
        def __init__(self, row: EventRow) -> None:
            super().__init__()
            self.row = row

    class Opened(Message):
        def __init__(self, row: EventRow) -> None:
            super().__init__()
            self.row = row

    class Page(Message):
        """append: False (a new list), True (after the last row), "before";
        limit: the rows asked for (fewer: nothing more that way)."""
        def __init__(self, token: tuple, rows: list[EventRow], append: bool | str, limit: int = PAGE) -> None:
            super().__init__()
            self.token = token
            self.rows = rows
            self.append = append
            self.limit = limit

    def __init__(self, store: StoreData, **kw) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kw)
        self.store = store
        self.filters = Filters()
        self.start: float | None = None
        self.items: list[EventRow] = []
        self.token: tuple = ()
        self.exhausted = False
        self.at_start = False        # nothing before items[0]
        self.before = 0              # rows paged in above the list's start
        self.fetching = False
        self.select_id: int | None = None
        self.show_pod = False

    def on_mount(self) -> None:
        self.add_column("time", width=12, key="time")
        self.add_column("host", width=10, key="host")
        self.show_pod = self.store._pod_count() > 0   # Kubernetes: which pod said it
        if self.show_pod:
            self.add_column("pod", width=14, key="pod")
        self.add_column("rk", width=4, key="rank")
        self.add_column("sev", width=5, key="sev")
        self.add_column("role", width=7, key="role")
        self.add_column("message", key="msg")

    def load(self, start: float | None, filters: Filters | None = None, select_id: int | None = None) -> None:
        """Load the first page from aligned time `start`; put the cursor on
        event `select_id` when it is on that page."""
        if filters is not None:
            self.filters = filters
        self.select_id = select_id
        self.start = start
        self.token = (start, self.filters.describe())
        self.exhausted = False
        self.fetching = True
        self._fetch(self.token, start, self.filters, 0, False)

    @work(thread=True, exclusive=True, group="event-page")
    def _fetch(self, token, start, filters, offset, append) -> None:
        limit = PAGE if append else FIRST_PAGE
        try:
            if append == "before":
                rows = self.store.events_before(self.items[0], filters, limit=limit)
            else:
                rows = self.store.events_page(start, filters, offset=offset, limit=limit)
        except Exception as exc:
            self.app.call_from_thread(self.notify, f"event query failed: {safe(exc)}", severity="error", markup=False)
            rows = []
        self.post_message(self.Page(token, rows, append, limit))

    def _add(self, r: EventRow, width: int) -> None:
        self.add_row(
            _plain(_short_time(r.time)),
            _clip(r.host or "", 10),
            *([_plain(_fit_mid(safe(r.pod or ""), 14))] if self.show_pod else []),
            _plain("" if r.rank is None else r.rank),
            Text(r.severity[:5], style=SEV_STYLE.get(r.severity, "")),
            Text(r.role[:7], style=ROLE_STYLE.get(r.role, "")),
            _clip(r.message, width),
        )

    def on_event_list_page(self, msg: "EventList.Page") -> None:
        msg.stop()
        if msg.token != self.token:
            return
        self.fetching = False
        width = max(self.size.width - 12 - 10 - 4 - 5 - 7 - 12 - (14 if self.show_pod else 0), 20)
        if msg.append == "before":
            # Earlier events go on top: the table is rebuilt (DataTable only
            # appends) and the cursor moves to the event just above where it was.
            if len(msg.rows) < msg.limit:
                self.at_start = True
            if not msg.rows:
                return
            self.items = msg.rows + self.items
            self.before += len(msg.rows)
            self.clear()
            for r in self.items:
                self._add(r, width)
            self.move_cursor(row=len(msg.rows) - 1)
            return
        if len(msg.rows) < msg.limit:
            self.exhausted = True
        if not msg.append:
            self.items = []
            self.before = 0
            self.at_start = self.start is None
            self.clear()
        for r in msg.rows:
            self.items.append(r)
            self._add(r, width)
        if not msg.append and self.items:
            i = next((k for k, r in enumerate(self.items) if r.event_id == self.select_id), 0)
            self.move_cursor(row=i)
            self.post_message(self.Selected(self.items[i]))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        i = event.cursor_row
        if 0 <= i < len(self.items):
            self.post_message(self.Selected(self.items[i]))
        if i >= len(self.items) - 5 and not self.exhausted and not self.fetching and self.items:
            self.fetching = True
            self._fetch(self.token, self.start, self.filters, len(self.items) - self.before, True)

    def action_cursor_up(self) -> None:
        """Up on the first row pages backward (the list opens at the cursor's
        time, so what came before is one key away)."""
        if self.cursor_row == 0 and self.items and not self.at_start and not self.fetching:
            self.fetching = True
            self._fetch(self.token, self.start, self.filters, 0, "before")
            return
        super().action_cursor_up()

    def action_open(self) -> None:
        i = self.cursor_row
        if 0 <= i < len(self.items):
            self.post_message(self.Opened(self.items[i]))


# --------------------------------------------------------------------------- detail

class DetailPane(VerticalScroll):
    DEFAULT_CSS = """
    DetailPane { padding: 0 1; }
    DetailPane > Static { width: 100%; }
    """

    class Loaded(Message):
        def __init__(self, event_id: int, text: Text) -> None:
            super().__init__()
            self.event_id = event_id
            self.text = text

    def __init__(self, store: StoreData, context: int = 5, **kw) -> None:
        super().__init__(**kw)
        self.store = store
        self.context_n = context
        self.event_id: int | None = None

    def compose(self) -> ComposeResult:
        yield Static("select an event", id="detail-text")

    def show(self, event_id: int) -> None:
        self.event_id = event_id
        self._load(event_id)

    @work(thread=True, exclusive=True, group="detail")
    def _load(self, event_id: int) -> None:
        e = self.store.event(event_id)
        ctx = self.store.context(event_id, self.context_n)
        self.post_message(self.Loaded(event_id, self.render_event(e, ctx)))

    @staticmethod
    def render_event(e: dict | None, ctx: list) -> Text:
        if not e:
            return Text("event not found")
        t = Text()
        ident = [f"{k}={e[k]}" for k in ("host", "rank", "local_rank", "task", "pid", "pod", "container", "gpu",
                                          "job_id", "step_id") if e.get(k) not in (None, "")]
        t.append(safe(" ".join(ident)) or "no identity", style="bold")
        t.append("\n")
        t.append(safe(f"{e.get('severity')} · {e.get('role')} · {e.get('kind') or '-'} · {e.get('format')}"
                      f" ({e.get('program') or '-'})") + "\n", style="dim")
        t.append(f"aligned  {fmt_time(e.get('aligned'))} UTC\n")
        t.append(f"logged   {fmt_time(e.get('orig'))} UTC  [{e.get('ts_kind')}]"
                 + (f"  as written: {safe(e['ts_text'])}" if e.get("ts_text") else "") + "\n")
        t.append(safe(f"{e.get('file')}:{e.get('line')}") + "\n", style="underline")
        for line, raw, me in ctx:
            for j, part in enumerate((raw or "").split("\n")):
                num = f"{line + j:>6} " if j == 0 else "       "
                t.append(num, style="dim")
                t.append(safe(part) + "\n", style="bold" if me else "dim")
        return t

    def on_detail_pane_loaded(self, msg: "DetailPane.Loaded") -> None:
        msg.stop()
        if msg.event_id == self.event_id:
            self.query_one("#detail-text", Static).update(msg.text)


# --------------------------------------------------------------------------- evidence

class EvidenceView(Vertical):
    DEFAULT_CSS = """
    EvidenceView { height: 1fr; }
    EvidenceView #hyp { height: auto; max-height: 40%; }
    EvidenceView #evi { height: 1fr; }
    EvidenceView .title { height: 1; padding: 0 1; background: $boost; text-style: bold; }
    """

    class Jump(Message):
        def __init__(self, item: dict) -> None:
            super().__init__()
            self.item = item

    def __init__(self, store: StoreData, **kw) -> None:
        super().__init__(**kw)
        self.store = store
        self.evidence: list[dict] = []

    def compose(self) -> ComposeResult:
        yield Static("hypotheses", classes="title")
        yield DataTable(id="hyp", cursor_type="row")
        yield Static("evidence (Enter: show in the timeline)", classes="title")
        yield DataTable(id="evi", cursor_type="row")

    def on_mount(self) -> None:
        self.refresh_verdict()

    def refresh_verdict(self) -> None:
        v = self.store.verdict or {}
        h = self.query_one("#hyp", DataTable)
        e = self.query_one("#evi", DataTable)
        # the columns are added by the first call, from on_mount or from the app (the view is mounted
        # after the first screen: the app may hand it the verdict before its own on_mount ran)
        if not h.columns:
            h.add_columns("score", "kind", "host", "rank", "why")
        if not e.columns:
            e.add_columns("time", "role", "where", "text")
        h.clear()
        e.clear()
        for x in v.get("hypotheses") or []:
            if not isinstance(x, dict):
                continue
            sc = x.get("score")
            h.add_row(_plain(f"{sc:.2f}" if isinstance(sc, (int, float)) else (sc or "")),
                      _plain(x.get("kind") or ""), _plain(x.get("host") or ""),
                      _plain("" if x.get("rank") is None else x["rank"]),
                      _clip(str(x.get("why") or ""), 100))
        self.evidence = [x for x in (v.get("evidence") or []) if isinstance(x, dict)]
        for x in self.evidence:
            where = f"{str(x.get('file') or '').rsplit('/', 1)[-1]}:{x.get('line', '')}"
            role = str(x.get("role") or "")
            e.add_row(_plain(_short_time(parse_time(x.get("time")))), Text(role, style=ROLE_STYLE.get(role, "")),
                      _clip(where, 40), _clip(str(x.get("text") or ""), 160))
        if not v:
            h.add_row(_plain(""), _plain(""), _plain(""), _plain(""), _plain("no diagnosis available"))

    @on(DataTable.RowSelected, "#evi")
    def _evi_selected(self, event: DataTable.RowSelected) -> None:
        i = event.cursor_row
        if 0 <= i < len(self.evidence):
            self.post_message(self.Jump(self.evidence[i]))


# --------------------------------------------------------------------------- help

class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90; max-width: 100%; height: 90%; border: round $primary;
                                  background: $surface; padding: 0 1; }
    """

    def __init__(self, sections: list[tuple[str, list[tuple[str, str]]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        t = Text()
        t.append("ranktrace tui — keys (Esc closes)\n", style="bold")
        for title, keys in self.sections:
            t.append(f"\n{title}\n", style="bold underline")
            for k, what in keys:
                t.append(f"  {k:<22}", style="bold")
                t.append(f"{what}\n")
        with VerticalScroll():
            yield Static(t, id="help-text")

    def action_dismiss(self) -> None:
        self.dismiss()


class FilterBar(Input):
    """`sev:error role:cause kind:oom host:n1 rank:5 text` — Enter applies, Esc closes."""
    DEFAULT_CSS = """
    FilterBar { dock: bottom; display: none; }
    FilterBar.open { display: block; }
    """


def __getattr__(name: str):
    # The SQL console lives in widgets/sql.py (TextArea costs every start
    # ~40 ms to import; the console is mounted after the first screen).
    if name == "SqlConsole":
        from .sql import SqlConsole
        return SqlConsole
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
