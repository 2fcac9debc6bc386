"""Damaged or unusual archives: the member or file is named with its
problem, the other inputs go in, and nothing is silently dropped."""

import io
import lzma
import tarfile
import zipfile

import duckdb

from ranktrace.ingest import discover as disc
from ranktrace.ingest.pipeline import ingest

LINE = b"2026-03-02 03:17:41 ERROR boom\n"


def _paths(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return sorted(r[0] for r in con.execute("SELECT DISTINCT file FROM events").fetchall())
    finally:
        con.close()


def test_zip_member_with_a_bad_crc_is_named_and_the_rest_goes_in(tmp_path, catalog):
    z = tmp_path / "b.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("bad.log", LINE * 50)
        zf.writestr("good.log", LINE)
    data = bytearray(z.read_bytes())
    at = data.index(LINE) + 5          # inside bad.log's stored bytes
    data[at] ^= 0xFF
    z.write_bytes(bytes(data))
    (tmp_path / "plain.log").write_bytes(LINE)
    warned = []
    s = ingest([str(z), str(tmp_path / "plain.log")], str(tmp_path / "s.duckdb"), catalog, warn=warned.append)
    said = warned + [p for f in s.files if f.path.endswith("bad.log") for p in f.problems]
    assert any("bad.log" in p and "CRC" in p for p in said), said
    assert not any(p.endswith("bad.log") for p in _paths(tmp_path / "s.duckdb"))
    assert any(p.endswith("good.log") for p in _paths(tmp_path / "s.duckdb"))
    assert any(p.endswith("plain.log") for p in _paths(tmp_path / "s.duckdb"))


def test_corrupt_xz_is_named(tmp_path, catalog):
    good = lzma.compress(LINE * 100)
    (tmp_path / "c.log.xz").write_bytes(good[:20] + b"\x00" * 40 + good[60:])
    (tmp_path / "plain.log").write_bytes(LINE)
    s = ingest([str(tmp_path)], str(tmp_path / "s.duckdb"), catalog)
    xz = [f for f in s.files if f.path.endswith(".xz")][0]
    assert xz.status == "failed" and xz.problems
    assert any(p.endswith("plain.log") for p in _paths(tmp_path / "s.duckdb"))


def test_a_truncated_tar_gz_says_how_far_it_got(tmp_path, catalog):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for i in range(50):
            body = (f"2026-03-02 03:17:{i:02d} INFO member {i} " + "x" * 2000 + "\n").encode()
            info = tarfile.TarInfo(f"m{i:02d}.log")
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))
    data = buf.getvalue()
    (tmp_path / "t.tar.gz").write_bytes(data[: len(data) // 2])
    warned = []
    ingest([str(tmp_path / "t.tar.gz")], str(tmp_path / "s.duckdb"), catalog, warn=warned.append)
    assert any("truncated or damaged" in w for w in warned), warned
    assert 0 < len(_paths(tmp_path / "s.duckdb")) < 50


def test_large_tar_members_stream_from_the_archive(tmp_path, catalog, monkeypatch):
    body = b"".join(f"2026-03-02 03:17:41 INFO line {i}\n".encode() for i in range(3000))
    with tarfile.open(tmp_path / "a.tar.gz", "w:gz") as tf:
        info = tarfile.TarInfo("big.log")
        info.size = len(body)
        tf.addfile(info, io.BytesIO(body))
    monkeypatch.setattr(disc, "MEMBER_IN_MEMORY", 1024)   # 'big' here: streamed, not held
    refs = list(disc.discover([str(tmp_path / "a.tar.gz")], print))
    assert not isinstance(refs[0].opener(), io.BytesIO)
    ingest([str(tmp_path / "a.tar.gz")], str(tmp_path / "s.duckdb"), catalog)
    con = duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM events").fetchone()[0] == 3000
