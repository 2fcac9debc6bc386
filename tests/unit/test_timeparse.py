from datetime import datetime, timezone

import polars as pl
import pytest

from ranktrace.formats import TimeSpec
from ranktrace.ingest.timeparse import parse_expr


def parse(text, spec, tz="UTC"):
    return pl.DataFrame({"t": [text]}).select(parse_expr(pl.col("t"), spec, tz).alias("t"))["t"][0]


def test_offset_zone_converts_to_utc():
    got = parse("2022-12-13T18:33:43.201611+01:00", TimeSpec("ts", "%Y-%m-%dT%H:%M:%S%.f%:z", "offset"))
    assert got == datetime(2022, 12, 13, 17, 33, 43, 201611, tzinfo=timezone.utc)


def test_naive_time_takes_the_given_zone():
    spec = TimeSpec("ts", "%Y-%m-%d %H:%M:%S", "naive")
    assert parse("2026-07-02 21:00:08", spec, "Asia/Shanghai") == datetime(2026, 7, 2, 13, 0, 8, tzinfo=timezone.utc)
    assert parse("2026-07-02 21:00:08", spec, "UTC") == datetime(2026, 7, 2, 21, 0, 8, tzinfo=timezone.utc)


def test_yearless_glog_time_parses_in_placeholder_year_with_nanoseconds():
    got = parse("1108 10:52:31.512781555", TimeSpec("ts", "%m%d %H:%M:%S%.f", "naive", "infer"))
    assert (got.month, got.day, got.hour, got.microsecond) == (11, 8, 10, 512781)


def test_syslog_single_digit_day_with_double_space():
    got = parse("Mar  2 07:56:01", TimeSpec("ts", "%b %d %H:%M:%S", "naive", "infer"))
    assert (got.month, got.day, got.second) == (3, 2, 1)


def test_garbage_gives_null_not_an_error():
    assert parse("not a time", TimeSpec("ts", "%Y-%m-%d", "naive")) is None


@pytest.mark.parametrize("tz", ["UTC", "America/New_York"])
def test_result_does_not_depend_on_machine_tz(monkeypatch, tz):
    monkeypatch.setenv("TZ", tz)
    spec = TimeSpec("ts", "%Y-%m-%dT%H:%M:%S%.fZ", "utc")
    assert parse("2020-03-24T14:09:46.884Z", spec) == datetime(2020, 3, 24, 14, 9, 46, 884000, tzinfo=timezone.utc)


def test_comma_fraction_and_iso_t_are_accepted_by_the_spaced_layout():
    spec = TimeSpec("ts", "%Y-%m-%d %H:%M:%S%.f", "naive")
    assert parse("2021-12-06 17:10:08,943", spec) == datetime(2021, 12, 6, 17, 10, 8, 943000, tzinfo=timezone.utc)
    assert parse("2021-12-06T17:10:08.5", spec) == datetime(2021, 12, 6, 17, 10, 8, 500000, tzinfo=timezone.utc)


def test_torch_glog_unpadded_month():
    spec = TimeSpec("ts", "%m%d %H:%M:%S%.f", "naive", "infer")
    assert (parse("519 02:44:06.569754537", spec).month, parse("519 02:44:06.5", spec).day) == (5, 19)
    assert (parse("1108 10:52:31.5", spec).month, parse("1108 10:52:31.5", spec).day) == (11, 8)
    assert (parse("101 13:40:12.26", spec).month, parse("101 13:40:12.26", spec).day) == (1, 1)


def test_kind_of():
    from ranktrace.ingest.timeparse import kind_of
    assert kind_of(TimeSpec("ts", "%m%d %H:%M:%S", "naive", "infer")) == "year_inferred"
    assert kind_of(TimeSpec("ts", "%Y-%m-%dT%H:%M:%S%:z", "offset")) == "exact"
    assert kind_of(TimeSpec("ts", "%Y-%m-%d %H:%M:%S", "naive")) == "local"


@pytest.mark.parametrize("text,layout,expect", [
    # whitespace runs and tabs where the layout has one space
    ("Mar \t 2  07:56:01", "%b %d %H:%M:%S", datetime(2000, 3, 2, 7, 56, 1)),
    # Python logging's comma before the fraction, an ISO T between date and time
    ("2026-03-02T17:10:08,943", "%Y-%m-%d %H:%M:%S%.f", datetime(2026, 3, 2, 17, 10, 8, 943000)),
    # a weekday with a T (Tue, Thu) is a word, not the date/time separator
    ("Thu Mar  5 03:12:09 2026", "%a %b %d %H:%M:%S %Y", datetime(2026, 3, 5, 3, 12, 9)),
    ("Tue Mar 03 03:12:09.5 2026", "%a %b %d %H:%M:%S%.f %Y", datetime(2026, 3, 3, 3, 12, 9, 500000)),
    # a comma that is part of the layout stays
    ("Thu, 05 Mar 2026 03:12:09 +0000", "%a, %d %b %Y %H:%M:%S %z", datetime(2026, 3, 5, 3, 12, 9)),
])
def test_text_normalisation_before_parsing(text, layout, expect):
    zone = "offset" if "%z" in layout else "naive"
    year = "infer" if "%Y" not in layout else "given"
    got = parse(text, TimeSpec("ts", layout, zone, year))
    assert got == expect.replace(tzinfo=timezone.utc)
