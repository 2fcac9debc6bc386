"""Files of lines, each line with the true time it was written; a file is written in that order (sparse
lines kept in memory, bulk progress lines generated lazily: memory stays small for the 1 GB size)."""

from __future__ import annotations

import datetime as dt
import hashlib
import heapq
from pathlib import Path


class Sink:
    def __init__(self):
        self.sparse: dict[str, list] = {}
        self.bulk: dict[str, list] = {}
        self.k = 0
        self.hosts_of: dict[str, str] = {}

    def add(self, path: str, t: dt.datetime, text: str) -> None:
        self.k += 1
        self.sparse.setdefault(path, []).append((t, self.k, text))

    def add_block(self, path: str, t: dt.datetime, lines: list[str]) -> None:
        for x in lines:
            self.add(path, t, x)

    def add_bulk(self, path: str, gen_fn) -> None:
        """gen_fn() yields (t, k, text) in time order; k >= 10**12 keeps bulk lines after sparse lines of the
        same instant."""
        self.bulk.setdefault(path, []).append(gen_fn)

    def write(self, out: Path) -> dict:
        sizes = {}
        for path in sorted(set(self.sparse) | set(self.bulk)):
            sp = sorted(self.sparse.get(path, []), key=lambda x: (x[0], x[1]))
            its = [iter(sp)] + [g() for g in self.bulk.get(path, [])]
            p = out / path
            p.parent.mkdir(parents=True, exist_ok=True)
            n = 0
            with open(p, "w", encoding="utf-8", newline="\n") as fh:
                buf = []
                for _, _, text in heapq.merge(*its, key=lambda x: (x[0], x[1])):
                    buf.append(text)
                    if len(buf) >= 4096:
                        fh.write("\n".join(buf) + "\n")
                        n += len(buf)
                        buf = []
                if buf:
                    fh.write("\n".join(buf) + "\n")
                    n += len(buf)
            sizes[path] = n
        return sizes



def stable_token(*parts) -> str:
    """8 characters like tempfile's, from the parts (hash() is salted per process: never for output)."""
    d = hashlib.sha256(repr(parts).encode()).digest()
    return "".join("abcdefghijklmnopqrstuvwxyz0123456789_"[b % 37] for b in d[:8])
