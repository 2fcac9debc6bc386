"""Shared by the fuzz tests: seed lines from real logs, mutations, the
corpus of kept inputs, and the time budget.

Budget: FUZZ_EXAMPLES (default a CI-sized number, see each test) examples per
property; RANKTRACE_FUZZ_SCALE=10 runs ten times as many (a longer local
hunt). Examples are derandomized in CI (the same inputs every run, so a red
run is reproducible); RANKTRACE_FUZZ_RANDOM=1 explores new ones. An input
that breaks a property is written to $RANKTRACE_FUZZ_SAVE (if set) and
belongs in corpus/ once fixed: every file there is replayed on every run.
"""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from rt_testlib import REPO, SHAPES

CORPUS = Path(__file__).parent / "corpus"
SCALE = float(os.environ.get("RANKTRACE_FUZZ_SCALE", "1"))


def fuzz_settings(examples: int, **kw) -> settings:
    return settings(max_examples=max(1, int(examples * SCALE)), deadline=None, database=None,
                    derandomize=not os.environ.get("RANKTRACE_FUZZ_RANDOM"),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], **kw)


def corpus(kind: str) -> list[Path]:
    return sorted((CORPUS / kind).glob("*"))


def save_failure(kind: str, data: bytes) -> None:
    where = os.environ.get("RANKTRACE_FUZZ_SAVE")
    if where:
        d = Path(where) / kind
        d.mkdir(parents=True, exist_ok=True)
        (d / hashlib.sha256(data).hexdigest()[:16]).write_bytes(data)


def _seed_lines() -> list[bytes]:
    """Lines of the real logs the project has (sample bundles, captured
    shapes), a deterministic sample of them."""
    roots = [REPO / "sample_logs", REPO / "tests" / "formats" / "data", SHAPES]
    lines: list[bytes] = []
    for root in roots:
        if not root.is_dir():
            continue
        for f in sorted(root.rglob("*")):
            if f.is_file() and f.suffix in (".log", ".txt", ".out", ".err", "") and f.stat().st_size < 4 << 20:
                lines += [ln for ln in f.read_bytes().splitlines() if ln.strip()][:200]
    rnd = random.Random(15)
    rnd.shuffle(lines)
    return sorted(set(lines[:4000])) or [b"2026-03-02 03:17:41 INFO hello"]


SEED_LINES = _seed_lines()

# What hostile or broken logs hold (issue 15): NUL, CR, invalid UTF-8 of
# every kind, terminal escapes, bidi overrides, absurd numbers and dates.
NASTY = [
    b"\x00", b"\r", b"\r\n", b"\n\n", b"\xff", b"\xfe\xff", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
    b"\x80\x80\x80", b"\x1b[2J", b"\x1b[31m", b"\x1b]0;pwned\x07", b"\x1b]8;;http://x\x1b\\", b"\x9b6n", b"\xe2\x80\xae",
    b"\t", b"\x0c", b"\x7f", b" " * 50,
    b"0001-01-01T00:00:00Z", b"9999-12-31 23:59:59", b"1969-12-31 23:59:59", b"2100-01-01 00:00:00",
    b"0000-00-00 00:00:00", b"2026-13-45 25:61:61", b"2026-02-30T24:00:00+99:99", b"Feb 30 99:99:99",
    b"[9999999999.999999]", b"rank=99999999999", b"Xid 79", b"step 18446744073709551615",
]
NUMBERS = [b"99999999999999999999999999", b"-9223372036854775809", b"18446744073709551616", b"1e308",
           b"NaN", b"-0", b"4294967296", b"2147483648"]
NASTY += NUMBERS
YEARS = [b"0001", b"0000", b"9999", b"1969", b"2100", b"1900", b"65535"]


@st.composite
def mutated_text(draw, max_bytes: int = 24 << 10) -> bytes:
    """Real lines, then mutations: byte flips, truncation, splices, huge
    repeats, NUL/CR/invalid UTF-8/escapes inserted, years and numbers made
    extreme; or plain random bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=4096))
    lines = draw(st.lists(st.sampled_from(SEED_LINES), min_size=1, max_size=40))
    data = bytearray(b"\n".join(lines) + draw(st.sampled_from([b"\n", b"", b"\r\n"])))
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.integers(0, 6))
        at = draw(st.integers(0, len(data)))
        if op == 0 and data:                          # byte flip
            i = min(at, len(data) - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == 1:                                 # truncation
            del data[at:]
        elif op == 2:                                 # splice another line in
            data[at:at] = draw(st.sampled_from(SEED_LINES))
        elif op == 3 and data:                        # huge repeat
            piece = bytes(data[at:at + draw(st.integers(1, 64))]) or b"x"
            data[at:at] = piece * min(draw(st.integers(2, 5_000)), max_bytes // len(piece))
        elif op == 4:                                 # something nasty
            data[at:at] = draw(st.sampled_from(NASTY))
        elif op == 5:                                 # an extreme year
            i = data.find(b"20", at)
            if i >= 0:
                data[i:i + 4] = draw(st.sampled_from(YEARS))
        elif op == 6:                                 # an extreme number
            i = next((k for k in range(at, len(data)) if 48 <= data[k] <= 57), -1)
            if i >= 0:
                data[i:i + 1] = draw(st.sampled_from(NUMBERS))
        if len(data) > max_bytes:
            del data[max_bytes:]
    return bytes(data)


def expected_lines(data: bytes, cr_only: bool | None = None) -> list[bytes]:
    """The engine's framing (crates/engine/src/lines.rs): LF ends a line
    (CR when the file's first chunk has CRs and no LF), a CR before it is
    dropped. cr_only None: as the engine decides it for a small file."""
    if cr_only is None:
        cr_only = b"\r" in data[:4 << 20] and b"\n" not in data[:4 << 20]
    if cr_only:
        data = data.replace(b"\r", b"\n")
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]
