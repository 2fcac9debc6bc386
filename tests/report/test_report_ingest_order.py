"""A report does not depend on the order the files went into the store:
the same line logged twice (srun's combined log and torchrun's per-rank
stdout.log) at the same time must give the same evidence line whichever
file went in first."""
from __future__ import annotations

import pytest

from ranktrace.ingest import pipeline
from ranktrace.report import build_report, render

from report_helpers import open_ro, sample_bundles, verdict_of

BUNDLE = next((b for b in sample_bundles() if b.name == "demo_sigkill_4node"), None)


@pytest.mark.skipif(BUNDLE is None, reason="sample bundle demo_sigkill_4node missing")
def test_report_is_the_same_whatever_the_file_order(tmp_path, catalog):
    files = sorted(str(p) for p in BUNDLE.rglob("*") if p.is_file())

    def report(db, paths):
        pipeline.ingest(paths, db, catalog, workers=1)
        con = open_ro(db)
        try:
            return render(build_report(con, verdict_of(con, BUNDLE)), "md")
        finally:
            con.close()
    forward = report(str(tmp_path / "a.duckdb"), files)
    backward = report(str(tmp_path / "b.duckdb"), files[::-1])
    assert forward == backward
