"""The report of each real sample incident: Markdown, HTML, JSON, goldens.

Stores are built by ingesting the bundles of sample_logs/ (skipped while
there are none). The verdict is the real `ranktrace.correlate.diagnose`
(or, before it existed, the bundle's expected_verdict.json).

Golden files: tests/report/golden/<bundle>.md is the Markdown report of
each sample incident. A change in the output fails the test with a diff;
after reviewing it, accept it with

    RANKTRACE_UPDATE_GOLDEN=1 pytest tests/report
"""
from __future__ import annotations

import difflib
import json
import os
import re

import pytest

from ranktrace.report import build_report, redact, render

from report_helpers import GOLDEN, assert_self_contained, open_ro, sample_bundles, verdict_of

# Last first: test_sample_bundles.py asks for the same diagnoses (sample_diagnosis) first first; on two
# workers each makes half and reads the other half, rather than one waiting on the other's every bundle.
BUNDLES = sample_bundles()[::-1]
UPDATE = os.environ.get("RANKTRACE_UPDATE_GOLDEN") == "1"
needs_bundles = pytest.mark.skipif(not BUNDLES, reason="no sample incidents in sample_logs/ yet")
ids = [b.name for b in BUNDLES]


@pytest.fixture(scope="module", params=BUNDLES or [None], ids=ids or ["none"])
def incident(request, verdict_factory):
    bundle = request.param
    if bundle is None:
        pytest.skip("no sample incidents in sample_logs/ yet")
    db, verdict, _ = verdict_factory(bundle)
    con = open_ro(db)
    doc = build_report(con, verdict)
    yield {"bundle": bundle, "db": db, "con": con, "verdict": verdict, "doc": doc,
           "md": render(doc, "md"), "html": render(doc, "html"), "json": render(doc, "json")}
    con.close()


def _culprit_ok(v: dict) -> bool:
    return v.get("kind") not in ("none", None) and (v.get("host") or v.get("rank") is not None)


# ---------------------------------------------------------------- Markdown

@needs_bundles
def test_markdown_names_culprit_and_quotes_evidence(incident):
    md, v = incident["md"], incident["verdict"]["verdict"]
    title = md.splitlines()[0]
    assert title.startswith("# ")
    assert v["kind"] in title
    if not _culprit_ok(v):
        pytest.skip(f"verdict {v['kind']}: no culprit to name")
    if v.get("host"):
        assert v["host"] in title
        assert f"| host | {v['host']} |" in md
    if v.get("rank") is not None:
        assert f"rank {v['rank']}" in title
        assert f"| rank | {v['rank']} |" in md
    # every cited line is quoted under a file:line heading, inside a code block
    doc = incident["doc"]
    assert doc["report"]["excerpts"] or not incident["verdict"].get("evidence")
    for ex in doc["report"]["excerpts"]:
        head = f"**{ex['file']}:{ex['line']}**"
        assert head in md
        block = md.split(head, 1)[1].split("```text", 1)[1].split("```", 1)[0]
        hit = [ln for ln in ex["lines"] if ln["hit"]]
        assert hit and hit[0]["text"] in block
        if ex["found"]:  # the cited line itself, numbered and marked
            assert re.search(rf"^> +{ex['line']} \| ", block, re.M), block


@needs_bundles
def test_markdown_sections(incident):
    md = incident["md"]
    for h in ("## Summary", "## Culprit", "## Causal chain", "## Timeline", "## Evidence",
              "## Status per node and rank", "## Clock offsets", "## Hypotheses", "## Next steps"):
        assert h in md
    # the status table has a row per rank the store knows of
    con = incident["con"]
    ranks = {r[0] for r in con.execute("SELECT DISTINCT rank FROM events WHERE rank IS NOT NULL").fetchall()}
    status = incident["doc"]["report"]["status"]
    if status["shown"] == status["total"]:
        shown = {r["rank"] for r in status["rows"]}
        assert ranks <= shown
    # the causal chain starts at the verdict
    chain = incident["doc"]["report"]["chain"]
    assert chain[0]["kind"] == incident["verdict"]["verdict"]["kind"]


@needs_bundles
def test_markdown_tables_are_well_formed(incident):
    in_code = False
    for line in incident["md"].splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code or not line.startswith("|"):
            continue
        assert line.endswith("|"), line
        cells = re.split(r"(?<!\\)\|", line)[1:-1]
        assert cells, line


# ---------------------------------------------------------------- HTML

@needs_bundles
def test_html_is_self_contained_with_inline_svg(incident):
    html = incident["html"]
    assert_self_contained(html)
    v = incident["verdict"]["verdict"]
    if _culprit_ok(v) and v.get("host"):
        assert v["host"] in html
    # the SVG has one lane per (host, rank) and marks the culprit lane
    svg = incident["doc"]["report"]["svg"]
    assert svg["lanes"]
    if _culprit_ok(v):
        assert any(ln["culprit"] for ln in svg["lanes"])
        assert 'fill="#ffebe9"' in html  # the culprit lane's highlight


# ---------------------------------------------------------------- JSON

@needs_bundles
def test_json_is_the_verdict_document_plus_sections(incident):
    doc = json.loads(incident["json"])
    for k in ("verdict", "hypotheses", "evidence", "cascade", "clock"):
        assert k in doc
    assert doc["verdict"] == json.loads(json.dumps(incident["verdict"]["verdict"], default=str))
    for k in ("verdict", "rank", "local_rank", "host", "pod", "pid", "gpu", "time", "confidence", "summary"):
        if k != "verdict":
            assert k in doc["verdict"] or k == "confidence"
    rep = doc["report"]
    for k in ("title", "summary", "culprit", "chain", "timeline", "excerpts", "status", "clock", "hypotheses",
              "next_steps"):
        assert k in rep


# ---------------------------------------------------------------- determinism and goldens

@needs_bundles
def test_report_is_deterministic(incident):
    # The report again on a fresh connection; from a diagnosis made again for every third bundle (the
    # others: the run's, as test_stored_groups compares a fresh diagnosis with it on every third bundle too)
    bundle = incident["bundle"]
    con = open_ro(incident["db"])
    try:
        again = verdict_of(con, bundle) if BUNDLES.index(bundle) % 3 == 1 else incident["verdict"]
        doc = build_report(con, again)
    finally:
        con.close()
    assert render(doc, "md") == incident["md"]
    assert render(doc, "html") == incident["html"]
    assert str(incident["db"].parent) not in incident["json"]


@needs_bundles
def test_golden_markdown(incident):
    GOLDEN.mkdir(exist_ok=True)
    path = GOLDEN / f"{incident['bundle'].name}.md"
    got = incident["md"]
    if UPDATE:
        path.write_text(got)
        return
    if not path.exists():
        pytest.fail(f"no golden file {path.name}: review the report, then run with RANKTRACE_UPDATE_GOLDEN=1",
                    pytrace=False)
    want = path.read_text()
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "golden", "now", n=1))
        pytest.fail(f"report of {incident['bundle'].name} changed (review; accept with "
                    f"RANKTRACE_UPDATE_GOLDEN=1):\n{diff[:6000]}", pytrace=False)


@needs_bundles
def test_redacted_report_keeps_structure(incident):
    con = incident["con"]
    doc = redact(con, incident["doc"])
    md = render(doc, "md")
    hosts = [r[0] for r in con.execute("SELECT DISTINCT host FROM events WHERE host IS NOT NULL").fetchall()]
    for h in hosts:  # no mention of a host as a name ("n3" in "python3.11" is not one)
        assert not re.search(rf"(?<![A-Za-z0-9]){re.escape(h)}(?![A-Za-z0-9])", md), h
    v = doc["verdict"]
    if v.get("host"):
        assert re.fullmatch(r"host-\d+", v["host"])
        assert v["host"] in md.splitlines()[0]
