"""Text a log controls never drives the terminal or becomes HTML (issue 15):
crafted lines, host names, file and archive member names through diagnose,
sql, the ingest warnings, the reports and the TUI."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from ranktrace.cli import main
from ranktrace.safe_text import is_safe, safe, safe_tree

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "correlate"))
from fixtures import ev, store  # noqa: E402

OSC_TITLE = "\x1b]0;pwned\x07"       # sets the terminal / tmux pane title
CLEAR = "\x1b[2J\x1b[H"              # clears the screen
BIDI = "\u202egnp.exe"               # right-to-left override
C1_CSI = "\x9b31m"                   # 8-bit CSI
EVIL = f"RuntimeError: boom {OSC_TITLE}{CLEAR}{BIDI}{C1_CSI} <script>alert(1)</script> <img src=x onerror=alert(2)>"
RAW_CONTROLS = ("\x1b", "\x07", "\u202e", "\x9b")


def _strings(doc) -> set[str]:
    if isinstance(doc, str):
        return {doc}
    if isinstance(doc, dict):
        return set().union(*[_strings(v) for v in doc.values()], set())
    if isinstance(doc, list):
        return set().union(*[_strings(v) for v in doc], set())
    return set()


def _clean(text: str) -> bool:
    return not any(c in text for c in RAW_CONTROLS)


def test_safe_makes_every_control_visible():
    s = safe(f"a{OSC_TITLE}b\r\n\t{BIDI}{C1_CSI}\x00\x7f")
    assert s == "a\\x1b]0;pwned\\x07b\\x0d\\x0a\t\\u202egnp.exe\\x9b31m\\x00\\x7f"
    assert safe("line1\nline2", keep_newlines=True) == "line1\nline2"
    assert safe("plain ascii, ümlaut, 漢字 → ok") == "plain ascii, ümlaut, 漢字 → ok"
    assert is_safe(safe(EVIL)) and not is_safe(EVIL)
    assert safe_tree({"a": [EVIL, 1, None], EVIL: {"b": EVIL}}) == {
        "a": [safe(EVIL), 1, None], safe(EVIL): {"b": safe(EVIL)}}


@pytest.fixture
def evil_store(tmp_path):
    host = f"n1{OSC_TITLE}"
    db = tmp_path / "evil.duckdb"
    evs = [ev(float(i), f"step {i}", kind="progress", host=h, rank=r, file=f"<img src=x onerror=alert(3)>/{h}.log")
           for i in range(5) for h, r in ((host, 0), ("n2", 1))]
    evs.append(ev(6.0, EVIL, kind="python_exception", host=host, rank=0,
                  file=f"<img src=x onerror=alert(3)>/{host}.log"))
    evs.append(ev(7.0, "Connection closed by peer " + CLEAR, kind="peer_closed", host="n2", rank=1,
                  file="<script>x</script>/n2.log"))
    con = store(evs, path=str(db))
    con.close()
    return str(db)


def test_diagnose_text_and_md_are_neutralised(evil_store, capsys):
    assert main(["diagnose", "--db", evil_store]) == 0
    out = capsys.readouterr().out
    assert _clean(out), repr(out)
    assert "\\x1b]0;pwned\\x07" in out          # shown, escaped
    assert main(["diagnose", "--db", evil_store, "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert _clean(md) and not _live_html(md)
    assert main(["diagnose", "--db", evil_store, "--format", "json"]) == 0
    js = capsys.readouterr().out
    assert _clean(js)
    assert EVIL in _strings(json.loads(js))   # the JSON still carries the line as it was


def test_sql_table_and_terminal_csv_are_neutralised(evil_store, capsys):
    from ranktrace.query import print_result, run_query
    assert main(["sql", "SELECT host, message FROM events WHERE role = 'cause'", "--db", evil_store]) == 0
    out = capsys.readouterr().out
    assert _clean(out) and "\\x1b[2J" in out
    cols, rows = run_query(evil_store, "SELECT message FROM events WHERE role = 'cause'")
    tty = io.StringIO()
    print_result(cols, rows, "csv", tty, terminal=True)
    assert _clean(tty.getvalue())
    pipe = io.StringIO()
    print_result(cols, rows, "csv", pipe, terminal=False)   # to a file or a pipe: the data as it is
    assert EVIL in pipe.getvalue()
    js = io.StringIO()
    print_result(cols, rows, "json", js, terminal=True)
    assert _clean(js.getvalue()) and json.loads(js.getvalue())[0]["message"] == EVIL


def test_ingest_warnings_naming_files_are_neutralised(tmp_path, capsys):
    d = tmp_path / "bundle"
    d.mkdir()
    (d / "ok.log").write_text("2026-03-02T03:00:00Z hello\n")
    bad = d / f"evil{OSC_TITLE}{CLEAR}.log"
    bad.write_bytes(b"\x00\x01\x02binary\x00" * 200)
    main(["ingest", str(d), "--db", str(tmp_path / "s.duckdb")])
    cap = capsys.readouterr()
    assert _clean(cap.err) and _clean(cap.out), repr(cap.err)


def _live_html(md: str) -> list[str]:
    """Tags a Markdown renderer would pass through: outside fences and code spans."""
    import re
    body = re.sub(r"^(`{3,})[^\n]*\n.*?^\1\s*$", "", md, flags=re.S | re.M)
    body = re.sub(r"(`+)(.+?)\1", "", body)
    return re.findall(r"<\s*(?:script|img|iframe|svg|a)\b", body, re.I)


def _report(db, fmt, capsys) -> str:
    assert main(["report", "--db", db, "--format", fmt]) == 0
    return capsys.readouterr().out


def test_reports_escape_html_and_controls(evil_store, capsys):
    md = _report(evil_store, "md", capsys)
    assert _clean(md)
    assert not _live_html(md)
    assert "&lt;img src=x onerror=alert(3)>" in md and "&lt;script>" in md   # shown, as text
    html = _report(evil_store, "html", capsys)
    assert _clean(html)
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html
    js = _report(evil_store, "json", capsys)
    assert _clean(js)
    assert EVIL in _strings(json.loads(js))


def test_markdown_code_spans_stay_code():
    from ranktrace.report.markdown import _md_text
    assert _md_text("run `grep '<x>' log` on <b>") == "run `grep '<x>' log` on &lt;b>"


def test_tui_widgets_show_log_text_escaped(evil_store):
    from ranktrace.tui.widgets.panes import DetailPane, _clip, _plain
    from ranktrace.tui.data import StoreData
    assert _clean(_clip(EVIL, 500).plain) and _clean(_plain(EVIL).plain)
    s = StoreData(evil_store, verdict_fn=lambda con: None)
    try:
        eid = s._cur().execute("SELECT event_id FROM events WHERE role = 'cause'").fetchone()[0]
        t = DetailPane.render_event(s.event(eid), s.context(eid))
        assert _clean(t.plain) and "\\x1b]0;pwned" in t.plain
    finally:
        s.close()


def test_tui_header_and_lanes_never_emit_controls(evil_store):
    import asyncio

    from ranktrace.tui.app import RanktraceApp
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
    from tui_helpers import screen_text, settle

    verdict = {"verdict": {"kind": "exception", "rank": 0, "host": f"n1{OSC_TITLE}", "time": None,
                           "confidence": 0.9, "summary": EVIL},
               "hypotheses": [{"kind": "exception", "rank": 0, "host": f"n1{OSC_TITLE}", "score": 0.9, "why": EVIL}],
               "evidence": [{"file": "x.log", "line": 1, "time": None, "role": "cause", "text": EVIL}],
               "cascade": [], "clock": []}

    async def go():
        app = RanktraceApp(evil_store, verdict_fn=lambda con: verdict)
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(app, pilot)
            text = screen_text(app)
            assert _clean(text), repr(text)
            assert "\\x1b]0;pwned" in text      # the host name, visibly escaped
    asyncio.run(go())
