"""Damaged or unusual archives: the member or file is named with its
problem, the other inputs go in, and nothing is silently dropped."""

import gzip
import io
import lzma
import tarfile
import zipfile

import duckdb
import pytest
import zstandard

from ranktrace.ingest import discover as disc
from ranktrace.ingest.pipeline import ingest
from ranktrace.store import connect as store_connect

LINE = b"2026-03-02 03:17:41 ERROR boom\n"


def _paths(db):
    con = store_connect(str(db))
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
    con = store_connect(str(tmp_path / "s.duckdb"))
    assert con.execute("SELECT count(*) FROM events").fetchone()[0] == 3000


def _tar_bytes(n: int = 3) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for i in range(n):
            body = LINE * 40
            info = tarfile.TarInfo(f"m{i}.log")
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))
    return buf.getvalue()


@pytest.mark.parametrize("kind", ["tar", "tar.gz", "tar.zst"])
def test_a_tar_cut_between_two_members_is_named(tmp_path, catalog, kind):
    """Found by tests/fuzz: tarfile takes a file that stops where a header
    should be for the end of the archive; the members after were lost unsaid."""
    cut = _tar_bytes()[:512 + 1536]            # m0's header and data: nothing after
    data = {"tar": cut, "tar.gz": gzip.compress(cut), "tar.zst": zstandard.ZstdCompressor().compress(cut)}[kind]
    (tmp_path / f"a.{kind}").write_bytes(data)
    warned = []
    ingest([str(tmp_path / f"a.{kind}")], str(tmp_path / "s.duckdb"), catalog, warn=warned.append)
    assert any(f"a.{kind}" in w and "truncated after 1 member" in w for w in warned), warned
    assert len(_paths(tmp_path / "s.duckdb")) == 1


def test_a_whole_tar_is_not_called_truncated(tmp_path, catalog):
    (tmp_path / "a.tar").write_bytes(_tar_bytes())
    warned = []
    ingest([str(tmp_path / "a.tar")], str(tmp_path / "s.duckdb"), catalog, warn=warned.append)
    assert warned == [] and len(_paths(tmp_path / "s.duckdb")) == 3


def test_a_tar_zst_damaged_in_its_first_frame_is_named_and_the_rest_goes_in(tmp_path, catalog):
    """Found by tests/fuzz: zstd's error at tarfile.open escaped discover
    and ended the whole ingest."""
    (tmp_path / "a.tar.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\xff" * 60)
    (tmp_path / "plain.log").write_bytes(LINE)
    warned = []
    ingest([str(tmp_path / "a.tar.zst"), str(tmp_path / "plain.log")], str(tmp_path / "s.duckdb"), catalog,
           warn=warned.append)
    assert any("a.tar.zst" in w and "cannot read archive" in w for w in warned), warned
    assert any(p.endswith("plain.log") for p in _paths(tmp_path / "s.duckdb"))


def test_a_gz_cut_inside_its_magic_is_named_not_read_as_text(tmp_path, catalog):
    """Found by tests/fuzz: a .gz of one byte (its magic cut) was stored
    as a one-line text log, unsaid."""
    (tmp_path / "a.log.gz").write_bytes(b"\x1f")
    warned = []
    s = ingest([str(tmp_path / "a.log.gz")], str(tmp_path / "s.duckdb"), catalog, warn=warned.append)
    assert any("a.log.gz" in w and "gzip" in w.lower() for w in warned), warned
    assert [f.status for f in s.files] == ["failed"] and _paths(tmp_path / "s.duckdb") == []


def _zip_with_patched_member(path, flag: int = 0, method: int | None = None) -> None:
    """A zip of bad.log and good.log whose bad.log says it is encrypted
    (general purpose flag bit 0) or of a compression method zipfile lacks:
    zipfile writes neither, so the headers are patched (APPNOTE 4.3.7/4.3.12)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("bad.log", LINE * 5)
        zf.writestr("good.log", LINE)
    data = bytearray(path.read_bytes())
    local = data.index(b"PK\x03\x04")                       # bad.log's local header comes first
    central = data.index(b"PK\x01\x02")                     # and its central directory entry
    for at, flag_off, method_off in ((local, 6, 8), (central, 8, 10)):
        data[at + flag_off] |= flag
        if method is not None:
            data[at + method_off:at + method_off + 2] = method.to_bytes(2, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("what, flag, method", [("encrypted", 1, None), ("unsupported method", 0, 97)])
def test_an_unreadable_zip_member_is_named_and_the_rest_goes_in(tmp_path, catalog, what, flag, method):
    z = tmp_path / "b.zip"
    _zip_with_patched_member(z, flag, method)
    warned = []
    ingest([str(z)], str(tmp_path / "s.duckdb"), catalog, warn=warned.append)
    assert any("b.zip!bad.log" in w for w in warned), (what, warned)
    paths = _paths(tmp_path / "s.duckdb")
    assert any(p.endswith("good.log") for p in paths) and not any(p.endswith("bad.log") for p in paths)
