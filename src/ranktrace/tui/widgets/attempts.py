"""The Attempts tab (issue 27): one row per attempt of a run that restarted, its outcome and root
cause; Enter shows the attempt in the timeline. Mounted only for a run of two attempts or more."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from ...safe_text import safe
from ..data import fmt_time
from .panes import _clip, _plain, run_notes, who
from .timeline import _fmt_span

OUTCOME_STYLE = {"failed": "bold red", "cancelled": "yellow", "completed": "green", "running": "cyan"}


def _end(a) -> str:
    """An attempt's end: its time of day, the date too when it ends on another day than it began."""
    if a.end is None:
        return "(after the logs)"
    e = fmt_time(a.end, 0)
    return e[11:] if a.start is not None and fmt_time(a.start, 0)[:10] == e[:10] else e


class AttemptsView(Vertical):
    DEFAULT_CSS = """
    AttemptsView { height: 1fr; }
    AttemptsView .title { height: 1; padding: 0 1; background: $boost; text-style: bold; }
    AttemptsView #att-notes { height: auto; max-height: 6; padding: 0 1; }
    AttemptsView #att-table { height: 1fr; }
    """

    class Jump(Message):
        def __init__(self, attempt: int) -> None:
            super().__init__()
            self.attempt = attempt

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.attempts: list = []
        self._pending: tuple | None = None

    def compose(self) -> ComposeResult:
        yield Static("attempts", id="att-title", classes="title")
        yield Static("", id="att-notes")
        yield DataTable(id="att-table", cursor_type="row")

    def on_mount(self) -> None:
        if self._pending is not None:
            self.show(*self._pending)

    def show(self, attempts: list, shown: int | None, doc: dict | None) -> None:
        """The rows of `attempts` (tui/attempts.py), the cursor on attempt `shown`; what the
        verdict JSON `doc` says of the run as a whole (a recurring node, STOP) above them. Before
        the view is mounted: kept, and shown once it is."""
        self._pending = (attempts, shown, doc)
        if not self.is_mounted:
            return
        self.attempts = list(attempts)
        failed = [a for a in attempts if a.failed]
        self.query_one("#att-title", Static).update(Text(
            f"{len(attempts)} attempts · {len(failed)} failed · enter: show in the timeline · "
            "] / [: next / previous attempt · } / {: next / previous incident", no_wrap=True))
        notes = run_notes(doc or {})
        self.query_one("#att-notes", Static).update(Text("\n".join(notes), style="bold"))
        t = self.query_one("#att-table", DataTable)
        if not t.columns:
            t.add_columns("#", "start (UTC)", "end", "length", "outcome", "kind", "culprit", "conf",
                          "GPU-h lost", "step", "how it began")
        t.clear()
        for a in attempts:
            conf = (a.verdict or {}).get("confidence")
            gh = (a.cost or {}).get("gpu_hours")
            length = _fmt_span(a.end - a.start) if a.start is not None and a.end is not None else "–"
            where = f" ({str(a.file).rsplit('/', 1)[-1]}:{a.line})" if a.file else ""
            v = a.verdict or {}
            t.add_row(_plain(a.id), _plain(fmt_time(a.start, 0) if a.start is not None else "(before the logs)"),
                      _plain(_end(a)), _plain(length), Text(safe(a.outcome), style=OUTCOME_STYLE.get(a.outcome, "")),
                      _clip(v.get("kind") or "", 24), _clip(who(v), 40),
                      _plain(f"{conf:.2f}" if isinstance(conf, (int, float)) else ""),
                      _plain(f"{gh:g}" if isinstance(gh, (int, float)) else ""),
                      _plain("" if a.max_step is None else a.max_step), _clip(a.basis + where, 160))
        self.mark(shown)

    def mark(self, shown: int | None) -> None:
        """Put the cursor on attempt `shown`'s row."""
        i = next((k for k, a in enumerate(self.attempts) if a.id == shown), None)
        if self._pending is not None:
            self._pending = (self._pending[0], shown, self._pending[2])
        if i is not None and self.is_mounted:
            self.query_one("#att-table", DataTable).move_cursor(row=i)

    @on(DataTable.RowSelected, "#att-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        i = event.cursor_row
        if 0 <= i < len(self.attempts):
            self.post_message(self.Jump(self.attempts[i].id))
