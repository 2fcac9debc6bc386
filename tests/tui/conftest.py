"""Real incident stores for the TUI tests.

Preferred source: the incident bundles in sample_logs/ (real Slurm/torchrun
runs with expected_verdict.json), demo_sigkill_4node first. Fallback: one
real log shape from /work/shared/real_log_shapes (read in place, never
copied), with the verdict its manifest states. No source: the tests skip.

The verdict shown is the bundle's expected verdict, injected through
StoreData's verdict_fn, so these tests check the TUI against the verdict
contract even while ranktrace.correlate is being written; one test runs the
real diagnose path separately.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_logs"
SHAPES = Path(os.environ.get("RANKTRACE_SHAPES", "/work/shared/real_log_shapes"))
PREFERRED = ("demo_sigkill_4node", "slurm_torchrun_sigkill", "tr_sigkill")


@dataclass
class Incident:
    name: str
    paths: list[str]
    verdict: dict
    db: str = ""


def _bundles() -> list[Path]:
    if not SAMPLES.is_dir():
        return []
    found = [d for d in SAMPLES.iterdir() if d.is_dir() and (d / "expected_verdict.json").is_file()]
    order = {n: i for i, n in enumerate(PREFERRED)}
    return sorted(found, key=lambda d: (order.get(d.name, len(order)), d.name))


def _shape_incident() -> Incident | None:
    f = SHAPES / "006_nccl_mpirun_ts_catastrophic.log"
    man = SHAPES / "manifest.json"
    if not f.is_file() or not man.is_file():
        return None
    entry = next((e for e in json.loads(man.read_text()) if e["file"] == f.name), None)
    if entry is None:
        return None
    ff = entry["expected"]["first_failure"]
    verdict = {
        "verdict": {"kind": "network_error", "rank": ff["rank"], "host": ff["host"],
                    "time": "2020-03-24T14:09:46.884Z", "confidence": 0.8,
                    "summary": "rank 12: NET/IB local catastrophic error (HCA fatal event)"},
        "hypotheses": [{"kind": "network_error", "rank": ff["rank"], "host": ff["host"], "score": 0.8,
                        "why": ff["basis"]}],
        "evidence": [{"file": f.name, "line": 1, "time": "2020-03-24T14:09:46.884Z", "role": "cause",
                      "text": "NET/IB : Got async event : local catastrophic error"}],
        "cascade": [{"time": "2020-03-24T14:09:46.888Z", "host": ff["host"], "rank": 14,
                     "kind": "network_error", "file": f.name, "line": 5}],
        "clock": [],
    }
    return Incident("shape_006", [str(f)], verdict)


def pick_incident() -> Incident | None:
    b = _bundles()
    if b:
        d = b[0]
        return Incident(d.name, [str(d)], json.loads((d / "expected_verdict.json").read_text()))
    return _shape_incident()


def build_store(inc: Incident, db: Path) -> str:
    from tui_helpers import ingest_relative
    return ingest_relative(inc.paths, db)


@pytest.fixture(scope="session")
def incident(tmp_path_factory) -> Incident:
    inc = pick_incident()
    if inc is None:
        pytest.skip("no incident: sample_logs/ has no bundle and the real log shapes are absent")
    db = tmp_path_factory.mktemp("tui") / f"{inc.name}.duckdb"
    prebuilt = os.environ.get("RANKTRACE_TUI_STORE")   # debugging: reuse a store built from inc.paths
    if prebuilt:
        import shutil
        shutil.copyfile(prebuilt, db)
        inc.db = str(db)
    else:
        inc.db = build_store(inc, db)
    return inc


@pytest.fixture
def make_app(incident):
    from ranktrace.tui.app import RanktraceApp

    def make(verdict: dict | None | str = "expected"):
        v = incident.verdict if verdict == "expected" else verdict
        return RanktraceApp(incident.db, verdict_fn=lambda con: v)
    return make
