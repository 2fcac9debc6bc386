"""Times as ingest reads them, through the engine (its layouts and zones are
unit-tested in crates/engine/src/timefmt.rs with `cargo test`)."""

from datetime import datetime

import pytest

from ranktrace.samples import run_text


def first(catalog, line, tz="UTC"):
    return run_text(catalog, line, tz=tz).events.row(0, named=True)


def test_rfc3339_offset_is_converted_to_utc(catalog):
    ev = first(catalog, "2022-12-13T18:33:43.201611+01:00 stdout F hello")
    assert ev["ts"] == datetime(2022, 12, 13, 17, 33, 43, 201611)


@pytest.mark.parametrize("tz,hour", [("UTC", 21), ("Asia/Shanghai", 13)])
def test_naive_time_takes_the_given_zone(catalog, tz, hour):
    ev = first(catalog, "2026-07-02 21:00:08,123 - INFO - trainer - step 5 | loss 1.0", tz)
    assert ev["ts"] is not None and ev["ts"].hour == hour and ev["ts_kind"] == "local"


@pytest.mark.parametrize("machine_tz", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_result_does_not_depend_on_machine_tz(catalog, monkeypatch, machine_tz):
    monkeypatch.setenv("TZ", machine_tz)
    ev = first(catalog, "2022-12-13T18:33:43.201611+01:00 stdout F hello")
    assert ev["ts"] == datetime(2022, 12, 13, 17, 33, 43, 201611)


def test_yearless_glog_time_is_year_inferred_in_the_placeholder_year(catalog):
    ev = first(catalog, "[rank0]:[E1108 10:52:31.512781555 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
                        "collective operation timeout")
    assert ev["ts_kind"] == "year_inferred"
    assert (ev["ts"].year, ev["ts"].month, ev["ts"].day, ev["ts"].microsecond) == (2000, 11, 8, 512781)


def test_untimed_line_takes_the_previous_time(catalog):
    ev = run_text(catalog, "2022-12-13T18:33:43Z stdout F a\nplain words here").events.sort("line").rows(named=True)
    assert ev[1]["ts"] == ev[0]["ts"] and ev[1]["ts_kind"] in ("interpolated", "envelope")


@pytest.mark.parametrize("line", [
    "2026-11-29T17:32:34.731400000Z stderr F I1129 17:32:34.721000 13686 torch/distributed/launcher/api.py:254] x",
    "2026-11-29T17:32:34.731400Z trn-node01 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
])
def test_a_trailing_z_is_utc_whatever_the_local_zone(catalog, line):
    """Issue 15: a trailing Z was read as local time. With --tz America/New_York
    (UTC-5 in November) the time stays 17:32:34 UTC."""
    import datetime as dt
    from ranktrace.ingest import core
    ev, _ = core.parse_text(catalog, line + "\n", tz="America/New_York")
    ts = ev["ts"][0]
    assert ts.replace(microsecond=0) == dt.datetime(2026, 11, 29, 17, 32, 34), ev.select("ts", "ts_kind", "format").rows()
