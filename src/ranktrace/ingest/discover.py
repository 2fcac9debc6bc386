"""discover: turn the user's PATHs into FileRefs, and open them as streams.

Archives are read member by member straight from the archive: nothing is
extracted to disk, so a hostile member name (../x, /etc/x, a symlink) can
never write anywhere. Decompression is bounded: a member or file that
expands past the limits is refused with a message (a decompression bomb).
"""

from __future__ import annotations

import bz2
import fnmatch
import gzip
import io
import lzma
import os
import stat
import sys
import tarfile
import tomllib
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

import regex as pyregex

from ..resources import data_dir

COMPRESSED = {".gz": "gzip", ".tgz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd", ".zstd": "zstd"}
MAGIC = (
    (b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"),
)
HINT_DEPTH = 5                   # path components that path hints read
MAX_EXPANDED = 64 << 30          # bytes one input may expand to
MAX_RATIO = 1000                 # expanded/compressed beyond MIN_RATIO_CHECK
MIN_RATIO_CHECK = 256 << 20
MAX_STREAM = 256 << 20           # stdin and pipes are held in memory (their hash comes first): this much
# A sample bundle's answers (sample_logs/*/) are not logs: never ingested
# from a directory that holds an expected_verdict.json.
ANSWER_FILES = ("README.md", "truth.json", "expected_verdict.json")


class InputError(Exception):
    """A problem with one input; the message names it. Other inputs go on."""


def _zstd_error() -> type[Exception]:
    import zstandard
    return zstandard.ZstdError


# What damaged or unsupported input data raises while it is read (a zip CRC
# error, an encrypted member, an unsupported method, corrupt xz/zstd/gzip):
# the file is named with the problem and the rest goes on.
DATA_ERRORS = (InputError, OSError, EOFError, ValueError, RuntimeError, NotImplementedError,
               zipfile.BadZipFile, tarfile.TarError, lzma.LZMAError, zlib.error, _zstd_error())
MEMBER_IN_MEMORY = 64 << 20      # a tar member up to this size is read into memory; larger ones stream


@dataclass
class FileRef:
    path: str                       # what the user sees: a path, or archive!member
    opener: Callable[[], BinaryIO]  # opens the raw (possibly compressed) bytes
    size: int                       # bytes as found (compressed size for .gz)
    compression: str | None = None
    hints: dict = field(default_factory=dict)
    source: str = ""                # absolute path (archive!member): the same file however it was named


class BoundedReader(io.RawIOBase):
    """Wraps a decompressing stream and refuses to expand past the limits."""

    def __init__(self, inner: BinaryIO, name: str, compressed_size: int,
                 max_expanded: int = MAX_EXPANDED, max_ratio: int = MAX_RATIO):
        self.inner, self.name = inner, name
        self.limit = max_expanded
        if compressed_size:
            self.limit = min(max_expanded, max(MIN_RATIO_CHECK, compressed_size * max_ratio))
        self.total = 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        data = self.inner.read(n)
        self.total += len(data)
        if self.total > self.limit:
            raise InputError(
                f"{self.name}: refused: decompresses past {self.limit >> 20} MiB "
                "(a decompression bomb?); unpack it yourself if it is genuine")
        return data

    def close(self) -> None:
        self.inner.close()
        super().close()


class ZstdFrames(io.RawIOBase):
    """The compressed bytes of a .zst on their way to the decoder, followed
    through the frame format (RFC 8878 section 3.1: magic, frame header,
    block headers, the optional checksum; skippable frames), so that a
    stream cut inside a frame is known (`cut`) when its end is reached. The
    zstandard decoder says nothing then, and half a file would pass for a
    whole one. Work per block header, not per byte."""

    ZSTD_MAGIC, SKIP_MAGIC = 0xFD2FB528, 0x184D2A50   # skippable: 0x184D2A50..5F

    def __init__(self, inner: BinaryIO):
        self.inner = inner
        self.fhd = 0                  # the current frame's header descriptor
        self.skip = 0                 # bytes to pass over (block content, a checksum)
        self.cut = False              # the input ended inside a frame
        self._expect("magic")

    def _expect(self, what: str) -> None:
        """Next: a header field `what` of a known size."""
        self.what, self.got = what, b""
        self.want = {"magic": 4, "skip_size": 4, "descriptor": 1, "block": 3}.get(what, 0)

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        data = self.inner.read(len(buf))
        if not data:
            self.cut = self.what != "unknown" and bool(self.skip or self.got or self.what != "magic")
            return 0
        self._follow(memoryview(data))
        buf[:len(data)] = data
        return len(data)

    def _follow(self, data: memoryview) -> None:
        i = 0
        while i < len(data) and self.what != "unknown":
            if self.skip:
                n = min(self.skip, len(data) - i)
                self.skip -= n
                i += n
                continue
            n = min(self.want - len(self.got), len(data) - i)
            self.got += bytes(data[i:i + n])
            i += n
            if len(self.got) == self.want:
                self._field(self.got)

    def _field(self, h: bytes) -> None:
        what = self.what
        if what == "magic":
            magic = int.from_bytes(h, "little")
            if magic == self.ZSTD_MAGIC:
                self._expect("descriptor")
            elif magic & 0xFFFFFFF0 == self.SKIP_MAGIC:
                self._expect("skip_size")
            else:
                self._expect("unknown")    # not zstd (or garbage after it): the decoder's to say
        elif what == "skip_size":
            self.skip = int.from_bytes(h, "little")
            self._expect("magic")
        elif what == "descriptor":
            self.fhd = fhd = h[0]
            single = (fhd >> 5) & 1
            fcs = (single, 2, 4, 8)[fhd >> 6]               # Frame_Content_Size bytes
            self.skip = (1 - single) + (0, 1, 2, 4)[fhd & 3] + fcs   # window, dictionary id, size
            self._expect("block")
        elif what == "block":
            v = int.from_bytes(h, "little")
            last, kind, size = v & 1, (v >> 1) & 3, v >> 3
            self.skip = 1 if kind == 1 else size          # an RLE block holds one byte
            if last:
                self.skip += 4 if self.fhd & 4 else 0     # Content_Checksum
                self._expect("magic")
            else:
                self._expect("block")

    def close(self) -> None:
        self.inner.close()
        super().close()


class ZstdReader(io.RawIOBase):
    """Decompressed .zst that raises EOFError where a cut stream ends, as
    gzip, xz and bz2 do (after everything before the cut is read: the
    decoder reads its input ahead)."""

    def __init__(self, raw: BinaryIO):
        import zstandard
        self.frames = ZstdFrames(raw)
        self.inner = zstandard.ZstdDecompressor().stream_reader(self.frames, read_across_frames=True)

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        data = self.inner.read(len(buf))
        if not data and self.frames.cut:
            raise EOFError("the zstd data is truncated (it ends inside a frame)")
        buf[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self.inner.close()
        self.frames.close()
        super().close()


def _decompressor(kind: str | None, raw: BinaryIO) -> BinaryIO:
    if kind is None:
        return raw
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw)
    if kind == "bz2":
        return bz2.BZ2File(raw)
    if kind == "xz":
        return lzma.LZMAFile(raw)
    if kind == "zstd":
        return io.BufferedReader(ZstdReader(raw), buffer_size=1 << 16)
    raise InputError(f"unknown compression {kind}")


def open_text_stream(ref: FileRef) -> BinaryIO:
    raw = ref.opener()
    if ref.compression is None:
        return raw
    return BoundedReader(_decompressor(ref.compression, raw), ref.path, ref.size)


def sniff_compression(name: str, head: bytes) -> str | None:
    for magic, kind in MAGIC:
        if head.startswith(magic):
            return kind
    # Shorter than its magic, named for it: a compressed file cut short
    # (the decoder then says it is truncated), not a text log.
    suffix = os.path.splitext(name.lower())[1]
    for magic, kind in MAGIC:
        if len(head) < len(magic) and magic.startswith(head) and COMPRESSED.get(suffix) == kind:
            return kind
    return None  # no magic: plain text, whatever the name says


# ---------------------------------------------------------------- path hints

@dataclass(frozen=True)
class PathHint:
    regex: str
    deny: str | None

    def apply(self, path: str) -> dict:
        # The match nearest the file name wins (node3/trn-node07.log: trn-node07).
        m = None
        for m in pyregex.finditer(self.regex, path, overlapped=True):
            pass
        if m is None:
            return {}
        got = {k: v for k, v in m.groupdict().items() if v is not None}
        if self.deny and any(pyregex.fullmatch(self.deny, v) for v in got.values()):
            return {}
        return got


def load_path_hints(path: Path | None = None) -> list[PathHint]:
    """parsers/path_hints.toml; every hint's samples are checked here."""
    path = path or data_dir("parsers") / "path_hints.toml"
    doc = tomllib.loads(path.read_text())
    hints = []
    for i, h in enumerate(doc.get("hint", [])):
        hint = PathHint(h["regex"], h.get("deny"))
        samples = h.get("sample", [])
        if not samples:
            raise ValueError(f"{path}: hint #{i} has no samples")
        for s in samples:
            got = hint.apply(s["path"])
            if got != {k: str(v) for k, v in s.get("expect", {}).items()}:
                raise ValueError(f"{path}: hint #{i} on {s['path']!r} gives {got}, expected {s.get('expect')}")
        hints.append(hint)
    return hints


def path_hints(path: str, hints: list[PathHint]) -> dict:
    """Every hint contributes; an earlier hint wins a key."""
    out: dict = {}
    for h in hints:
        for k, v in h.apply(path).items():
            out.setdefault(k, v)
    return out


# ---------------------------------------------------------------- walking

def _file_ref(path: Path, display: str) -> FileRef:
    with open(path, "rb") as fh:
        head = fh.read(8)
    comp = sniff_compression(path.name, head)
    return FileRef(display, lambda p=path: open(p, "rb"), path.stat().st_size, comp, source=str(path.resolve()))


def _is_tar(path: Path) -> bool:
    name = path.name.lower()
    if name.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar.zst")):
        return True
    return False


def _tar_members(path: Path, display: str, warn: Callable[[str], None]) -> Iterator[FileRef]:
    mode = "r:*"
    fileobj = None
    if path.name.lower().endswith((".tar.zst", ".tar.zstd")):
        fileobj = _decompressor("zstd", open(path, "rb"))
        mode = "r|"
    total = 0
    try:
        tf = tarfile.open(path, mode) if fileobj is None else tarfile.open(fileobj=fileobj, mode=mode)
    except DATA_ERRORS as exc:
        raise InputError(f"{display}: cannot read archive: {exc}") from None
    streamed = fileobj is not None
    with tf:
        # A member up to MEMBER_IN_MEMORY is read here, into memory, one at
        # a time (it is hashed, then parsed); a larger one is read from the
        # archive each time, never held.
        members, seen = iter(tf), 0
        while True:
            try:
                tf.members.clear()    # TarFile keeps every TarInfo it read: 100k members, 100k objects
                member = next(members, None)
            except DATA_ERRORS as exc:
                warn(f"{display}: archive is truncated or damaged after {seen} member(s) ({exc}); "
                     "the rest of it was not read")
                return
            if member is None:
                if _ended_early(tf):
                    warn(f"{display}: archive is truncated after {seen} member(s) (it ends without "
                         "tar's end-of-archive blocks); the members it held to there were read")
                return
            seen += 1
            name = f"{display}!{member.name}"
            if member.issym() or member.islnk():
                warn(f"{name}: skipped: a link inside an archive is never followed")
                continue
            if not member.isfile():
                continue
            total += member.size
            if total > MAX_EXPANDED:
                raise InputError(f"{display}: refused: members add up past {MAX_EXPANDED >> 30} GiB")
            source = f"{path.resolve()}!{member.name}"
            if member.size > MEMBER_IN_MEMORY:
                # Read from the archive when hashed and when parsed, never
                # held: a streamed tar is decompressed again up to it.
                opener = _streamed_member if streamed else _member_stream
                yield FileRef(name, lambda m=member, o=opener: o(path, m), member.size,
                              sniff_compression(member.name, tf.extractfile(member).read(8)), source=source)
                continue
            try:
                data = tf.extractfile(member).read()
            except DATA_ERRORS as exc:
                warn(f"{name}: archive is truncated or damaged ({exc}); the rest of it was not read")
                return
            yield FileRef(name, lambda d=data: io.BytesIO(d), len(data), sniff_compression(member.name, data[:8]),
                          source=source)


def _ended_early(tf: tarfile.TarFile) -> bool:
    """The archive stopped where a member header should be: every tar writer
    ends an archive with zero blocks, so a file cut between two members ends
    with no block at all there (tarfile takes that for the end, silently).
    After the last header read, the stream stands just past what it got."""
    try:
        return tf.fileobj.tell() - tf.offset < tarfile.BLOCKSIZE
    except (OSError, AttributeError, ValueError):
        return False


class _MemberStream(io.RawIOBase):
    """A member of a tar, read from the archive (closing it, and `also`)."""

    def __init__(self, tf: tarfile.TarFile, member: tarfile.TarInfo, also: tuple = ()):
        self.tf, self.fh, self.also = tf, tf.extractfile(member), also

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        data = self.fh.read(len(buf))
        buf[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self.tf.close()
        for x in self.also:
            x.close()
        super().close()


def _member_stream(path: Path, member: tarfile.TarInfo) -> BinaryIO:
    return io.BufferedReader(_MemberStream(tarfile.open(path, "r:*"), member), buffer_size=1 << 20)


def _streamed_member(path: Path, member: tarfile.TarInfo) -> BinaryIO:
    """A member of a .tar.zst (only readable in order): the archive is
    decompressed again, the members before it passed over."""
    raw = _decompressor("zstd", open(path, "rb"))
    tf = tarfile.open(fileobj=raw, mode="r|")
    for m in tf:
        if m.offset == member.offset:
            return io.BufferedReader(_MemberStream(tf, m, (raw,)), buffer_size=1 << 20)
        tf.members.clear()
    tf.close()
    raw.close()
    raise InputError(f"{path}!{member.name}: not found again in the archive (did it change?)")


def _zip_members(path: Path, display: str, warn: Callable[[str], None]) -> Iterator[FileRef]:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"{display}: cannot read zip archive: {exc}") from None
    total = 0
    for info in zf.infolist():
        if info.is_dir():
            continue
        name = f"{display}!{info.filename}"
        if stat.S_ISLNK(info.external_attr >> 16):
            warn(f"{name}: skipped: a link inside an archive is never followed")
            continue
        total += info.file_size
        if total > MAX_EXPANDED or (info.compress_size and info.file_size > MIN_RATIO_CHECK
                                    and info.file_size / info.compress_size > MAX_RATIO):
            raise InputError(f"{name}: refused: expands to {info.file_size >> 20} MiB "
                             "(a decompression bomb?)")
        try:
            with zf.open(info) as fh:
                head = fh.read(8)
        except DATA_ERRORS as exc:   # encrypted, an unsupported method, a damaged header
            warn(f"{name}: cannot read this member ({exc}); skipped")
            continue
        comp = sniff_compression(info.filename, head)
        yield FileRef(name, lambda i=info: BoundedReader(zf.open(i), name, i.compress_size),
                      info.file_size, comp, source=f"{path.resolve()}!{info.filename}")


def excluded(path: str, patterns: list[str]) -> bool:
    """--exclude GLOB: matched against the file name and the whole path."""
    name = path.replace("!", "/").rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(path, p) for p in patterns)


def _walk(root: Path, warn: Callable[[str], None]) -> Iterator[Path]:
    """Everything below `root`; an unreadable directory or a symlink loop is
    named, not silently skipped, and the walk goes on."""
    def onerror(exc: OSError) -> None:
        warn(f"{exc.filename}: cannot read directory ({exc.strerror}); its files were skipped")
    for top, dirs, files in os.walk(root, onerror=onerror):  # never follows directory links
        for name in dirs:
            if os.path.islink(os.path.join(top, name)):
                yield Path(top, name)
        for name in files:
            yield Path(top, name)


def _is_answer(path: Path) -> bool:
    return path.name in ANSWER_FILES and (path.parent / "expected_verdict.json").exists()


def _stream_ref(fh: BinaryIO, name: str, warn: Callable[[str], None]) -> FileRef | None:
    """A stream read into memory, bounded: its hash must come before it is parsed."""
    data = fh.read(MAX_STREAM + 1)
    if len(data) > MAX_STREAM:
        warn(f"{name}: refused: more than {MAX_STREAM >> 20} MiB from a stream; save it to a file and "
             "ingest the file")
        return None
    comp = sniff_compression(name, data[:8])
    return FileRef(name, lambda d=data: io.BytesIO(d), len(data), comp)


def _open_fifo(path: str, warn: Callable[[str], None]) -> FileRef | None:
    """A FIFO with no writer must not hang: open it non-blocking (reads then
    see end of file at once), then read it as a stream."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as fh:
        return _stream_ref(fh, path, warn)


def discover(paths: list[str], warn: Callable[[str], None], *, hints: list[PathHint] | None = None,
             stdin: BinaryIO | None = None, exclude: list[str] | None = None,
             own: list[str] | None = None) -> Iterator[FileRef]:
    """Yield a FileRef per input file, in a deterministic (sorted) order.
    `own`: files never to read, or directories none of whose files to read
    (the store being written)."""
    hints = load_path_hints() if hints is None else hints
    exclude = exclude or []

    def hinted(ref: FileRef) -> FileRef:
        # Only the last components of a path can be identity
        # (.../node2/run/attempt_0/3/stderr.log), never /tmp or /home above.
        head, bang, member = ref.path.partition("!")
        shown = "/".join(head.split("/")[-HINT_DEPTH:]) + bang + member
        ref.hints = path_hints(shown.replace("!", "/"), hints)
        return ref

    skip = {os.path.realpath(x) for x in (own or ())}
    skip_dirs = tuple(s + os.sep for s in skip if os.path.isdir(s))

    def owned(x) -> bool:
        real = os.path.realpath(x)
        return real in skip or real.startswith(skip_dirs)
    for arg in paths:
        if arg == "-":
            ref = _stream_ref(stdin or sys.stdin.buffer, "<stdin>", warn)
            if ref is not None:
                yield hinted(ref)
            continue
        p = Path(arg)
        if not p.exists():
            warn(f"{arg}: no such file or directory")
            continue
        if not p.is_dir() and not p.is_file():
            mode = os.stat(arg).st_mode
            if stat.S_ISFIFO(mode):  # a pipe: `ingest <(zcat x.gz)`, a named FIFO
                ref = _open_fifo(arg, warn)
                if ref is not None:
                    yield hinted(ref)
            else:
                warn(f"{arg}: not a regular file (a device or socket); skipped")
            continue
        if p.is_dir():
            files = sorted(x for x in _walk(p, warn) if x.is_file() and not x.is_symlink()
                           and not owned(x) and not _is_answer(x))
            for link in sorted(x for x in _walk(p, warn) if x.is_symlink()):
                try:
                    target = link.resolve(strict=True)
                except (RuntimeError, OSError) as exc:   # a loop (RuntimeError before 3.13), a dangling link
                    warn(f"{link}: skipped: a symlink that leads nowhere ({exc})")
                    continue
                if not target.is_relative_to(p.resolve()):
                    warn(f"{link}: skipped: symlink points outside {arg}")
                elif target.is_file():
                    files.append(link)
            # Shown as the given directory's name and below: the same bundle
            # gives the same paths wherever it lies.
            roots = [(f, str(Path(p.resolve().name) / f.relative_to(p))) for f in sorted(set(files))]
            if not roots:
                warn(f"{arg}: no files to read in this directory"
                     + (" (only a sample bundle's answers, which are never ingested)"
                        if any(_is_answer(x) for x in _walk(p, lambda _: None)) else ""))
        else:
            roots = [(p, arg)]
        for f, display in roots:
            if excluded(display, exclude):
                continue
            try:
                if not os.access(f, os.R_OK):
                    raise InputError(f"{display}: permission denied")
                if _is_tar(f):
                    for ref in _tar_members(f, display, warn):
                        if not excluded(ref.path, exclude):
                            yield hinted(ref)
                elif zipfile.is_zipfile(f) and f.suffix.lower() == ".zip":
                    for ref in _zip_members(f, display, warn):
                        if not excluded(ref.path, exclude):
                            yield hinted(ref)
                else:
                    yield hinted(_file_ref(f, display))
            except InputError as exc:
                warn(str(exc))
            except OSError as exc:
                warn(f"{display}: cannot read: {exc.strerror or exc}")
            except DATA_ERRORS as exc:   # damaged data met while listing an archive
                warn(f"{display}: archive is damaged ({type(exc).__name__}: {exc}); the rest of it was not read")
