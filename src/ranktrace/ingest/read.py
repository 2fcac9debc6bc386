"""read: bytes of a (possibly decompressing) stream, in bounded chunks.

Framing the chunks into lines is the engine's (crates/engine/src/lines.rs);
this only reads, and notices a compressed stream that ends early."""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO


@dataclass
class Damage:
    why: str | None = None   # the compressed stream ended early: why


def read_some(stream: BinaryIO, n: int, damage: Damage) -> bytes:
    """Up to n bytes. Reads in small steps so that a truncated .gz/.xz/.bz2
    gives up everything before the damage (a big read() loses its whole
    chunk when the stream ends early)."""
    if damage.why:
        return b""
    parts, got = [], 0
    step = getattr(stream, "read1", None) or stream.read
    while got < n:
        try:
            b = step(min(1 << 20, n - got))
        except EOFError as exc:
            damage.why = str(exc)
            break
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)
