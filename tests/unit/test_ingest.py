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
def test_killed_ingest_leaves_the_store_as_it_was(tmp_path):
    """An ingest killed while it parses (its part half-written under
    parts/.incoming) or merges (one transaction) leaves the store as it was:
    no file of it, no orphan line; the next ingest puts every file in."""
    d = tmp_path / "in"
    line = NCCL * 50
    for i in range(20):
        write(d / f"node{i:02d}.log", line * 800)   # ~2 MB, 40 k lines each
    db = tmp_path / "s.store"
    write(tmp_path / "first" / "a.log", TEXT)
    assert subprocess.run([sys.executable, "-m", "ranktrace.cli", "ingest", str(tmp_path / "first"), "--db", str(db),
                           "-q"]).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "ranktrace.cli", "ingest", str(d), "--db", str(db), "-q"])
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if any(f.stat().st_size for f in (db / "parts" / ".incoming").rglob("event_lines-*")):   # a row group out
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the ingest ended before it could be killed mid-parse"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    con = store_connect(str(db))
    assert con.execute("SELECT count(*), sum(events) FROM files").fetchone() == (1, 4)
    assert con.execute("SELECT count(*) FROM events").fetchone()[0] == 4
    con.close()
    assert subprocess.run([sys.executable, "-m", "ranktrace.cli", "ingest", str(d), "--db", str(db), "-q"]).returncode == 0
    con = store_connect(str(db))
    files = con.execute("SELECT file_id, events FROM files").fetchall()
    per = dict(con.execute("SELECT file_id, count(*) FROM events GROUP BY 1").fetchall())
    con.close()
    assert len(files) == 21 and {fid: n for fid, n in files} == per


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
    from ranktrace.ingest import core
    from ranktrace.ingest.discover import discover
    from ranktrace.ingest.pipeline import Claims, Parsed, parse_file
    from ranktrace import store
    tb = "Traceback (most recent call last):\n" + '  File "a.py", line 1, in f\n    x()\n' * 60 + "ValueError: boom\n"
    f = write(tmp_path / "in" / "tb.log", "before\n" + tb + "after\n")
    con = store.open_store(str(tmp_path / "s.store"), catalog)
    ref = next(discover([str(f)], print))
    msgs = list(parse_file(ref, catalog, Claims(con), chunk_bytes=512))   # ~20 batches
    assert msgs[-1].result.status == "ingested"
    events = core.events_table([(m.events, m.classes, m.facts) for m in msgs if isinstance(m, Parsed)])
    rows = [(r["line"], r["end_line"], r["message"]) for r in events.to_pylist()
            if r["pattern"] == "python_traceback.traceback"]
    assert rows == [(2, 123, "ValueError: boom")]
    assert events.num_rows == 3
