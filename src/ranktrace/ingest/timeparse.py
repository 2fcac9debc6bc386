"""timeparse: captured time text -> UTC, with ts_kind saying how we know it.

ts_kind values:
  exact          the text carries its zone (Z, +01:00)
  local          no zone in the text: --tz applied (UTC unless given)
  year_inferred  no year in the text (glog, klog, syslog): the year comes
                 from other evidence in the bundle (store.infer_years)
  envelope       the line has no time of its own: its envelope's time
  interpolated   no time at all: the previous timed line of the same file
  none           nothing to go on
Everything here is a polars expression: no per-line Python.
"""

from __future__ import annotations

import re

import polars as pl

from ..formats import TimeSpec

# Year-less times are parsed in this leap year (so Feb 29 parses) and moved
# to the inferred year after ingest.
PLACEHOLDER_YEAR = 2000
UTC = pl.Datetime("us", "UTC")
_NAMES = re.compile(r"%[aAbBhpP]")  # layout directives that read words


def parse_expr(text: pl.Expr, spec: TimeSpec, tz: str) -> pl.Expr:
    """Expression turning captured time text into a UTC datetime (null if it does not parse)."""
    # A space in a layout takes any run of whitespace (chrono): "Mar  2" needs
    # no collapsing, only the ends trimmed.
    text = text.str.strip_chars()
    layout = " ".join(spec.layout.split())
    # Python logging writes "17:10:08,943"; ISO writers "2026-03-02T03:12": one
    # layout with "%.f" / "%d %H" takes both. Where the layout has no comma,
    # the text's first comma is the one to change; where it reads no names
    # (Tue, Thu hold a T), its first T is. A literal replace is 10x cheaper
    # than a regex.
    if "%.f" in layout:
        text = (text.str.replace(",", ".", literal=True) if "," not in layout
                else text.str.replace(r"(\d),(\d)", "${1}.${2}"))
    if "%d %H" in layout:
        text = (text.str.replace("T", " ", literal=True) if not _NAMES.search(layout)
                else text.str.replace(r"(\d)T(\d)", "${1} ${2}"))
    if layout.startswith("%m%d"):
        # torch's c10 logger writes the month unpadded: [E519 ...] is May 19,
        # [E1108 ...] Nov 8 (the day is always two digits).
        text = text.str.replace(r"^(\d{3})\b", "0${1}")
    if spec.year == "infer":
        text = pl.lit(f"{PLACEHOLDER_YEAR} ") + text
        layout = "%Y " + layout
    if spec.zone == "offset":
        # RFC 3339 writes UTC as "Z"; chrono's %:z wants an offset.
        text = text.str.replace(r"Z$", "+00:00")
        return text.str.to_datetime(layout, strict=False, time_unit="us").dt.convert_time_zone("UTC")
    parsed = text.str.to_datetime(layout, strict=False, time_unit="us")
    zone = "UTC" if spec.zone == "utc" else tz
    return parsed.dt.replace_time_zone(zone, ambiguous="earliest", non_existent="null").dt.convert_time_zone("UTC")


def kind_of(spec: TimeSpec) -> str:
    if spec.year == "infer":
        return "year_inferred"
    return "exact" if spec.zone in ("utc", "offset") else "local"


# How much each ts_kind is worth when a line has two times (its own and its
# envelope's): lower is better.
KIND_RANK = {"exact": 0, "local": 1, "year_inferred": 2, "envelope": 3, "interpolated": 4, "none": 5}
