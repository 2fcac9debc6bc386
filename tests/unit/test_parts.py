"""Parts (ingest --part) merged into a store equal a direct ingest of the same files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ranktrace.correlate import diagnose
from ranktrace.store import PLACEHOLDER_YEAR
from ranktrace.ingest.parts import MANIFEST, PartWriter
from ranktrace.ingest.pipeline import ingest
from ranktrace.merge import PartError, find_parts, merge
from ranktrace import store
from rt_testlib import REPO, split_by_host, store_differences, write
from ranktrace.store import connect as store_connect

BUNDLE = REPO / "sample_logs" / "slurm_torchrun_sigkill_skew"   # 4 nodes n1..n4, a 37 s clock skew on n2
ANSWERS = ["README.md", "truth.json", "expected_verdict.json"]
EXCLUDE = ANSWERS
# Columns that differ by design: when a file went in, and where it was read from (a copy per node).
IGNORED = {"files": {"ingested_at", "source"}}


def table_differences(a_db: str, b_db: str) -> dict:
    return store_differences(a_db, b_db, IGNORED)


def diagnosis(db: str) -> dict:
    con = store.open_readonly(db)
    try:
        return json.loads(json.dumps(diagnose(con), default=str))
    finally:
        con.close()


@pytest.fixture(scope="module")
def direct(tmp_path_factory, catalog):
    """The bundle ingested directly into a store."""
    d = tmp_path_factory.mktemp("direct")
    db = str(d / "direct.duckdb")
    ingest([str(BUNDLE)], db, catalog, exclude=EXCLUDE)
    return db


@pytest.fixture(scope="module")
def parts(tmp_path_factory, catalog, direct):
    """The same files as three parts, split by host, written into one directory."""
    d = tmp_path_factory.mktemp("parts")
    dirs = split_by_host(BUNDLE, direct, d / "nodes", [["n1", "n4"], ["n2"], ["n3"]])
    out = d / "parts"
    made = [ingest([str(x)], "unused.duckdb", catalog, exclude=EXCLUDE, part=str(out)).part for x in dirs]
    return out, made, dirs


def test_three_parts_merged_equal_a_direct_ingest(tmp_path, catalog, direct, parts):
    out, made, _ = parts
    assert len(set(made)) == 3 and all(Path(p).parent == out for p in made)
    db = str(tmp_path / "merged.duckdb")
    s = merge([str(out)], db, catalog)
    assert (len(s.parts), s.duplicates, s.renumbered) == (3, 0, 0)
    con = store_connect(direct)
    n_files, n_events, n_inferred = con.execute(
        "SELECT (SELECT count(*) FROM files), count(*), count(*) FILTER (ts_kind = 'year_inferred') FROM events"
    ).fetchone()
    con.close()
    assert (s.files, s.events) == (n_files, n_events) and n_inferred > 0
    assert table_differences(direct, db) == {}
    a, b = diagnosis(direct), diagnosis(db)
    assert a["verdict"]["kind"] == "killed" and any(c["offset_s"] > 30 for c in a["clock"])
    assert b == a


def test_merging_twice_adds_nothing(tmp_path, catalog, direct, parts):
    out, _, _ = parts
    db = str(tmp_path / "m.duckdb")
    merge([str(out)], db, catalog)
    again = merge([str(out)], db, catalog)
    assert (again.files, again.events, again.parts) == (0, 0, [])
    con = store_connect(direct)
    assert again.duplicates == con.execute("SELECT count(*) FROM files").fetchone()[0]
    con.close()
    assert table_differences(direct, db) == {}


def test_merge_into_a_store_that_has_some_files_adds_the_others(tmp_path, catalog, direct, parts):
    out, _, dirs = parts
    db = str(tmp_path / "m.duckdb")
    ingest([str(dirs[1])], db, catalog, exclude=EXCLUDE)   # n2's files, directly
    s = merge([str(out)], db, catalog)
    con = store_connect(db)
    n2 = con.execute("SELECT count(*) FROM files WHERE host = 'n2'").fetchone()[0]
    con.close()
    assert n2 > 0 and s.duplicates == n2 and len(s.parts) == 2
    assert table_differences(direct, db) == {}


def test_parts_are_read_by_duckdb_directly(catalog, direct, parts):
    out, made, _ = parts
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    # what the store's view `events` is: rows joined to their classes
    ev = (f"read_parquet('{out}/*/event_lines-*.parquet') JOIN read_parquet('{out}/*/event_classes.parquet') "
          "USING (class_id)")
    events = con.execute(f"SELECT count(*), count(DISTINCT event_id) FROM {ev}").fetchone()
    kinds = dict(con.execute(f"DESCRIBE SELECT ts, raw, rank, kind FROM {ev}").fetchall()[i][:2] for i in range(4))
    files = con.execute(f"SELECT count(*) FROM read_parquet('{out}/*/files.parquet')").fetchone()[0]
    # The year of year-less times is chosen at merge, over all parts: still the placeholder here.
    years = con.execute(f"SELECT DISTINCT year(ts) FROM {ev} WHERE ts_kind = 'year_inferred'").fetchall()
    # a line's message is cut out of its raw text as the store's view event_rows cuts it
    msgs = con.execute(f"SELECT hash(list(substr(raw, message_at, message_len) ORDER BY event_id)) FROM {ev}").fetchone()
    d = store_connect(direct)
    want = d.execute("SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM files)").fetchone()
    want_msgs = d.execute("SELECT hash(list(message ORDER BY event_id)) FROM events").fetchone()
    d.close()
    assert events == (want[0], want[0]) and files == want[1]
    assert msgs == want_msgs
    # (an integer identity is a BIGINT in a part, as the engine writes it; view event_lines gives rank as INTEGER)
    assert kinds == {"ts": "TIMESTAMP", "raw": "VARCHAR", "rank": "BIGINT", "kind": "VARCHAR"}
    assert years == [(PLACEHOLDER_YEAR,)]
    m = json.loads((Path(made[1]) / MANIFEST).read_text())
    lines = sum(pq.ParquetFile(Path(made[1]) / f).metadata.num_rows for f in m["lines"].values())
    assert lines == sum(m["counts"][k] for k in m["lines"]) > 0
    assert 0 < m["counts"]["event_classes"] < lines
    assert m["schema_version"] == store.SCHEMA_VERSION and len(m["catalog"]) == 32


def test_fact_event_ids_are_delta_encoded_without_a_dictionary(parts):
    """A fact's event_id is one value a row: delta encoded, no dictionary tried (parts.PartWriter._writer)."""
    _, made, _ = parts
    checked = 0
    for part in made:
        for f in sorted(Path(part).glob("*.parquet")):
            meta = pq.ParquetFile(f).metadata
            names = [meta.schema.column(i).name for i in range(meta.num_columns)]
            if f.name.startswith("event_lines") or "event_id" not in names or not meta.num_row_groups:
                continue
            col = meta.row_group(0).column(names.index("event_id"))
            assert "DELTA_BINARY_PACKED" in col.encodings and not col.has_dictionary_page, (f.name, col.encodings)
            checked += 1
    assert checked


def test_part_name_is_deterministic_and_a_new_ingest_replaces_it(tmp_path, catalog, parts):
    _, made, dirs = parts
    out = tmp_path / "again"
    a = ingest([str(dirs[2])], "unused.duckdb", catalog, exclude=EXCLUDE, part=str(out)).part
    b = ingest([str(dirs[2])], "unused.duckdb", catalog, exclude=EXCLUDE, part=str(out)).part
    assert a == b and Path(a).name == Path(made[2]).name
    assert [p.name for p in out.iterdir() if p.name != ".incoming"] == [Path(a).name]
    assert list((out / ".incoming").iterdir()) == []


@pytest.mark.parametrize("key,value,says", [
    ("schema_version", "1", "schema version 1"),
    ("catalog", "0" * 32, "another catalog"),
    ("ranktrace_version", "0.0.1", "ranktrace 0.0.1"),
    ("ranktrace_part", 99, "part format 99"),
])
def test_a_part_of_another_version_is_refused_and_nothing_merged(tmp_path, catalog, parts, key, value, says):
    out, made, _ = parts
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    victim = bad / Path(made[1]).name
    m = json.loads((victim / MANIFEST).read_text())
    m[key] = value
    (victim / MANIFEST).write_text(json.dumps(m))
    db = tmp_path / "m.duckdb"
    with pytest.raises(PartError) as e:
        merge([str(bad)], str(db), catalog)
    assert says in str(e.value) and str(victim) in str(e.value)
    assert not db.exists()   # refused before the store was opened
    r = subprocess.run([sys.executable, "-m", "ranktrace.cli", "merge", str(bad), "--db", str(db)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and says in r.stderr and "nothing was merged" in r.stderr


def test_a_damaged_part_is_refused(tmp_path, catalog, parts):
    out, made, _ = parts
    bad = tmp_path / "bad"
    shutil.copytree(Path(made[0]), bad / "p")
    f = bad / "p" / "event_lines-0.parquet"
    pq.write_table(pq.read_table(f).slice(0, 3), f)
    with pytest.raises(PartError, match="manifest says"):
        merge([str(bad)], str(tmp_path / "m.duckdb"), catalog)
    with pytest.raises(PartError, match="no part in it"):
        find_parts([str(tmp_path)])


def test_a_taken_file_id_is_renumbered_with_its_events(tmp_path, catalog):
    """Two files of two parts with the same id (31-bit hashes can collide):
    the second moves to the next free id, as ingest does, and so do its events, and the classes
    its NCCL communicator's facts name (store.LINE_FACTS)."""
    a = write(tmp_path / "a" / "x.log", "2026-03-01T00:00:00Z first\n2026-03-01T00:00:01Z second\n")
    b = write(tmp_path / "b" / "y.log", "2026-03-01T00:00:02Z third\nINFO:train:step 7 loss 0.5\n"
              "node1:12:12 [0] NCCL INFO comm 0x1f rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n")
    out = tmp_path / "parts"
    pa_ = Path(ingest([str(a.parent)], "u", catalog, part=str(out)).part)
    pb = Path(ingest([str(b.parent)], "u", catalog, part=str(out)).part)
    taken = pq.read_table(pa_ / "files.parquet")["file_id"][0].as_py()
    con = duckdb.connect()
    for t, ids in (("files", []), ("event_lines-0", ["event_id", "class_id"]), ("event_classes", ["class_id"]),
                   ("progress", ["event_id"]), ("nccl_comm", ["event_id", "line_class_id"])):
        f = pb / f"{t}.parquet"
        ev = "".join(f", ({taken}::BIGINT << 32) | ({c} & 4294967295) AS {c}" for c in ids)
        con.execute(f"COPY (SELECT * REPLACE ({taken} AS file_id{ev}) FROM read_parquet('{f}')) "
                    f"TO '{f}.new' (FORMAT parquet)")
        Path(f"{f}.new").replace(f)
    db = str(tmp_path / "m.duckdb")
    s = merge([str(out)], db, catalog)
    m = store_connect(db)
    rows = m.execute("SELECT f.path, f.file_id, e.event_id >> 32, e.line FROM files f JOIN events e USING (file_id) "
                     "ORDER BY 1, 4").fetchall()
    assert m.execute("SELECT count(*) FROM event_rows").fetchone()[0] == 5   # every row has its class
    moved = (taken + 1) if pa_.name < pb.name else taken
    kept = taken if pa_.name < pb.name else taken + 1
    assert s.renumbered == 1
    assert rows == [("a/x.log", kept, kept, 1), ("a/x.log", kept, kept, 2), ("b/y.log", moved, moved, 1),
                    ("b/y.log", moved, moved, 2), ("b/y.log", moved, moved, 3)]
    assert m.execute("SELECT f.file_id, f.event_id >> 32, f.line_class_id >> 32, c.host FROM nccl_comm f "
                     "JOIN event_classes c ON c.class_id = f.line_class_id").fetchall() == [(moved, moved, moved, "node1")]
    # its progress facts, which the store reads where the part wrote them (store.PART_FACTS), moved with it
    assert m.execute("SELECT file_id, event_id >> 32, event_id & 4294967295, step FROM progress").fetchall() == [
        (moved, moved, 2, 7)]


def one_class(fid: int) -> pa.Table:
    """The one class of file `fid`'s lines (an unclaimed line's)."""
    return pa.table({"class_id": [fid << 32], "file_id": [fid], "file": [f"f{fid}"], "ts_kind": ["none"],
                     "format": ["raw"], "severity": ["info"], "role": ["info"]})


def test_part_writer_writes_row_groups_as_it_goes_and_drops_a_failed_file(tmp_path, catalog):
    """Classes and facts leave in row groups as they come; a file that failed
    leaves nothing in the part, in its tables or in the lines file the engine
    wrote its lines into."""
    from ranktrace.ingest import core
    con = store.open_store(":memory:", catalog)
    w = PartWriter(tmp_path / "parts", catalog, con, host="nodeA", row_group=1)
    k, sink = w.lines_sink()
    for fid, text in ((1, "2026-03-01T00:00:00Z a\n2026-03-01T00:00:01Z b\n"), (2, "c\nd\ne\n")):
        p = core.file_parser(catalog, fid, f"f{fid}", {})
        p.feed(text.encode(), True)
        for n, classes, facts in core.batches(p, sink):
            assert n > 0
            w.lines(fid, k)
            w.add(fid, classes, facts)
    assert w.counts["event_classes"] >= 1      # written out already (row groups of 1)
    w.done(1, [1, "f1", None, "raw", None, None, 1, 2, 2, 2, None, "s1", None, None, None, None, None])
    w.done(2, None)                      # file 2 failed: its rows, written out or not, go
    w.close()
    part = Path(w.path)
    assert part.parent == tmp_path / "parts" and part.name.startswith("nodeA-")
    m = json.loads((part / MANIFEST).read_text())
    ev = pq.read_table(part / m["lines"]["event_lines-0"])
    assert sorted(set(ev["file_id"].to_pylist())) == [1] and len(ev) == 2
    assert set(pq.read_table(part / "event_classes.parquet")["file_id"].to_pylist()) == {1}
    assert m["counts"]["event_lines-0"] == 2 and m["counts"]["files"] == 1 and m["host"] == "nodeA"
    assert pq.ParquetFile(part / "files.parquet").metadata.num_rows == 1


def test_an_aborted_part_leaves_nothing_for_merge(tmp_path, catalog):
    from ranktrace.ingest import core
    con = store.open_store(":memory:", catalog)
    w = PartWriter(tmp_path / "parts", catalog, con, host="nodeB", row_group=2)
    k, sink = w.lines_sink()
    p = core.file_parser(catalog, 1, "f1", {})
    p.feed(b"x\ny\nz\n", True)
    for _, classes, facts in core.batches(p, sink):
        w.lines(1, k)
        w.add(1, classes, facts)
    assert sink.rows() == 3
    w.abort()
    assert [p.name for p in (tmp_path / "parts").iterdir()] == [".incoming"]
    assert list((tmp_path / "parts" / ".incoming").iterdir()) == []
    with pytest.raises(PartError, match="no part in it"):
        find_parts([str(tmp_path / "parts")])


def test_ingest_part_cli_refuses_a_db_and_an_unwritable_dir(tmp_path):
    log = write(tmp_path / "in" / "a.log", "2026-03-01T00:00:00Z hello\n")
    cli = [sys.executable, "-m", "ranktrace.cli", "ingest", str(log)]
    r = subprocess.run(cli + ["--part", str(tmp_path / "p"), "--db", str(tmp_path / "x.duckdb")],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "give --db to `ranktrace merge`" in r.stderr
    (tmp_path / "file").write_text("")
    r = subprocess.run(cli + ["--part", str(tmp_path / "file" / "p")], capture_output=True, text=True)
    assert r.returncode != 0 and "cannot create it" in r.stderr and not (tmp_path / "x.duckdb").exists()
    r = subprocess.run(cli + ["--part", str(tmp_path / "p")], capture_output=True, text=True)
    assert r.returncode == 0 and f"into {tmp_path / 'p'}/" in r.stdout


def test_a_file_in_two_parts_is_stored_once(tmp_path, catalog, monkeypatch):
    """A job's output on a shared file system, ingested on every node."""
    shared = tmp_path / "shared"
    write(shared / "slurm-7.out", "2026-03-01T00:00:00Z step 1\n2026-03-01T00:00:01Z step 2\n")
    write(tmp_path / "n2" / "shared" / "own.log", "2026-03-01T00:00:02Z n2 only\n")
    out = tmp_path / "parts"
    monkeypatch.setenv("SLURMD_NODENAME", "n1")
    p1 = ingest([str(shared)], "u", catalog, part=str(out)).part
    monkeypatch.setenv("SLURMD_NODENAME", "n2")
    p2 = ingest([str(shared), str(tmp_path / "n2" / "shared")], "u", catalog, part=str(out)).part
    assert (Path(p1).name[:3], Path(p2).name[:3]) == ("n1-", "n2-")
    db = str(tmp_path / "m.duckdb")
    s = merge([str(out)], db, catalog)
    con = store_connect(db)
    assert (s.files, s.duplicates, s.events) == (2, 1, 3)
    assert con.execute("SELECT file, count(*) FROM events GROUP BY 1 ORDER BY 1").fetchall() == [
        ("shared/own.log", 1), ("shared/slurm-7.out", 2)]
