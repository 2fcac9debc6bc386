"""A bogus-year Xid line (issue 15) is no hypothesis: ingest ignores the
time (the line inherits the line before's, and keeps what was written in
ts_text), and the detectors that order causes leave such lines out
(queries/detect/xid.sql, first_cause.sql). Before, the Xid took the time
of the dmesg line before it and became the verdict (gpu_fault 0.75) over
the bundle's real exception."""

import json
import shutil

import duckdb
import pytest

from ranktrace.cli import main
from rt_testlib import REPO
from ranktrace.store import connect as store_connect

BUNDLE = REPO / "sample_logs" / "torchrun_exception_skew"
DMESG = ("2026-11-29T17:29:00.000000+00:00 gpu-b01 kernel: eth0 link up\n"
         "{year}-01-01T00:00:00.000000+00:00 gpu-b01 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, "
         "name=python, GPU has fallen off the bus.\n"
         "2026-11-29T17:31:41.000000+00:00 gpu-b01 kernel: bye\n")


def _diagnose(db: str, capsys) -> dict:
    capsys.readouterr()
    assert main(["diagnose", "--db", db, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("year", ["0001", "9999", "1969"])
def test_a_bogus_year_xid_is_no_hypothesis(tmp_path, capsys, year):
    b = tmp_path / "b"
    shutil.copytree(BUNDLE, b, ignore=shutil.ignore_patterns("README.md", "truth.json", "expected_verdict.json"))
    (b / "gpu-b01-dmesg.log").write_text(DMESG.format(year=year))
    db = str(tmp_path / "s.duckdb")
    assert main(["ingest", str(b), "--db", db, "-q"]) == 0
    con = store_connect(db)
    row = con.execute("SELECT ts_kind, ts_text FROM events WHERE message LIKE '%Xid (PCI:%'").fetchone()
    con.close()
    assert row == ("interpolated", f"{year}-01-01T00:00:00.000000+00:00"), "flagged: the time as written is kept"
    d = _diagnose(db, capsys)
    assert d["verdict"]["kind"] == "exception", d["verdict"]
    assert all(h["kind"] != "gpu_fault" for h in d["hypotheses"]), d["hypotheses"]


def test_the_same_xid_with_a_real_time_is_the_verdict(tmp_path, capsys):
    """The control: with a plausible time (before the exception) the Xid wins."""
    b = tmp_path / "b"
    shutil.copytree(BUNDLE, b, ignore=shutil.ignore_patterns("README.md", "truth.json", "expected_verdict.json"))
    (b / "gpu-b01-dmesg.log").write_text(DMESG.format(year="2026").replace("2026-01-01T00:00:00", "2026-11-29T17:29:30"))
    db = str(tmp_path / "s.duckdb")
    assert main(["ingest", str(b), "--db", db, "-q"]) == 0
    assert _diagnose(db, capsys)["verdict"]["kind"] == "gpu_fault"
