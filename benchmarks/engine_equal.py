"""engine_equal: prove two builds of the Rust engine (ranktrace._core) give the
same output, batch content for batch content, on real inputs.

Two PyO3 copies of one module cannot share a process, so each build runs in
its own process and dumps, per (input file, chunk size, zone), the
concatenated events and every fact table as Arrow IPC plus the file's read
stats and file envelopes; the parent then compares them table-equal (schema,
values, nulls, row order).

    # keep a reference build before changing the engine
    cp src/ranktrace/_core.abi3.so /tmp/ref_core.abi3.so
    # ... change crates/, rebuild, copy the new .so into src/ranktrace/ ...
    .venv/bin/python benchmarks/engine_equal.py --ref /tmp/ref_core.abi3.so \
        [--new src/ranktrace/_core.abi3.so] [--corpus /tmp/corpus] [--work /tmp/engine_equal]

Inputs: every file of sample_logs/, ../shared/real_log_shapes (when
present), tests/formats/data/ and the generated corpus (`--corpus`, from
benchmarks/gen_corpus.py), fed in chunks of 4 KB, 64 KB and 4 MB (small
chunks move blocks, carried identity and times across chunk boundaries; the
corpus gets 64 KB and 4 MB), in UTC and in America/New_York (zones of naive
times). Exit status 0 when every dump is equal, 1 otherwise (the first
differences are printed).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMALL_CHUNKS = (4 << 10, 64 << 10, 4 << 20)
CORPUS_CHUNKS = (64 << 10, 4 << 20)
ZONES = ("UTC", "America/New_York")


def inputs(corpus: str | None) -> list[tuple[Path, tuple[int, ...]]]:
    roots = [ROOT / "sample_logs", ROOT.parent.parent / "shared" / "real_log_shapes",
             Path("/work/shared/real_log_shapes"), ROOT / "tests" / "formats" / "data"]
    seen: set[Path] = set()
    out = []
    for r in roots:
        if not r.is_dir() or r.resolve() in seen:
            continue
        seen.add(r.resolve())
        out += [(p, SMALL_CHUNKS) for p in sorted(r.rglob("*")) if p.is_file()]
    if corpus:
        out += [(p, CORPUS_CHUNKS) for p in sorted(Path(corpus).rglob("*")) if p.is_file()]
    return out


def _load_core(so: str) -> None:
    """Make `so` the ranktrace._core that ranktrace.ingest.core imports."""
    spec = importlib.util.spec_from_file_location("ranktrace._core", so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules["ranktrace._core"] = mod
    import ranktrace
    ranktrace._core = mod


def dump(so: str, corpus: str | None, out: Path) -> None:
    """Child process: parse every input with the build `so`, write the dumps."""
    _load_core(so)
    import pyarrow as pa
    from ranktrace.formats import load_catalog
    from ranktrace.ingest import core
    from ranktrace.ingest.discover import load_path_hints, path_hints

    cat = load_catalog(check_samples=False)
    hint_rules = load_path_hints()
    out.mkdir(parents=True, exist_ok=True)
    for path, chunks in inputs(corpus):
        data = path.read_bytes()
        hints = path_hints(str(path), hint_rules)
        for chunk in chunks:
            for tz in ZONES:
                name = hashlib.sha1(f"{path}|{chunk}|{tz}".encode()).hexdigest()[:16]
                parser = core.file_parser(cat, 7, str(path), hints, tz)
                events, classes, facts = [], [], {}
                pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] or [b""]
                for k, piece in enumerate(pieces):
                    parser.feed(piece, k + 1 == len(pieces))
                    for got in core.batches(parser):
                        # builds before event classes give (events, facts)
                        ev, cl, fa = got if len(got) == 3 else (got[0], None, got[1])
                        events.append(ev)
                        classes += [cl] if cl is not None else []
                        for t, b in fa.items():
                            facts.setdefault(t, []).append(b)
                whole = pa.Table.from_batches(events) if events else None
                if whole is not None and classes:   # what a reader of view `events` sees
                    whole = core.widen(whole, pa.Table.from_batches(classes))
                tables = {"events": whole}
                tables |= {f"fact_{t}": pa.Table.from_batches(bs) for t, bs in facts.items()}
                for t, tab in tables.items():
                    if tab is None:
                        continue
                    with pa.OSFile(str(out / f"{name}.{t}.arrow"), "wb") as fh:
                        with pa.ipc.new_file(fh, tab.schema) as w:
                            w.write_table(tab)
                meta = {"input": str(path), "chunk": chunk, "tz": tz, "tables": sorted(t for t, v in tables.items() if v is not None),
                        "stats": core.read_stats(parser.stats()), "file_envelopes": parser.file_envelopes()}
                (out / f"{name}.json").write_text(json.dumps(meta, sort_keys=True))


def compare(a: Path, b: Path, added: tuple[str, ...] = (), bits: dict[str, int] | None = None) -> list[str]:
    """`added`: columns the build under test (b) adds on purpose: left out of its tables (the rest
    must equal a's, in a's order). `bits`: integer columns where b sets these bits on purpose (a new
    mark): a's have none of them, b's without them equal a's."""
    import pyarrow as pa
    import pyarrow.compute as pc
    problems = []
    bits = bits or {}
    set_rows = dict.fromkeys(bits, 0)
    metas = sorted(a.glob("*.json"))
    if not metas:
        return [f"{a}: no dumps"]
    rows = 0
    for m in metas:
        other = b / m.name
        if not other.exists():
            problems.append(f"{m.name}: missing in {b}")
            continue
        ma, mb = json.loads(m.read_text()), json.loads(other.read_text())
        what = f"{ma['input']} (chunk {ma['chunk']}, {ma['tz']})"
        if ma != mb:
            problems.append(f"{what}: stats/envelopes/tables differ: {ma} != {mb}")
            continue
        for t in ma["tables"]:
            stem = m.name[:-len(".json")]
            ta = pa.ipc.open_file(str(a / f"{stem}.{t}.arrow")).read_all()
            tb = pa.ipc.open_file(str(b / f"{stem}.{t}.arrow")).read_all()
            extra = [c for c in added if c in tb.column_names and c not in ta.column_names]
            if extra:
                tb = tb.drop_columns(extra)
            rows += ta.num_rows
            for c, mask in bits.items():
                if c in ta.column_names and c in tb.column_names and ta.schema.equals(tb.schema):
                    if pc.any(pc.not_equal(pc.bit_wise_and(ta[c], mask), 0)).as_py():
                        problems.append(f"{what}: {t}: the reference sets bits {mask} of {c}")
                    set_rows[c] += pc.sum(pc.not_equal(pc.bit_wise_and(tb[c], mask), 0)).as_py() or 0
                    i = tb.column_names.index(c)
                    tb = tb.set_column(i, tb.schema.field(i), pc.bit_wise_and(tb[c], ~mask).cast(tb.schema.field(i).type))
            if not ta.schema.equals(tb.schema):
                problems.append(f"{what}: {t}: schema {ta.schema} != {tb.schema}")
            elif not ta.equals(tb):
                problems.append(f"{what}: {t}: {_first_difference(ta, tb)}")
    print(f"compared {len(metas)} dumps, {rows} rows", file=sys.stderr)
    for c, n in set_rows.items():
        print(f"rows where the new build sets bits {bits[c]} of {c}: {n}", file=sys.stderr)
    return problems


def _first_difference(ta, tb) -> str:
    if ta.num_rows != tb.num_rows:
        return f"{ta.num_rows} rows != {tb.num_rows} rows"
    for c in ta.column_names:
        x, y = ta.column(c).to_pylist(), tb.column(c).to_pylist()
        for i, (u, v) in enumerate(zip(x, y)):
            if u != v and not (u != u and v != v):  # NaN == NaN here
                return f"column {c} row {i}: {u!r} != {v!r}"
    return "equal values, different chunking or types"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", required=True, help="the reference build (.so)")
    ap.add_argument("--new", default=str(ROOT / "src" / "ranktrace" / "_core.abi3.so"), help="the build under test")
    ap.add_argument("--corpus", help="a generated corpus directory (benchmarks/gen_corpus.py)")
    ap.add_argument("--work", default="/tmp/engine_equal", help="where the dumps go")
    ap.add_argument("--reuse-ref", action="store_true", help="keep the reference dumps of an earlier run (same --ref, --corpus)")
    ap.add_argument("--added", default="", help="columns the build under test adds on purpose (comma-separated): "
                    "left out of its tables, the rest compared")
    ap.add_argument("--bits", default="", help="COL=MASK,...: bits of integer columns the build under test sets "
                    "on purpose (a new mark): none in the reference, the rest compared")
    ap.add_argument("--dump", nargs=2, metavar=("SO", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dump:
        dump(args.dump[0], args.corpus, Path(args.dump[1]))
        return 0
    work = Path(args.work)
    for side, so in (("ref", args.ref), ("new", args.new)):
        if side == "ref" and args.reuse_ref and any((work / side).glob("*.json")):
            continue
        subprocess.run(["rm", "-rf", str(work / side)], check=True)
        cmd = [sys.executable, __file__, "--ref", args.ref, "--dump", so, str(work / side)]
        if args.corpus:
            cmd += ["--corpus", args.corpus]
        subprocess.run(cmd, check=True)
    added = tuple(c for c in args.added.split(",") if c)
    bits = {c: int(m, 0) for c, m in (x.split("=") for x in args.bits.split(",") if x)}
    problems = compare(work / "ref", work / "new", added, bits)
    if added:
        print(f"columns of the new build not compared: {', '.join(added)}")
    extra = {m.name for m in (work / "new").glob("*.json")} - {m.name for m in (work / "ref").glob("*.json")}
    problems += [f"{n}: only in the new build's dumps" for n in sorted(extra)]
    for p in problems[:20]:
        print(p)
    print("EQUAL" if not problems else f"DIFFERENT: {len(problems)} dumps differ")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
