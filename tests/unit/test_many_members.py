"""An archive of many small members (issue 15: 100,000 members did not
finish in 5 minutes): what discover keeps per member must not add up.
Measured as Python memory held while walking the archive (tracemalloc), for
10x the members: tarfile used to keep every TarInfo it had read."""

import io
import tarfile
import tracemalloc
import zipfile

import pytest

from ranktrace.ingest.discover import discover


def _tar(path, n: int) -> None:
    with tarfile.open(path, "w") as tf:
        for i in range(n):
            body = f"2026-03-02 03:17:41 INFO member {i}\n".encode()
            info = tarfile.TarInfo(f"d{i // 1000}/m{i}.log")
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))


def _peak_walking(path) -> tuple[int, int]:
    """(members seen, peak bytes traced) while discover walks `path`, each
    member dropped once seen (as ingest does once it is parsed)."""
    tracemalloc.start()
    try:
        n = sum(1 for _ in discover([str(path)], print, hints=[]))
        return n, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("suffix", ["tar", "tar.gz"])
def test_memory_per_member_does_not_add_up(tmp_path, suffix):
    peaks = {}
    for n in (1000, 10_000):
        plain = tmp_path / f"m{n}.tar"
        _tar(plain, n)
        path = plain
        if suffix == "tar.gz":
            import gzip
            path = tmp_path / f"m{n}.tar.gz"
            path.write_bytes(gzip.compress(plain.read_bytes()))
        seen, peaks[n] = _peak_walking(path)
        assert seen == n
    assert peaks[10_000] < 2 * peaks[1000], f"peak traced memory {peaks}: grows with the members"


def test_zip_members_are_listed_once(tmp_path, monkeypatch):
    """A zip's central directory is read once (zipfile), not per member:
    opening the archive for each member would cost n^2."""
    z = tmp_path / "m.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for i in range(2000):
            zf.writestr(f"m{i}.log", f"line {i}\n")
    opened = []
    real = zipfile.ZipFile.__init__

    def counting(self, *a, **kw):
        opened.append(1)
        real(self, *a, **kw)
    monkeypatch.setattr(zipfile.ZipFile, "__init__", counting)
    refs = list(discover([str(z)], print, hints=[]))
    for r in refs:
        with r.opener() as fh:
            fh.read()
    assert len(refs) == 2000 and len(opened) == 1
