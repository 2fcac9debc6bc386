"""A node whose logs nobody collected (it died and cannot be reached): the job's world size says ranks are
missing, the verdict says which and where they ran when the logs tell (torchrun's master_addr is rank 0's
node), and one that rests on no cause line of its own is not confident."""

from __future__ import annotations

from ranktrace.correlate import diagnose
from ranktrace.correlate.verdict import ABSENT_RANKS_CAP

from .fixtures import generated_run


def _diagnosis(tmp_path, catalog, drop=None):
    truth, con = generated_run(tmp_path, "gpu_fault", 42, "torchrun_node", catalog, drop=drop)
    try:
        return truth, diagnose(con)
    finally:
        con.close()


def _absent_notes(doc: dict) -> list[str]:
    return [m for m in doc["missing"] if m.startswith("the logs of rank(s)")]


def test_dead_node_without_logs_is_named_missing(tmp_path, catalog):
    truth, _ = _diagnosis(tmp_path / "whole", catalog)
    culprit = truth["attempts"][-1]["verdict"]["host"]
    ranks = sorted(r for r in truth["nodes"][culprit])
    assert 0 in ranks   # (the story's culprit runs rank 0: the master_addr names its node)
    _, doc = _diagnosis(tmp_path / "cut", catalog, drop=culprit)
    notes = _absent_notes(doc)
    assert len(notes) == 1
    assert notes[0].startswith(f"the logs of rank(s) {ranks[0]}-{ranks[-1]} (on {culprit},")
    assert f"world has {truth['world_size']} ranks" in notes[0]
    v = doc["verdict"]
    # (no line of its own: the verdict names someone else, and must not be sure of it)
    assert v["host"] != culprit and v["confidence"] <= ABSENT_RANKS_CAP


def test_whole_bundle_has_no_absent_ranks(tmp_path, catalog):
    _, doc = _diagnosis(tmp_path, catalog)
    assert _absent_notes(doc) == []
