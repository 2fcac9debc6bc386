"""Kubernetes (issue 15): pods without a host get their own lane group each,
not one "(no host)"; the event list shows the pod; the header counts pods."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui_helpers import run_async, screen_text, settle

REPO = Path(__file__).resolve().parents[2]
ANSWERS = ["README.md", "truth.json", "expected_verdict.json"]
BUNDLES = ["k8s_exception_cri_skew", "k8s_oomkilled_pod"]


@pytest.fixture(scope="module", params=BUNDLES)
def k8s_store(request, tmp_path_factory):
    from ranktrace.formats import load_catalog
    from ranktrace.ingest.pipeline import ingest
    db = str(tmp_path_factory.mktemp("k8s") / f"{request.param}.duckdb")
    ingest([str(REPO / "sample_logs" / request.param)], db, load_catalog(check_samples=False),
           warn=lambda m: None, exclude=ANSWERS)
    return db


def test_a_lane_group_per_pod(k8s_store):
    from ranktrace.tui.data import NO_HOST, POD_PREFIX, Filters, StoreData
    s = StoreData(k8s_store, verdict_fn=lambda con: None)
    try:
        lanes = s.lanes()
        groups = {ln.host for ln in lanes}
        pods = {h for h in groups if h.startswith(POD_PREFIX)}
        assert {f"{POD_PREFIX}llm-pretrain-worker-{i}" for i in range(4)} <= pods
        # the ranks of the job sit under their pods, none under "(no host)"
        ranked = {ln.host for ln in lanes if ln.rank is not None}
        assert NO_HOST not in ranked and len(ranked & pods) == 4
        # every lane still finds its events: lane counts agree with a scan of events
        c = s.summary()["counts"]
        assert c["pods"] >= 4 and c["ranks"] == 8
        ext = s.extent()
        b = s.buckets(ext[0], ext[1] + 1, 50, lanes)
        for ln in lanes:
            if ln.first is not None:   # lane keys agree between the lanes table and events
                assert b.get(ln.key), ln
        # the event list's host filter takes a pod group
        rows = s.events_page(None, Filters(host=f"{POD_PREFIX}llm-pretrain-worker-2"), limit=500)
        assert rows and all(r.pod == "llm-pretrain-worker-2" and r.host is None for r in rows)
    finally:
        s.close()


@run_async
async def test_event_list_has_a_pod_column_and_the_header_counts_pods(k8s_store):
    from ranktrace.tui.app import RanktraceApp
    from ranktrace.tui.widgets.panes import EventList
    app = RanktraceApp(k8s_store, verdict_fn=lambda con: None)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(app, pilot)
        el = app.query_one(EventList)
        assert el.show_pod and "pod" in [str(c.label) for c in el.columns.values()]
        assert any(r.pod for r in el.items)
        text = screen_text(app)
        assert " pods · " in text and "1 hosts, 0 ranks" not in text
        # each pod's group is drawn with a label that tells it from the others (its name's end)
        from ranktrace.tui.widgets.timeline import Timeline
        tl = app.query_one(Timeline)
        labels = [tl.render_line(i - tl.top + 2).text[:tl.label_w] for i, r in enumerate(tl.rows)
                  if r.kind == "host" and r.host.startswith("pod llm-pretrain-worker-")
                  and tl.top <= i < tl.top + tl.size.height - 3]
        assert labels and all("worker-" in lb for lb in labels), labels
        from ranktrace.tui.widgets.timeline import _fit_mid
        names = {_fit_mid(f"▾ pod llm-pretrain-worker-{i}", tl.label_w - 3) for i in range(4)}
        assert len(names) == 4, names
