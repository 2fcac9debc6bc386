"""zstd streams: a cut .zst or .tar.zst is reported (the zstandard decoder
itself ends quietly at the cut), and a member over MEMBER_IN_MEMORY inside
a .tar.zst is streamed from the archive with bounded memory, not refused."""

import io
import random
import subprocess
import sys
import tarfile
import textwrap

import duckdb
import pytest
import zstandard

from ranktrace.ingest import discover as disc
from ranktrace.ingest.pipeline import ingest
from ranktrace.store import connect as store_connect

N_LINES = 20_000


def _text(n: int = N_LINES) -> bytes:
    rnd = random.Random(7)   # not too compressible: the stream has many blocks
    return b"".join(f"2026-03-02 03:17:{i % 60:02d} INFO step {i} loss {rnd.random():.6f}\n".encode()
                    for i in range(n))


def _count(db) -> int:
    con = store_connect(str(db))
    try:
        return con.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        con.close()


@pytest.mark.parametrize("checksum", [False, True])
def test_a_cut_zst_is_named_truncated_at_every_cut(tmp_path, catalog, checksum):
    data = zstandard.ZstdCompressor(level=3, write_checksum=checksum).compress(_text())
    # In the frame header, in a block header, inside a block, in the checksum.
    for i, cut in enumerate((6, 12, len(data) // 3, len(data) // 2, len(data) - 2)):
        f = tmp_path / f"cut{i}.log.zst"
        f.write_bytes(data[:cut])
        warned = []
        s = ingest([str(f)], str(tmp_path / f"s{i}.duckdb"), catalog, warn=warned.append)
        assert any(f"cut{i}.log.zst" in w and "truncated" in w for w in warned), (cut, warned)
        assert _count(tmp_path / f"s{i}.duckdb") < N_LINES, cut
        assert s.files[0].problems, "the damage is in the files row too"


def test_a_whole_zst_of_several_frames_has_no_complaint(tmp_path, catalog):
    text = _text()
    cut = text.index(b"\n", len(text) // 2) + 1
    skippable = (0x184D2A5A).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    data = (zstandard.ZstdCompressor(write_checksum=True).compress(text[:cut]) + skippable
            + zstandard.ZstdCompressor(write_content_size=False).compress(text[cut:]))
    (tmp_path / "ok.log.zst").write_bytes(data)
    warned = []
    ingest([str(tmp_path / "ok.log.zst")], str(tmp_path / "s.duckdb"), catalog, warn=warned.append)
    assert warned == []
    assert _count(tmp_path / "s.duckdb") == N_LINES


def test_the_zstd_cli_output_and_its_cuts(tmp_path):
    """The zstd program's own frames (content size, checksum) are followed too."""
    zstd = pytest.importorskip("shutil").which("zstd")
    if zstd is None:
        pytest.skip("no zstd program")
    data = subprocess.run([zstd, "-q", "-c"], input=_text(), capture_output=True, check=True).stdout

    def read(b: bytes) -> bytes:
        with disc._decompressor("zstd", io.BytesIO(b)) as r:
            return r.read()
    assert read(data) == _text()
    for cut in (4, 9, len(data) // 2, len(data) - 1):
        with pytest.raises(EOFError):
            read(data[:cut])


def _tar_zst(path, members: dict[str, bytes]) -> None:
    with open(path, "wb") as fh, zstandard.ZstdCompressor().stream_writer(fh) as zw:
        with tarfile.open(fileobj=zw, mode="w|") as tf:
            for name, body in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(body)
                tf.addfile(info, io.BytesIO(body))


def test_a_cut_tar_zst_is_named(tmp_path, catalog):
    _tar_zst(tmp_path / "a.tar.zst", {f"m{i}.log": _text(3000) for i in range(4)})
    data = (tmp_path / "a.tar.zst").read_bytes()
    (tmp_path / "a.tar.zst").write_bytes(data[: len(data) * 2 // 3])
    warned = []
    ingest([str(tmp_path / "a.tar.zst")], str(tmp_path / "s.duckdb"), catalog, warn=warned.append)
    assert any("a.tar.zst" in w and ("truncated" in w) for w in warned), warned
    assert _count(tmp_path / "s.duckdb") < 4 * 3000


def test_a_big_tar_zst_member_is_streamed_not_refused(tmp_path, catalog, monkeypatch):
    text = _text()
    _tar_zst(tmp_path / "a.tar.zst", {"small.log": text[:200], "big.log": text, "after.log": text[:100]})
    monkeypatch.setattr(disc, "MEMBER_IN_MEMORY", 1024)   # 'big' here
    refs = {r.path.rsplit("!", 1)[1]: r for r in disc.discover([str(tmp_path / "a.tar.zst")], print)}
    with refs["big.log"].opener() as fh:
        assert not isinstance(fh, io.BytesIO) and fh.read() == text   # read again from the archive
    warned = []
    s = ingest([str(tmp_path / "a.tar.zst")], str(tmp_path / "s.duckdb"), catalog, warn=warned.append)
    assert warned == [] and sorted(f.status for f in s.files) == ["ingested"] * 3
    con = store_connect(str(tmp_path / "s.duckdb"))
    assert con.execute("SELECT lines_read FROM files WHERE path LIKE '%!big.log'").fetchone()[0] == N_LINES


# A member of MEMBER_SIZE bytes of log lines, made while it is compressed
# (nothing of that size is ever in memory or on disk, only its .tar.zst).
_MAKE = textwrap.dedent("""
    import io, sys, tarfile, zstandard
    size = int(sys.argv[2])
    line = b"2026-03-02 03:17:41 INFO " + b"x" * 174 + b"\\n"
    class Lines(io.RawIOBase):
        def __init__(self):
            self.left = size
        def readable(self):
            return True
        def readinto(self, buf):
            n = min(len(buf), self.left) // len(line) * len(line)
            buf[:n] = line * (n // len(line))
            self.left -= n
            return n
    with open(sys.argv[1], "wb") as fh, zstandard.ZstdCompressor(level=1).stream_writer(fh) as zw:
        with tarfile.open(fileobj=zw, mode="w|") as tf:
            for name, n in (("big.log", size), ("after.log", len(line))):
                info = tarfile.TarInfo(name)
                info.size = n
                tf.addfile(info, io.BufferedReader(Lines(), 1 << 20) if name == "big.log" else io.BytesIO(line))
""")
LINE_BYTES = 200
MEMBER_SIZE = (72 << 20) // LINE_BYTES * LINE_BYTES     # past MEMBER_IN_MEMORY (64 MiB)

# Reads every member through discover as ingest does (hash, then the text):
# the peak RSS of this child says whether a member was held whole.
_READ = textwrap.dedent("""
    import sys
    from ranktrace import store
    from ranktrace.ingest.discover import discover, open_text_stream
    for ref in discover([sys.argv[1]], print):
        store.sha256_file(ref.opener)
        with open_text_stream(ref) as fh:
            n = 0
            while (b := fh.read(4 << 20)):
                n += len(b)
        print(ref.path, n)
""")


def _make_tar_zst(path, size: int):
    subprocess.run([sys.executable, "-c", _MAKE, str(path), str(size)], check=True)
    assert path.stat().st_size < 8 << 20
    return path


@pytest.fixture(scope="module")
def big_tar_zst(tmp_path_factory):
    return _make_tar_zst(tmp_path_factory.mktemp("bigzst") / "big.tar.zst", MEMBER_SIZE)


# Runs a command and prints its peak RSS (KB) last on stderr: RUSAGE_CHILDREN
# of a process whose only child it is (this test process has had others).
_PEAK = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; "
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(rc)")


def _child_peak_mb(cmd: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    proc = subprocess.run([sys.executable, "-c", _PEAK, *cmd], capture_output=True, text=True, timeout=600)
    return proc, int(proc.stderr.split()[-1]) / 1024


def test_a_member_over_64_mib_in_a_tar_zst_is_read_without_holding_it(tmp_path):
    """The input layer alone (no parsing), so that the member can be large
    next to what reading it needs (buffers of a few MB): 200 MiB."""
    size = (200 << 20) // LINE_BYTES * LINE_BYTES
    big = _make_tar_zst(tmp_path / "big.tar.zst", size)
    _tar_zst(tmp_path / "small.tar.zst", {"big.log": b"x\n"})     # the same child's baseline
    _, base = _child_peak_mb([sys.executable, "-c", _READ, str(tmp_path / "small.tar.zst")])
    proc, peak = _child_peak_mb([sys.executable, "-c", _READ, str(big)])
    assert proc.returncode == 0, proc.stderr
    assert f"big.tar.zst!big.log {size}" in proc.stdout
    assert peak - base < 100, f"peak RSS {peak:.0f} MB vs {base:.0f} MB: the 200 MiB member was held"


def test_a_member_over_64_mib_in_a_tar_zst_is_ingested_whole(big_tar_zst, tmp_path):
    db = tmp_path / "s.duckdb"
    proc, peak = _child_peak_mb([sys.executable, "-m", "ranktrace.cli", "ingest", str(big_tar_zst),
                                 "--db", str(db), "-q"])
    assert proc.returncode == 0 and "skipped" not in proc.stderr, proc.stderr
    assert _count(db) == MEMBER_SIZE // LINE_BYTES + 1
    assert peak < 1024, f"peak RSS {peak:.0f} MB"
