"""Generate the reader-memory worst case: a flood of long Xid lines.

    python benchmarks/gen_xid_flood.py OUT_DIR [--lines 150000] [--nodes 99]

Each node's dmesg (`dmesg -T` layout, as tests/formats/data/kernel/dmesg_T.txt)
holds Xid 79 ("GPU has fallen off the bus") reports of its 8 GPUs, each line
about 2 KB long (the report followed by the NVLink error words a driver
repeats), one line every 50 ms per node. This is the store on which `diagnose`
once peaked at 1.9 GB, all of it DuckDB's (issue 12's last session): a reader
must stay within its memory limit on it (store.READER_MEMORY).
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta
from pathlib import Path

T0 = datetime(2026, 12, 1, 21, 40, 0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--lines", type=int, default=150_000)
    ap.add_argument("--nodes", type=int, default=99)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    per_node = args.lines // args.nodes
    for n in range(args.nodes):
        host = f"gpu-{n:03d}"
        d = args.out / host
        d.mkdir(parents=True, exist_ok=True)
        with open(d / "dmesg.txt", "w") as f:
            for i in range(per_node):
                t = T0 + timedelta(milliseconds=50 * i + rng.randrange(50))
                gpu = rng.randrange(8)
                tail = " ".join(f"link {k}(0x{rng.getrandbits(16):x}, 0x0, 0x{rng.getrandbits(20):x})"
                                for k in range(60))
                f.write(f"[{t:%a %b %e %H:%M:%S %Y}] NVRM: Xid (PCI:0000:{0x18 + 0x10 * gpu:02x}:00): 79, "
                        f"pid={41000 + gpu}, name=python, GPU has fallen off the bus. {tail}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
