"""Ingest end to end into a real DuckDB file: inputs, hostile inputs, idempotence."""

import bz2
import gzip
import io
import lzma
import os
import signal
import subprocess
import sys
import tarfile
import time
import zipfile

import pytest
import zstandard

from rt_testlib import write
from ranktrace.store import connect as store_connect

NCCL = "calefo8:55154:55833 [0] NCCL INFO proxy.cc:698 -> 6\n"
TEXT = NCCL * 3 + "plain words\n"


def counts(con):
    return con.execute("SELECT count(*) FROM files").fetchone()[0], con.execute("SELECT count(*) FROM events").fetchone()[0]


def test_reingest_adds_nothing_and_new_files_add(tmp_path, catalog):
    from ranktrace.ingest.pipeline import ingest
    import duckdb
    a = write(tmp_path / "in" / "a.log", TEXT)
    db = str(tmp_path / "s.duckdb")
    s1 = ingest([str(a)], db, catalog)
    s2 = ingest([str(a)], db, catalog)
    assert [f.status for f in s1.files] == ["ingested"] and [f.status for f in s2.files] == ["duplicate"]
    write(tmp_path / "in" / "b.log", TEXT + "more\n")
    ingest([str(tmp_path / "in")], db, catalog)
    con = store_connect(db)
    assert counts(con) == (2, 9)
    assert con.execute("SELECT count(DISTINCT event_id) FROM events").fetchone()[0] == 9


def test_compressed_files_and_archives(tmp_path, ingest_to):
    d = tmp_path / "in"
    write(d / "a.log.gz", gzip.compress(TEXT.encode()))
    write(d / "b.log.bz2", bz2.compress(TEXT.encode() + b"b\n"))
    write(d / "c.log.xz", lzma.compress(TEXT.encode() + b"c\n"))
    write(d / "d.log.zst", zstandard.ZstdCompressor().compress(TEXT.encode() + b"d\n"))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = (TEXT + "e\n").encode()
        ti = tarfile.TarInfo("node1/e.log")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    write(d / "bundle.tar.gz", buf.getvalue())
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("node2/f.log", TEXT + "f\n")
    write(d / "bundle.zip", zbuf.getvalue())
    s, con = ingest_to([d])
    assert sorted(f.status for f in s.files) == ["ingested"] * 6
    paths = [r[0] for r in con.execute("SELECT path FROM files ORDER BY path").fetchall()]
    assert any(p.endswith("bundle.tar.gz!node1/e.log") for p in paths)
    assert any(p.endswith("bundle.zip!node2/f.log") for p in paths)
    assert con.execute("SELECT count(*) FROM events WHERE format = 'nccl'").fetchone()[0] == 18
    # The host hint comes from the node1/ directory inside the archive.
    assert con.execute("SELECT host FROM files WHERE path LIKE '%e.log'").fetchone()[0] == "node1"


def test_hostile_archive_members_never_touch_disk(tmp_path, ingest_to):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name in ("../escape.log", "/tmp/ranktrace-abs-escape.log", "ok.log"):
            data = TEXT.encode()
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        link = tarfile.TarInfo("link.log")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tf.addfile(link)
    arch = write(tmp_path / "in" / "evil.tar", buf.getvalue())
    before = set(os.listdir(tmp_path))
    s, con = ingest_to([arch])
    assert not (tmp_path / "escape.log").exists() and not os.path.exists("/tmp/ranktrace-abs-escape.log")
    assert set(os.listdir(tmp_path)) - before == {"store.duckdb"}
    # Same content under three names: three files (their paths differ).
    assert any("link" in w and "never followed" in w for w in s.warnings)
    # The members' text is read (from memory) under their archive names.
    assert con.execute("SELECT count(*) FROM files").fetchone()[0] == 3
    assert con.execute("SELECT count(*) FROM events WHERE raw LIKE '%passwd%' OR raw LIKE 'root:%'").fetchone()[0] == 0


def test_decompression_bomb_is_refused_with_a_message(tmp_path, ingest_to, monkeypatch):
    from ranktrace.ingest import discover
    monkeypatch.setattr(discover, "MIN_RATIO_CHECK", 1 << 20)
    monkeypatch.setattr(discover, "MAX_RATIO", 100)
    bomb = write(tmp_path / "in" / "bomb.log.gz", gzip.compress(b"A" * (20 << 20)))
    ok = write(tmp_path / "in" / "ok.log", TEXT)
    s, con = ingest_to([bomb, ok])
    assert any("bomb.log.gz" in w and "decompression bomb" in w for w in s.warnings)
    assert {f.path.rsplit("/", 1)[-1]: f.status for f in s.files} == {"bomb.log.gz": "failed", "ok.log": "ingested"}
    assert con.execute("SELECT count(*) FROM files").fetchone()[0] == 1, "a refused file leaves nothing behind"


def test_bad_inputs_get_messages_and_the_rest_goes_in(tmp_path, ingest_to):
    d = tmp_path / "in"
    write(d / "binary.bin", bytes(range(256)) * 64)
    write(d / "truncated.log.gz", gzip.compress(TEXT.encode() * 200)[:-40])
    write(d / "empty.log", "")
    write(d / "crlf.log", TEXT.replace("\n", "\r\n"))
    write(d / "latin1.log", "caf\xe9 latin-1 text\n".encode("latin-1"))
    write(d / "nul.log", b"before\x00after\n")
    write(d / "longline.log", b"x" * (3 << 20) + b"\n" + NCCL.encode())
    s, con = ingest_to([d, tmp_path / "does-not-exist.log"])
    w = "\n".join(s.warnings)
    assert "binary.bin: binary data" in w
    assert "truncated.log.gz: compressed data is truncated" in w and "kept the" in w
    assert con.execute("SELECT count(*) FROM events WHERE file LIKE '%truncated.log.gz'").fetchone()[0] > 100
    assert "empty.log: empty file" in w
    assert "does-not-exist.log: no such file" in w
    assert "latin1.log: invalid UTF-8" in w and "nul.log: 1 NUL bytes" in w
    assert "longline.log: 1 line(s) longer than" in w
    crlf = con.execute("SELECT raw FROM events WHERE file LIKE '%crlf.log' ORDER BY line").fetchall()
    assert crlf[0][0] == NCCL.strip()
    assert con.execute("SELECT count(*) FROM events WHERE file LIKE '%longline.log' AND format = 'nccl'").fetchone()[0] == 1


def test_stdin(tmp_path, ingest_to):
    s, con = ingest_to(["-"], stdin=io.BytesIO(TEXT.encode()))
    assert con.execute("SELECT path, events FROM files").fetchall() == [("<stdin>", 4)]


def test_results_do_not_depend_on_input_order(tmp_path, catalog):
    from ranktrace.ingest.pipeline import ingest
    import duckdb
    a = write(tmp_path / "in" / "n1.log", TEXT)
    b = write(tmp_path / "in" / "n2.log", TEXT + "x\n")
    ingest([str(a), str(b)], str(tmp_path / "1.duckdb"), catalog)
    ingest([str(b), str(a)], str(tmp_path / "2.duckdb"), catalog)
    q = "SELECT event_id, file, line, host, format FROM events ORDER BY event_id"
    r1 = store_connect(str(tmp_path / "1.duckdb")).execute(q).fetchall()
    r2 = store_connect(str(tmp_path / "2.duckdb")).execute(q).fetchall()
    assert r1 == r2 and len(r1) == 9


# The CLI, with the writer committing every row group (not every COMMIT_ROWS
# rows): a test-sized input then sees many commits before it is killed.
_SMALL_COMMITS = ("import sys; from functools import partial; from ranktrace.ingest import pipeline, writer; "
                  "pipeline.Writer = partial(writer.Writer, group_rows=writer.ROW_GROUP, "
                  "commit_rows=writer.ROW_GROUP); from ranktrace.cli import main; sys.exit(main())")


def test_killed_ingest_leaves_complete_files_only(tmp_path):
    import duckdb
    d = tmp_path / "in"
    line = NCCL * 50
    for i in range(60):
        write(d / f"node{i:02d}.log", line * 800)   # ~2 MB, 40 k lines each
    stored = []
    # Killed once the store has grown past a size: a kill before the first
    # commit proves little, so a later kill is tried until one lands between.
    for size_mb in (3, 8, 20, 40):
        db = tmp_path / f"s{size_mb}.duckdb"
        proc = subprocess.Popen([sys.executable, "-c", _SMALL_COMMITS, "ingest", str(d), "--db", str(db), "-q"])
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            if db.exists() and db.stat().st_size > size_mb << 20:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        con = store_connect(str(db))
        files = con.execute("SELECT file_id, events FROM files").fetchall()
        per = dict(con.execute("SELECT file_id, count(*) FROM events GROUP BY 1").fetchall())
        con.close()
        assert {fid: n for fid, n in files} == per, "every stored file is complete, no orphan events"
        stored.append(len(files))
        if 0 < len(files) < 60:
            break
    assert 0 < stored[-1] < 60, f"no kill landed between the first commit and the end: files stored {stored}"


def test_a_file_named_twice_goes_in_once_even_in_parallel(tmp_path, ingest_to):
    a = write(tmp_path / "in" / "a.log", TEXT)
    s, con = ingest_to([a, a, tmp_path / "in"], workers=3)
    assert sorted(f.status for f in s.files) == ["duplicate", "duplicate", "ingested"]
    assert counts(con) == (1, 4)


def test_path_hints_of_a_file_named_directly(tmp_path, ingest_to):
    f = write(tmp_path / "deep" / "node2" / "run_x" / "attempt_0" / "3" / "stderr.log", TEXT)
    s, con = ingest_to([f])
    assert con.execute("SELECT host, local_rank FROM files").fetchone() == ("node2", 3)


def test_a_block_longer_than_a_batch_stays_one_event(tmp_path, catalog):
    from ranktrace.ingest.pipeline import ingest_file
    from ranktrace.ingest.discover import discover
    from ranktrace import store
    tb = "Traceback (most recent call last):\n" + '  File "a.py", line 1, in f\n    x()\n' * 60 + "ValueError: boom\n"
    f = write(tmp_path / "in" / "tb.log", "before\n" + tb + "after\n")
    con = store.open_store(str(tmp_path / "s.duckdb"), catalog)
    ref = next(discover([str(f)], print))
    r = ingest_file(con, ref, catalog, chunk_bytes=512)   # ~20 batches
    assert r.status == "ingested"
    rows = con.execute("SELECT line, end_line, message FROM events WHERE pattern = 'python_traceback.traceback'"
                       ).fetchall()
    assert rows == [(2, 123, "ValueError: boom")]
    assert con.execute("SELECT count(*) FROM events").fetchone()[0] == 3


def _nccl_file(catalog):
    """fid -> (rows, classes, facts) of a file of 10 NCCL error lines, as the engine returns them."""
    import pyarrow as pa

    from ranktrace.ingest import core

    def as_file(fid):
        fp = core.file_parser(catalog, fid, f"{fid}.log", {})
        fp.feed((NCCL * 10).encode(), True)
        rows, classes, facts = core.whole(core.batches(fp))
        return rows, classes, {t: pa.Table.from_batches(b) for t, b in facts.items()}
    return as_file


def test_a_file_failing_after_its_rows_went_in_leaves_nothing(tmp_path, catalog):
    """The writer shares one transaction among files: a file that fails after
    some of its batches were inserted has them taken out again, facts
    included; the other files of the transaction stay, complete."""
    from ranktrace import store
    from ranktrace.ingest.writer import Writer
    con = store.open_store(str(tmp_path / "s.duckdb"), catalog)
    as_file = _nccl_file(catalog)

    w = Writer(con, group_rows=15, row_group=8)
    ev, classes, facts = as_file(1)
    assert len(facts["nccl_error"]) == 10
    w.add(1, ev, classes, facts)      # 10 rows: buffered
    assert not w.in_txn and w.buffered == 10
    ev2, classes2, facts2 = as_file(2)
    w.add(2, ev2, classes2, facts2)   # 20 rows: two whole row groups inserted (the transaction is
    assert w.in_txn and w.buffered == 4   # open), the last 4 rows of file 2 wait for the commit
    w.done(1, None)                   # file 1 failed: its rows go
    row = [2, "b.log", None, "nccl", None, None, 1, 10, 10, 0, None, "sha-b", None, None, None, None, None]
    w.done(2, row)
    w.close()
    assert con.execute("SELECT DISTINCT file_id FROM events").fetchall() == [(2,)]
    assert con.execute("SELECT DISTINCT file_id FROM event_classes").fetchall() == [(2,)]
    assert con.execute("SELECT count(*) FROM event_rows").fetchone()[0] == 10
    assert con.execute("SELECT count(*), min(file_id) FROM nccl_error").fetchone() == (10, 2)
    assert con.execute("SELECT file_id, events FROM files").fetchall() == [(2, 10)]


def test_two_parsers_writers_append_side_by_side_and_one_can_roll_back(tmp_path, catalog):
    """ingest() gives every parser thread a Writer on a connection of its own:
    their transactions append to the same tables at once without conflict,
    and one that fails rolls back its own rows only."""
    from ranktrace import store
    from ranktrace.ingest.writer import Writer
    con = store.open_store(str(tmp_path / "s.duckdb"), catalog)
    as_file = _nccl_file(catalog)

    a, b = Writer(con.cursor(), group_rows=8, row_group=8), Writer(con.cursor(), group_rows=8, row_group=8)
    a.add(1, *as_file(1))
    b.add(2, *as_file(2))
    assert a.in_txn and b.in_txn          # both transactions hold inserted rows of the same tables
    row = [1, "a.log", None, "nccl", None, None, 1, 10, 10, 0, None, "sha-a", None, None, None, None, None]
    a.done(1, row)
    a.close()                             # commits while b's transaction is open
    b.abort()                             # b failed: its rows go, a's stay
    assert con.execute("SELECT DISTINCT file_id FROM events").fetchall() == [(1,)]
    assert con.execute("SELECT count(*) FROM event_rows").fetchone()[0] == 10
    assert con.execute("SELECT count(*), min(file_id) FROM nccl_error").fetchone() == (10, 1)
