"""Coverage by shape at the verdict's level (issue 28 point 4): every single-file story of
tests/correlate/test_identity_shapes.py CASES, with every line put behind each prefix context of
tests/formats/test_identity_tokens.py CONTEXTS (as a launcher or collector prefixes every line), is
ingested and diagnosed; a (story, context) pair is reported when the story's bare verdict names its
culprit and the prefixed one loses the kind or a culprit column the context itself does not name.

    PYTHONPATH=src python benchmarks/identity_contexts.py [STORY_SUBSTRING...] [--contexts a,b,c]

test_identity_tokens checks that a token's value comes out on its line behind every context; this checks
what a verdict makes of whole stories behind them, which a per-line test cannot see (a file-scope
envelope under another prefix, a block's continuation lines behind a prefix). It diagnoses once per
pair (68 stories x 45 contexts: about an hour of CPU), so run it on a subset of contexts. A logger's own
prefix (python_logging, glog, timestamp_brackets) before a line that already has its emitter's layout is
not a shape any emitter writes: losses there are expected.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))

from ranktrace.correlate import diagnose  # noqa: E402
from ranktrace.ingest.pipeline import ingest  # noqa: E402
from ranktrace.store import open_readonly  # noqa: E402

COLS = ("rank", "local_rank", "host", "pod", "pid")


def verdict(cat, files: dict[str, str]) -> dict:
    with tempfile.TemporaryDirectory() as td:
        for rel, text in files.items():
            p = Path(td) / "bundle" / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        old = os.getcwd()
        os.chdir(td)
        try:
            ingest(["bundle"], str(Path(td) / "s.duckdb"), cat)
        finally:
            os.chdir(old)
        con = open_readonly(str(Path(td) / "s.duckdb"))
        try:
            return diagnose(con)["verdict"]
        finally:
            con.close()


def lost(v: dict, want: dict, skip: set) -> list[str]:
    kinds = want["kind"] if isinstance(want["kind"], tuple) else (want["kind"],)
    bad = [] if v["kind"] in kinds else [f"kind {v['kind']}"]
    return bad + [f"{c} {v[c]!r} != {want[c]!r}" for c in COLS
                  if c in want and c not in skip and want[c] is not None and v[c] != want[c]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stories", nargs="*", help="only the stories whose name contains one of these")
    ap.add_argument("--contexts", help="comma-separated context names (default: all)")
    a = ap.parse_args(argv)
    shapes = importlib.import_module("correlate.test_identity_shapes")
    tokens = importlib.import_module("formats.test_identity_tokens")
    keep = set(a.contexts.split(",")) if a.contexts else None
    contexts = [c for c in tokens.CONTEXTS if c[0] != "bare" and (keep is None or c[0] in keep)]
    cases = {k: v for k, v in shapes.CASES.items() if len(v[0]) == 1
             and (not a.stories or any(s in k for s in a.stories))}
    t0, n, out = time.process_time(), 0, 0
    for name, (files, want) in sorted(cases.items()):
        (rel, text), = files.items()
        n += 1
        if lost(verdict(tokens.CAT, files), want, set()):
            print(f"bare-miss {name} (skipped)", flush=True)
            continue
        for ctx in contexts:
            given = ctx[2]
            # what the context names itself speaks for the line (srun's task, torchrun's role: a rank of
            # their own numbering; a node's prefix: the pod is its host)
            skip = set(given) | ({"rank"} if {"task", "local_rank"} & set(given) else set()) \
                | ({"pod"} if "host" in given else set())
            v = verdict(tokens.CAT, {rel: "".join(ctx[1] + line + "\n" for line in text.splitlines())})
            n += 1
            bad = lost(v, want, skip)
            if bad:
                out += 1
                print(f"LOST {name} behind {ctx[0]}: {bad} (got {v['kind']} r{v['rank']} {v['host']} "
                      f"{v['pod']} {v['pid']} conf {v['confidence']})", flush=True)
    print(f"{n} diagnoses, {out} pairs lost, {time.process_time() - t0:.0f} CPU-s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
