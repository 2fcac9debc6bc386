"""The compiled engine (ranktrace._core) against the polars pipeline it
replaces: every file of sample_logs, ../shared/real_log_shapes and a
generated corpus gives the same events and facts, column by column.
Chunks are cut small here so that blocks, carried identity and times are
tested across batch boundaries too."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from ranktrace.ingest import core, pipeline, read
from ranktrace.ingest.discover import discover, open_text_stream

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ROOT.parent / "shared" / "real_log_shapes"


def _old(cat, ref, data: bytes, batch_bytes: int):
    ctx = pipeline.FileContext(7, ref.path, ref.hints, "UTC")
    batches = list(read.iter_batches(io.BytesIO(data), read.ReadStats(), batch_bytes=batch_bytes))
    evs, facts, carry, prev, envs = [], {}, None, None, None
    for i, b in enumerate(batches):
        batch = b if carry is None else pl.concat([carry, b])
        if envs is None:
            envs = pipeline._envelopes(cat, pipeline.envelope.sniff(batch["raw"], cat.envelopes))
        out = pipeline.process_batch(batch, ctx, cat, envs, final=i == len(batches) - 1, prev_ts=prev)
        carry, prev = out.carry, out.last_ts
        evs.append(out.events)
        for t, f in out.facts.items():
            facts.setdefault(t, []).append(f)
    return evs, facts


def _new(cat, ref, data: bytes, chunk: int):
    fp = core.file_parser(cat, 7, ref.path, ref.hints)
    chunks = [data[k:k + chunk] for k in range(0, len(data), chunk)] or [b""]
    evs, facts = [], {}
    for k, c in enumerate(chunks):
        out = fp.feed(c, k == len(chunks) - 1)
        if out is not None:
            e, f = core.frames(*out)
            evs.append(e)
            for t, v in f.items():
                facts.setdefault(t, []).append(v)
    return evs, facts


def _as_text(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(pl.all().cast(pl.String)).sort(pl.all(), nulls_last=True)


def differences(cat, paths, chunk: int = read.BATCH_BYTES) -> list[str]:
    out = []
    for ref in discover([str(p) for p in paths], lambda m: None):
        with open_text_stream(ref) as fh:
            data = fh.read()
        (oe, of), (ne, nf) = _old(cat, ref, data, chunk), _new(cat, ref, data, chunk)
        old = pl.concat(oe) if oe else None
        new = pl.concat(ne) if ne else None
        if old is None or new is None:
            if (old is not None and len(old)) or (new is not None and len(new)):
                out.append(f"{ref.path}: events in one engine only")
            continue
        cols = [c for c in old.columns if c != "byte_offset"]  # the old engine counted U+FFFD bytes
        a, b = _as_text(old.select(cols)), _as_text(new.select(cols))
        if not a.equals(b):
            out.append(f"{ref.path}: events differ")
        for t in sorted(set(of) | set(nf)):
            if t not in of or t not in nf:
                out.append(f"{ref.path}: fact table {t} in one engine only")
                continue
            fo = pl.concat(of[t], how="diagonal_relaxed")
            fn = pl.concat(nf[t], how="diagonal_relaxed")
            common = [c for c in fo.columns]
            extra = [c for c in fn.columns if c not in fo.columns and fn[c].null_count() < len(fn)]
            if extra or not _as_text(fo.select(common)).equals(_as_text(fn.select(common))):
                out.append(f"{ref.path}: fact table {t} differs")
    return out


def test_sample_logs_and_real_shapes_equal(catalog):
    paths = [ROOT / "sample_logs", ROOT / "tests" / "formats" / "data"]
    if SHAPES.is_dir():
        paths.append(SHAPES)
    assert differences(catalog, paths) == []


def test_generated_corpus_equal_across_small_batches(catalog, tmp_path):
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gen_corpus.py"), str(tmp_path), "--mb", "3"],
                   check=True, capture_output=True)
    # 64 KiB chunks: hundreds of batch boundaries, blocks and carries across them.
    assert differences(catalog, [tmp_path], chunk=64 << 10) == []


def test_sample_logs_equal_across_small_batches(catalog):
    assert differences(catalog, [ROOT / "sample_logs"], chunk=4 << 10) == []
