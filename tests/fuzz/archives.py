"""Random archives and compressed streams for the input-layer fuzzing:
a container (tar, tar.gz/bz2/xz/zst, zip, or one .gz/.zst/.xz/.bz2 file),
members of mutated real lines (some of them compressed themselves, or an
archive inside the archive), odd member names, then damage (a cut, flipped
bytes, a zeroed run) or none."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
from dataclasses import dataclass, field

import zstandard
from hypothesis import strategies as st

from fuzzlib import mutated_text

CONTAINERS = ["tar", "tar.gz", "tar.bz2", "tar.xz", "tar.zst", "zip", "log.gz", "log.zst", "log.xz", "log.bz2"]
COMPRESS = {
    "gz": lambda b: gzip.compress(b, mtime=0), "bz2": bz2.compress, "xz": lzma.compress,
    "zst": lambda b: zstandard.ZstdCompressor().compress(b),
}
NAMES = st.sampled_from([
    "node1/rank0.log", "a.log", "../escape.log", "/abs/x.log", "dir/\u00e9t\u00e9.log", "sp ace.log",
    "esc\x1b]0;t\x07.log", "deep/" * 12 + "f.log", "x" * 200 + ".log", "n.out", "slurm-42.out",
])


@dataclass
class Archive:
    name: str                     # the file's name (its container shows in the suffix)
    data: bytes
    texts: dict[str, bytes] = field(default_factory=dict)   # member -> the text a reader must get
    damaged: bool = False
    cut: bool = False             # damaged by cutting its end off


def _tar(members: list[tuple[str, bytes]], comp: str | None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, body in members:
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))
    return COMPRESS[comp](buf.getvalue()) if comp else buf.getvalue()


def _zip(members: list[tuple[str, bytes]], method: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, body in members:
            zf.writestr(name, body)
    return buf.getvalue()


@st.composite
def archives(draw) -> Archive:
    kind = draw(st.sampled_from(CONTAINERS))
    if kind.startswith("log."):
        text = draw(mutated_text(max_bytes=8 << 10))
        arch = Archive(f"f.{kind}", COMPRESS[kind[4:]](text), {"": text})
    else:
        members, texts = [], {}
        names = draw(st.lists(NAMES, min_size=1, max_size=5, unique=True))
        for name in names:
            text = draw(mutated_text(max_bytes=8 << 10))
            wrap = draw(st.sampled_from([None, None, None, "gz", "zst", "xz", "bz2", "tar"]))
            if wrap == "tar":               # an archive inside the archive: data, not opened
                members.append((name + ".tar", _tar([("inner.log", text)], None)))
                continue
            if wrap:
                name += "." + wrap
                members.append((name, COMPRESS[wrap](text)))
            else:
                members.append((name, text))
            texts[name] = text
        if kind == "zip":
            method = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                                           zipfile.ZIP_LZMA]))
            data = _zip(members, method)
        else:
            data = _tar(members, kind[4:] if "." in kind else None)
        arch = Archive(f"a.{kind}", data, texts)
    damage = draw(st.sampled_from([None, None, "cut", "flip", "zeros"]))
    if damage and len(arch.data) > 2:
        b = bytearray(arch.data)
        at = draw(st.integers(1, len(b) - 1))
        if damage == "cut":
            del b[at:]
        elif damage == "flip":
            for _ in range(draw(st.integers(1, 8))):
                b[draw(st.integers(0, len(b) - 1))] ^= 1 << draw(st.integers(0, 7))
        else:
            n = len(b[at:at + draw(st.integers(1, 512))])
            b[at:at + n] = bytes(n)
        arch.data, arch.damaged = bytes(b), bytes(b) != arch.data
        arch.cut = damage == "cut" and arch.damaged
    return arch
