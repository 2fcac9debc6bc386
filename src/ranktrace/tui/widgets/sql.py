"""The SQL console tab: read-only SQL on the store, canned queries, a result grid.

Its own module: TextArea (and this module) are imported when the console is
mounted, after the first screen is drawn (app.py, _painted)."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, DataTable, Select, Static, TextArea

from ...safe_text import safe
from ..data import QueryResult, StoreData
from .panes import _clip


# --------------------------------------------------------------------------- SQL console

class SqlConsole(Vertical):
    DEFAULT_CSS = """
    SqlConsole { height: 1fr; }
    SqlConsole #sql-bar { height: 3; }
    SqlConsole #canned { width: 1fr; }
    SqlConsole Button { min-width: 8; }
    SqlConsole #sql-text { height: 6; }
    SqlConsole #sql-status { height: 1; padding: 0 1; }
    SqlConsole #sql-status.error { color: $error; text-style: bold; }
    SqlConsole #sql-grid { height: 1fr; }
    """

    BINDINGS = [Binding("ctrl+r", "run", "run SQL"), Binding("ctrl+g", "cancel", "cancel SQL"),
                Binding("escape", "leave_editor", "leave editor", show=False)]

    def action_leave_editor(self) -> None:
        """Esc in the editor moves to the results, where 1/2/3, q and ? work again."""
        self.query_one("#sql-grid", DataTable).focus()

    class Done(Message):
        def __init__(self, result: QueryResult) -> None:
            super().__init__()
            self.result = result

    def __init__(self, store: StoreData, limit: int = 500, **kw) -> None:
        super().__init__(**kw)
        self.store = store
        self.limit = limit
        self.canned: list = []   # read in compose: the console is mounted after the first screen
        self.running = False
        self.show_timing = True   # the snapshot tests turn it off
        self.result: QueryResult | None = None

    def compose(self) -> ComposeResult:
        self.canned = self.store.canned_queries()
        opts = [(f"{q.name} — {q.description}"[:80], i) for i, q in enumerate(self.canned)]
        with Horizontal(id="sql-bar"):
            yield Select(opts, prompt="canned queries" if opts else "no canned queries in queries/canned/",
                         id="canned", disabled=not opts)
            yield Button("Run", id="run", variant="primary")
            yield Button("Cancel", id="cancel")
        yield TextArea(self.store.default_query(), id="sql-text", language=None)
        yield Static("ctrl+r runs the query (read-only), ctrl+g cancels", id="sql-status")
        yield DataTable(id="sql-grid", cursor_type="cell")

    @on(Select.Changed, "#canned")
    def _pick(self, event: Select.Changed) -> None:
        if isinstance(event.value, int):
            self.query_one("#sql-text", TextArea).text = self.canned[event.value].sql

    @on(Button.Pressed, "#run")
    def _run_btn(self) -> None:
        self.action_run()

    @on(Button.Pressed, "#cancel")
    def _cancel_btn(self) -> None:
        self.action_cancel()

    def run_text(self, sql: str) -> None:
        self.query_one("#sql-text", TextArea).text = sql
        self.action_run()

    def action_run(self) -> None:
        if self.running:
            return
        sql = self.query_one("#sql-text", TextArea).text
        if not sql.strip():
            return
        self.running = True
        st = self.query_one("#sql-status", Static)
        st.remove_class("error")
        st.update("running… (ctrl+g cancels)")
        self._run(sql)

    def action_cancel(self) -> None:
        if self.running and self.store.interrupt():
            self.query_one("#sql-status", Static).update("cancelling…")

    @work(thread=True, exclusive=True, group="sql")
    def _run(self, sql: str) -> None:
        self.post_message(self.Done(self.store.run_sql(sql, self.limit)))

    def on_sql_console_done(self, msg: "SqlConsole.Done") -> None:
        msg.stop()
        self.running = False
        res = self.result = msg.result
        st = self.query_one("#sql-status", Static)
        grid = self.query_one("#sql-grid", DataTable)
        if res.error:
            st.add_class("error")
            st.update(_clip(res.error, 400))
            return
        st.remove_class("error")
        st.update(Text(res.summary if self.show_timing else res.summary.split(" in ")[0]))
        grid.clear(columns=True)
        grid.add_columns(*[Text(safe(c)) for c in res.columns])
        for r in res.rows:
            grid.add_row(*[_clip("" if v is None else (v.isoformat(sep=" ") if hasattr(v, "isoformat")
                                                         else str(v)), 60) for v in r])
