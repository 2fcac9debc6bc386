"""Slurm host lists and task ranges: `n[1-4]`, `gpu-[01-08,12]`, `a[1-2]-b[3-4]`,
`tasks 0-57,59-63`. Pure functions, no I/O."""

from __future__ import annotations

import re


def expand_ranges(spec: str) -> list[int]:
    """'0-3,7,9-10' -> [0, 1, 2, 3, 7, 9, 10]. Whitespace tolerated; bad parts raise ValueError."""
    out: list[int] = []
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError(f"bad range {part!r} in {spec!r}")
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) is not None else a
        if b < a:
            raise ValueError(f"descending range {part!r}")
        out.extend(range(a, b + 1))
    return out


def _split_top(spec: str) -> list[str]:
    """Split on commas outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in spec:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _expand_one(name: str) -> list[str]:
    m = re.search(r"\[([^\]]*)\]", name)
    if not m:
        return [name]
    head, tail = name[: m.start()], name[m.end():]
    items: list[str] = []
    for part in m.group(1).split(","):
        part = part.strip()
        r = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not r:
            raise ValueError(f"bad host range {part!r} in {name!r}")
        a, b = r.group(1), r.group(2) or r.group(1)
        width = len(a) if a.startswith("0") and len(a) > 1 else 0
        if int(b) < int(a):
            raise ValueError(f"descending host range {part!r}")
        items.extend(f"{i:0{width}d}" for i in range(int(a), int(b) + 1))
    return [h for i in items for h in _expand_one(head + i + tail)]


def expand_hostlist(spec: str) -> list[str]:
    """Expand a Slurm host list: 'n[1-4]' -> n1..n4, 'gpu-[01-08,12]' keeps the zero padding,
    'a,b[1-2]' -> a, b1, b2; nested products 'r[1-2]n[1-2]' -> r1n1, r1n2, r2n1, r2n2."""
    out: list[str] = []
    for part in _split_top(spec.strip()):
        out.extend(_expand_one(part))
    return out


def missing_from(ranges: list[int], universe: range | list[int]) -> list[int]:
    have = set(ranges)
    return [i for i in universe if i not in have]


def compress_ranges(nums) -> str:
    """[0,1,2,5] -> '0-2,5' (for summaries)."""
    nums = sorted(set(nums))
    out, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(out)
