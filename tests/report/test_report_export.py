"""ranktrace export perfetto / parquet on real stores, loaded back and checked."""
from __future__ import annotations

import gzip
import json
import re

import duckdb
import pytest

from ranktrace.cli import main
from ranktrace.export.perfetto import build_trace
from ranktrace.report import data as D

from report_helpers import open_ro, sample_bundles

# Exports do not depend on the kind of incident: three bundles of different
# launchers keep the suite fast (the report tests run on every bundle).
PREFERRED = ("demo_sigkill_4node", "slurm_torchrun_sigkill_skew", "k8s_exception_cri_skew")
ALL = sample_bundles()
BUNDLES = [b for b in ALL if b.name in PREFERRED] or ALL[:3]


@pytest.fixture(scope="module", params=BUNDLES or [None], ids=[b.name for b in BUNDLES] or ["none"])
def bundle_store(request, verdict_factory):
    """(bundle, store, verdict, verdict file): the CLI gets --verdict FILE so the
    diagnosis runs once per bundle (test_cli runs it end to end)."""
    if request.param is None:
        pytest.skip("no sample incidents in sample_logs/ yet")
    db, verdict, vfile = verdict_factory(request.param)
    return request.param, db, verdict, vfile


def lane_pairs(con) -> set[tuple]:
    src = D.events_source(con)
    return {tuple(r) for r in con.execute(
        f"SELECT DISTINCT host, rank FROM {src} WHERE ts IS NOT NULL AND (host IS NOT NULL OR rank IS NOT NULL)"
    ).fetchall()}


def load_trace(path):
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        raw = gzip.decompress(raw)
    return json.loads(raw)


def names(trace, what):
    return {(e["pid"], e.get("tid")): e["args"]["name"] for e in trace["traceEvents"]
            if e.get("ph") == "M" and e["name"] == what}


# ---------------------------------------------------------------- perfetto

@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_perfetto_loads_back_with_a_track_per_node_and_rank(bundle_store, tmp_path, suffix, capsys):
    bundle, db, verdict, vfile = bundle_store
    out = tmp_path / f"trace{suffix}"
    assert main(["export", "perfetto", "--db", str(db), "-o", str(out), "--verdict", str(vfile)]) == 0
    trace = load_trace(out)
    events = trace["traceEvents"]
    assert events and all(isinstance(e, dict) and "ph" in e for e in events)
    # metadata first, then the timed events in time order, integer microseconds
    phs = [e["ph"] for e in events]
    n_meta = phs.count("M")
    assert set(phs[:n_meta]) == {"M"}
    ts = [e["ts"] for e in events[n_meta:]]
    assert all(isinstance(t, int) for t in ts) and ts == sorted(ts)

    con = open_ro(db)
    try:
        pairs = lane_pairs(con)
        hosts = {h for h, _ in pairs if h is not None}
        cascade = [D.event_at(con, c["file"], c["line"]) for c in verdict.get("cascade") or []
                   if c.get("file") is not None and c.get("line") is not None]
    finally:
        con.close()
    procs = names(trace, "process_name")
    threads = names(trace, "thread_name")
    sort_idx = {e["pid"] for e in events if e.get("ph") == "M" and e["name"] == "process_sort_index"}
    # one named (and sorted) process per node
    by_host = {}
    for (pid, _), name in procs.items():
        by_host[name.split(" ")[0]] = pid
    assert hosts <= set(by_host), (hosts, procs)
    assert {by_host[h] for h in hosts} <= sort_idx
    # one named thread per rank: "rank 5 (local 1)"
    for host, rank in pairs:
        if rank is None:
            continue
        pid = by_host[host] if host is not None else by_host["(no"]
        name = threads.get((pid, rank + 1))
        assert name is not None and re.fullmatch(rf"rank {rank}( \(local \d+\))?", name), (host, rank, name)
    # instants carry the raw line and file:line
    inst = [e for e in events if e["ph"] == "i" and e.get("cat") != "metadata"]
    assert inst and all("raw" in e["args"] and re.search(r":\d+$", e["args"]["at"]) for e in inst)
    # the cascade is there, with a flow arrow from the verdict to each of its events
    ats = {e["args"].get("at") for e in events if e.get("args") and "at" in e["args"]}
    for ev in cascade:
        if ev is not None and ev["ts"] is not None:
            assert f"{ev['file']}:{ev['line']}" in ats
    v = verdict["verdict"]
    if v.get("kind") not in (None, "none") and v.get("time"):
        assert any(e["ph"] == "X" and e["name"].startswith("VERDICT") for e in events)
        n_casc = sum(1 for ev in cascade if ev is not None and ev["ts"] is not None)
        assert sum(1 for e in events if e["ph"] == "s") == n_casc
        assert sum(1 for e in events if e["ph"] == "f") == n_casc
    # phases: a lane with progress markers at two or more times has a training slice
    con = open_ro(db)
    try:
        src = D.events_source(con)
        trained = {tuple(r[:2]) for r in con.execute(
            f"SELECT host, rank, count(DISTINCT ts) FROM {src} e WHERE ts IS NOT NULL AND {D.PROGRESS} "
            "GROUP BY ALL HAVING count(DISTINCT ts) >= 2").fetchall()}
    finally:
        con.close()
    training = {(e["pid"], e["tid"]) for e in events if e["ph"] == "X" and e["name"] == "training"}
    for host, rank in trained:
        pid = by_host[host] if host is not None else by_host["(no"]
        assert (pid, 1_000_000 if rank is None else rank + 1) in training, (host, rank)
    # the clock offsets used are in the metadata
    meta = trace["metadata"]["ranktrace"]
    assert meta["clock_offsets"] == [{k: c.get(k) for k in ("host", "offset_s", "uncertainty_s", "basis")}
                                     for c in verdict.get("clock") or []]
    assert meta["sampling"]["sampled"] is False


def test_perfetto_is_bounded_and_says_so(bundle_store):
    bundle, db, verdict, _ = bundle_store
    con = open_ro(db)
    try:
        trace = build_trace(con, verdict, max_events=40)
        timed = con.execute("SELECT count(*) FROM events WHERE ts IS NOT NULL").fetchone()[0]
    finally:
        con.close()
    s = trace["metadata"]["ranktrace"]["sampling"]
    if timed <= 40:
        pytest.skip("store too small to sample")
    assert s["sampled"] is True and s["events_in_trace"] <= 40 and s["rule"]
    log_events = [e for e in trace["traceEvents"] if e["ph"] in ("i", "X") and e.get("cat") not in
                  ("phase", "verdict", "metadata")]
    n_casc = len(verdict.get("cascade") or [])
    assert len(log_events) <= 40 + n_casc


def test_perfetto_without_verdict(bundle_store, tmp_path):
    _, db, _, _ = bundle_store
    out = tmp_path / "t.json"
    assert main(["export", "perfetto", "--db", str(db), "-o", str(out), "--no-verdict"]) == 0
    trace = load_trace(out)
    assert trace["metadata"]["ranktrace"]["verdict"] is None
    assert not any(e["ph"] in ("s", "f") for e in trace["traceEvents"])


def test_perfetto_gz_is_byte_stable(bundle_store, tmp_path):
    _, db, _, vfile = bundle_store
    a, b = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    assert main(["export", "perfetto", "--db", str(db), "-o", str(a), "--verdict", str(vfile)]) == 0
    assert main(["export", "perfetto", "--db", str(db), "-o", str(b), "--verdict", str(vfile)]) == 0
    assert a.read_bytes() == b.read_bytes()


# ---------------------------------------------------------------- parquet

def test_parquet_dataset_loads_back(bundle_store, tmp_path):
    _, db, _, _ = bundle_store
    out = tmp_path / "ds"
    assert main(["export", "parquet", "--db", str(db), str(out)]) == 0
    con = open_ro(db)
    try:
        n_events = con.execute("SELECT count(*) FROM events").fetchone()[0]
        cols = [r[0] for r in con.execute("DESCRIBE events").fetchall()]
        facts = {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in D.fact_tables(con)}
        n_files = con.execute("SELECT count(*) FROM files").fetchone()[0]
        hosts = {r[0] or "_unknown" for r in con.execute("SELECT DISTINCT host FROM events").fetchall()}
    finally:
        con.close()
    r = duckdb.connect()
    got = r.execute(f"SELECT count(*) FROM read_parquet('{out}/events/**/*.parquet', hive_partitioning = true)"
                    ).fetchone()[0]
    assert got == n_events
    got_cols = [x[0] for x in r.execute(
        f"DESCRIBE SELECT * FROM read_parquet('{out}/events/**/*.parquet', hive_partitioning = true)").fetchall()]
    assert set(cols) <= set(got_cols) and "node" in got_cols
    parts = {p.name for p in (out / "events").iterdir() if p.is_dir()}
    assert parts == {f"node={h}" for h in hosts}
    for t, n in facts.items():
        assert r.execute(f"SELECT count(*) FROM read_parquet('{out}/{t}/**/*.parquet', hive_partitioning = true)"
                         ).fetchone()[0] == n
    assert r.execute(f"SELECT count(*) FROM read_parquet('{out}/files/files.parquet')").fetchone()[0] == n_files
    # the events go out once, as `events`: the tables behind the view are not facts
    assert facts and not {"event_rows", "event_classes"} & ({p.name for p in out.iterdir()} | set(facts))
    manifest = json.loads((out / "_ranktrace.json").read_text())
    assert manifest["tables"]["events"]["rows"] == n_events
    # a fleet query: per node, the last event (hosts come back from the partition key)
    rows = r.execute(f"SELECT node, max(ts) FROM read_parquet('{out}/events/**/*.parquet', "
                     "hive_partitioning = true) GROUP BY node").fetchall()
    assert {x[0] for x in rows} == hosts


def test_parquet_refuses_a_non_empty_dir(bundle_store, tmp_path, capsys):
    _, db, _, _ = bundle_store
    out = tmp_path / "ds"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["export", "parquet", "--db", str(db), str(out)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_parquet_is_byte_stable_bounded_and_leaves_the_connection_as_it_was(bundle_store, tmp_path):
    """Rows stream in the store's order through one DuckDB thread under a
    memory limit: two exports are the same bytes, the spill directory is
    gone, and the caller's connection gets its own settings back."""
    from ranktrace.export.parquet import SPILL, export_parquet
    _, db, _, _ = bundle_store
    con = open_ro(db)
    settings = "SELECT current_setting('memory_limit'), current_setting('threads')"
    try:
        before = con.execute(settings).fetchone()
        for name in ("a", "b"):
            export_parquet(db, str(tmp_path / name))
        assert con.execute(settings).fetchone() == before
    finally:
        con.close()
    files = {d: {p.relative_to(tmp_path / d): p.read_bytes() for p in (tmp_path / d).rglob("*.parquet")}
             for d in ("a", "b")}
    assert files["a"] and files["a"] == files["b"]
    assert not any(p.name == SPILL for p in tmp_path.rglob("*"))
