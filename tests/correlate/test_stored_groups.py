"""The groups of event_groups.sql are kept in the store by the ingest that made
them (table event_groups_stored, stamped in meta): readers take them instead of
grouping every line again, and only while the store and the SQL are as they
were when they were made."""

from __future__ import annotations


import shutil

import duckdb
import pytest

from ranktrace.correlate import diagnose
from ranktrace.correlate.identity import GROUPS_TABLE, build_base, forget_groups, groups_stamp
from ranktrace.ingest.pipeline import ingest


from .fixtures import generated_run
from rt_testlib import halved_copy, sample_files as _files
from .test_sample_bundles import BUNDLES
from ranktrace.store import connect as store_connect


def _diagnose(db: str) -> dict:
    con = store_connect(db)
    try:
        return diagnose(con)
    finally:
        con.close()


def _groups(con) -> list[tuple]:
    return sorted(con.execute("SELECT * FROM event_groups").fetchall(), key=repr)


@pytest.mark.skipif(not BUNDLES, reason="no sample_logs/*/expected_verdict.json yet")
def test_the_verdict_is_the_same_from_stored_groups_as_from_the_lines(tmp_path, sample_diagnosis):
    # every third bundle (all of them: benchmarks/verdicts.py; CI time). The verdict from the stored groups
    # is the run's one diagnosis of the bundle; the lines' is that of a copy of its store without them.
    for bundle in BUNDLES[::3]:
        src, stored = sample_diagnosis(bundle)
        db = str(tmp_path / bundle.name)
        shutil.copytree(src, db, ignore=shutil.ignore_patterns(".spill-*"))
        con = store_connect(db, read_only=False)
        assert con.execute(f"SELECT count(*) FROM {GROUPS_TABLE}").fetchone()[0] > 0
        forget_groups(con)
        con.close()
        assert _diagnose(db) == stored, bundle.name


def test_groups_are_taken_from_the_store_only_while_it_is_unchanged(tmp_path, catalog, monkeypatch):
    bundle = BUNDLES[0]
    db = str(tmp_path / "s.duckdb")
    monkeypatch.chdir(bundle.parent)
    ingest(_files(bundle), db, catalog)
    con = store_connect(db)
    stamp = con.execute("SELECT value FROM meta WHERE key = 'event_groups_stamp'").fetchone()[0]
    stored = sorted(con.execute(f"SELECT * FROM {GROUPS_TABLE}").fetchall(), key=repr)
    build_base(con)
    assert groups_stamp(con) == stamp
    assert _groups(con) == stored and len(stored) > 1
    con.close()

    # the same store with lines taken out: the stored groups no longer hold, and are not read
    con = halved_copy(db, str(tmp_path / "changed.duckdb"))
    build_base(con)
    assert groups_stamp(con) != stamp
    fresh = _groups(con)
    assert fresh != stored
    n_lines = con.execute("SELECT sum(n) FROM event_groups").fetchone()[0]
    assert n_lines == con.execute("SELECT count(*) FROM events").fetchone()[0]
    con.close()


# (slurm_torchrun_sigkill_skew: one attempt, and interpolated times of its srun console: the parts of
# their classes made again, not every line grouped again)
SPLIT_BUNDLES = ["torchrun_restart_resume", "torchrun_restart_recurring_crash", "slurm_requeue_node_failure",
                 "slurm_torchrun_sigkill_skew"]


@pytest.mark.parametrize("slots", [1e-9, 8, 1e9])
def test_an_ingest_groups_the_lines_once_and_splits_the_parts_into_the_groups_of_the_lines(
        tmp_path, catalog, monkeypatch, slots):
    """store.refresh_summaries groups the lines once, in parts by slot of time (identity._parts_sql), and
    splits the parts by attempt, grouping again only the lines of the slots a cut falls in: the stored
    groups are event_groups.sql's over the lines with the attempts' cuts, whatever the slot (a
    microsecond: no cut inside a part; one slot for the whole run: every part of a class with a cut
    grouped again)."""
    from ranktrace import store
    from ranktrace.correlate import identity
    from ranktrace.correlate.identity import _stored_stamp
    monkeypatch.setattr(store, "GROUP_SLOTS", slots)
    made, split = [], []
    monkeypatch.setattr(identity, "_make_parts", lambda con, f=identity._make_parts: made.append(1) or f(con))

    def spy(con, f=identity._split_parts):
        got = f(con)
        split.append(got and con.execute("SELECT count(*) FROM group_cut").fetchone()[0])
        return got
    monkeypatch.setattr(identity, "_split_parts", spy)
    for name in SPLIT_BUNDLES:
        bundle = next(b for b in BUNDLES if b.name == name)
        db = str(tmp_path / f"{name}-{slots}.duckdb")
        monkeypatch.chdir(bundle.parent)
        made.clear()
        split.clear()
        ingest(_files(bundle), db, catalog)
        assert made == [1], name   # one pass over the lines
        con = store_connect(db, read_only=False)
        attempts = con.execute("SELECT count(*) FROM attempts").fetchone()[0]
        assert attempts > 1 or con.execute("SELECT count(*) FROM interpolated_times").fetchone()[0] > 0, name
        stored = sorted(con.execute(f"SELECT * FROM {GROUPS_TABLE}").fetchall(), key=repr)
        forget_groups(con)
        build_base(con)   # the store's cuts (attempt_class_cuts), the groups made from the lines
        assert _stored_stamp(con) is None
        assert _groups(con) == stored, name
        con.close()
        if slots > 1e6 and attempts > 1:
            assert any(split), name   # parts that a cut falls inside were grouped again


def test_lanes_and_echoes_from_the_parts_are_those_of_the_lines(tmp_path, catalog, monkeypatch):
    """store.refresh_summaries makes echoes, lanes and lane_buckets from the lines' group parts (their
    sums) where it can: the tables queries/store/ makes over the lines. A bundle with echoes (torchrun
    --tee) takes the lanes from the lines."""
    from ranktrace import store
    from ranktrace.resources import data_dir
    took = []
    monkeypatch.setattr(store, "_summaries_from_parts",
                        lambda con, files, f=store._summaries_from_parts: took.append(f(con, files)) or took[-1])
    tables = {"echoes": "echoes", "lanes": "lanes", "lane_buckets": "lane_buckets"}
    lanes_from_parts = 0
    for name in ("k8s_gang_partial_restart", "slurm_requeue_node_failure", "torchrun_restart_resume",
                 "torchrun_hang_skew"):
        bundle = next(b for b in BUNDLES if b.name == name)
        db = str(tmp_path / f"{name}.duckdb")
        monkeypatch.chdir(bundle.parent)
        took.clear()
        ingest(_files(bundle), db, catalog)
        assert took == [True], name
        con = store_connect(db, read_only=False)
        stored = {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
        assert stored["lanes"] and stored["lane_buckets"], name
        echoes = bool(stored["echoes"])
        lanes_from_parts += not echoes
        for t in tables:   # echoes first: lanes read it
            con.execute((data_dir("queries") / "store" / f"{t}.sql").read_text())
            assert sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr) == stored[t], (name, t)
        con.close()
    assert lanes_from_parts >= 2


def test_groups_of_lines_told_on_another_hosts_clock_are_those_of_the_lines(tmp_path, catalog, monkeypatch):
    """An untagged console that every node writes to (DeepSpeed under srun, clocks a minute apart): its lines
    that name no host are told on the clock that fits the file's order (clock.hostless_clocks), and the groups
    the ingest keeps are made again for their classes too, not only for the classes of interpolated times."""
    from ranktrace.correlate.identity import _stored_stamp
    _, con = generated_run(tmp_path, "exception", 16, "deepspeed_srun", catalog, read_only=False)
    timed = con.execute("SELECT count(*) FROM interpolated_times JOIN events USING (event_id) "
                        "WHERE ts_kind <> 'interpolated'").fetchone()[0]
    assert timed > 0   # lines of no host, retold
    stored = sorted(con.execute(f"SELECT * FROM {GROUPS_TABLE}").fetchall(), key=repr)
    forget_groups(con)
    build_base(con)
    assert _stored_stamp(con) is None
    assert _groups(con) == stored
    con.close()
