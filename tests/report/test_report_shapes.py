"""The report and exports over ../shared/real_log_shapes (49 excerpts of real
incidents in one store: many formats, hosts without ranks, ranks without
hosts, lines without times). Skipped cleanly when the folder is absent."""
from __future__ import annotations

import json
import re

import duckdb
import pytest

from ranktrace.export import build_trace, export_parquet
from ranktrace.report import build_report, redact, render

from report_helpers import assert_self_contained, open_ro, verdict_of


@pytest.fixture(scope="module")
def shapes(shapes_store):
    con = open_ro(shapes_store)
    verdict = verdict_of(con)
    doc = build_report(con, verdict)
    yield {"db": shapes_store, "con": con, "verdict": verdict, "doc": doc}
    con.close()


def test_every_format_renders(shapes):
    doc = shapes["doc"]
    md = render(doc, "md")
    assert md.startswith("# ") and "## Evidence" in md
    v = shapes["verdict"]["verdict"]
    if v.get("host"):
        assert v["host"] in md.splitlines()[0]
    for ex in doc["report"]["excerpts"]:
        assert f"**{ex['file']}:{ex['line']}**" in md
    assert_self_contained(render(doc, "html"))
    back = json.loads(render(doc, "json"))
    assert back["verdict"]["kind"] == v["kind"]


def test_paths_are_relative_to_the_bundle(shapes):
    md = render(shapes["doc"], "md")
    assert "/work/" not in md and str(shapes["db"].parent) not in md


def test_redaction_hides_every_host_of_the_store(shapes):
    con = shapes["con"]
    red = redact(con, shapes["doc"])
    hosts = [r[0] for r in con.execute("SELECT DISTINCT host FROM events WHERE host IS NOT NULL").fetchall()]
    for fmt in ("md", "html", "json"):
        text = render(red, fmt)
        # a mention of the host as a name (not inside a longer word: "xxxxx" is a
        # host of these excerpts, and "UID:xxxxxxxxx" is not a mention of it)
        leaked = [h for h in hosts if re.search(rf"(?<![A-Za-z0-9]){re.escape(h)}(?![A-Za-z0-9])", text)]
        assert not leaked, (fmt, leaked)


def test_perfetto_and_parquet(shapes, tmp_path):
    con = shapes["con"]
    trace = build_trace(con, shapes["verdict"])
    json.dumps(trace)  # serialisable
    hosts = {r[0] for r in con.execute("SELECT DISTINCT host FROM events WHERE host IS NOT NULL "
                                       "AND ts IS NOT NULL").fetchall()}
    procs = {e["args"]["name"].split(" ")[0] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert hosts <= procs
    info = export_parquet(shapes["db"], str(tmp_path / "ds"))
    n = duckdb.connect().execute(f"SELECT count(*) FROM read_parquet('{tmp_path}/ds/events/**/*.parquet', "
                                 "hive_partitioning = true)").fetchone()[0]
    assert n == info["tables"]["events"] == con.execute("SELECT count(*) FROM events").fetchone()[0]
