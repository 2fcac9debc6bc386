"""Events dated 0001 or 9999 (issue 15): reports, exports and the TUI do not
crash, and such times are left out of alignment, spans and ordering. Rows are
inserted directly into a store (ingest's own flagging is tested elsewhere)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import sys
from pathlib import Path

import pytest

from ranktrace.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "correlate"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
from fixtures import T0, ev, store  # noqa: E402

BOGUS = (dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999))


@pytest.fixture
def years_store(tmp_path):
    from ranktrace.store import refresh_summaries
    evs = [ev(float(i), f"step {i} loss 1.0", kind="progress", host=h, rank=r)
           for i in range(5) for h, r in (("n1", 0), ("n2", 1))]
    evs.append(ev(6.0, "RuntimeError: boom", kind="python_exception", host="n1", rank=0))
    evs.append(ev(7.0, "Connection closed by peer", kind="peer_closed", host="n2", rank=1))
    for i, t in enumerate(BOGUS):
        a = ev(0, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus", kind="gpu_xid", host="n2")
        b = ev(0, f"a line from year {t.year}", host="n2", rank=1, kind="peer_closed")
        a["ts"] = b["ts"] = t
        evs += [a, b]
    con = store(evs, path=str(tmp_path / "years.duckdb"))
    refresh_summaries(con)
    con.close()
    return str(tmp_path / "years.duckdb")


def _span_ok(iso: str | None) -> bool:
    return iso is None or 1990 <= int(iso[:4].lstrip("-") or 0) < 2100


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_report_does_not_crash_and_keeps_bogus_years_out(years_store, capsys, fmt):
    assert main(["report", "--db", years_store, "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert "Traceback" not in out
    if fmt == "json":
        doc = json.loads(out)
        j = doc["report"]["job"]
        assert j["first"].startswith("2026-") and j["last"].startswith("2026-")
        assert _span_ok(doc["verdict"].get("time"))
        for t in doc["report"]["timeline"]:
            assert _span_ok(t.get("time")), t


def test_diagnose_orders_by_real_times(years_store, capsys):
    assert main(["diagnose", "--db", years_store, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    v = d["verdict"]
    assert v["time"] and v["time"].startswith("2026-03-02T03:00:06")   # the RuntimeError, not year 1
    assert all(_span_ok(c.get("time")) for c in d["cascade"])


def test_perfetto_and_parquet_exports(years_store, tmp_path):
    assert main(["export", "perfetto", "--db", years_store, "-o", str(tmp_path / "t.json")]) == 0
    tr = json.loads((tmp_path / "t.json").read_text())
    ts = [e["ts"] for e in tr["traceEvents"] if "ts" in e]
    span_s = (max(ts) - min(ts)) / 1e6
    assert span_s < 60, span_s                        # not millennia
    assert main(["export", "parquet", "--db", years_store, str(tmp_path / "ds")]) == 0


def test_tui_opens(years_store):
    from ranktrace.tui.app import RanktraceApp
    from ranktrace.tui.data import StoreData, fmt_time
    from tui_helpers import screen_text, settle
    s = StoreData(years_store, verdict_fn=lambda con: None)
    try:
        ext = s.extent()
        assert ext and ext[1] - ext[0] < 60           # the span of the real times
        assert fmt_time(253402300800.0 + 40) == "?"   # past 9999: no crash
        rows = s.events_page(ext[0], None, limit=100)
        assert [r.time for r in rows if r.time is not None] == sorted(r.time for r in rows if r.time is not None)
        assert all(r.time is None for r in rows if r.orig is not None and not (T0.timestamp() - 10 < r.orig < T0.timestamp() + 100))
    finally:
        s.close()

    async def go():
        app = RanktraceApp(years_store)   # the real diagnosis
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(app, pilot)
            text = screen_text(app)
            assert "boom" in text or "EXCEPTION" in text or "rank 0" in text
    asyncio.run(go())
