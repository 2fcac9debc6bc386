"""Fuzz the input layer: random and damaged archives and compressed streams
through ingest (in this process, for many examples; and a batch of them
through the real `ranktrace ingest` command in a child, for its output and
its peak RSS).

Properties that can fail:
- no exception (in the child: no traceback, exit code 0 or 1 with reasons);
- no silent loss: every member is stored with all its lines, or a message
  names the archive or the member (a cut archive loses its end: said);
- an undamaged archive has every member stored whole (or named: binary);
- messages carry no raw terminal control characters in the child's output;
- the child's peak RSS stays under 1 GB.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest
from hypothesis import given

from archives import archives
from fuzzlib import corpus, expected_lines, fuzz_settings, save_failure
from ranktrace.formats import load_catalog
from ranktrace.ingest import discover
from ranktrace.ingest.pipeline import ingest
from ranktrace.store import connect as store_connect

CATALOG = load_catalog(check_samples=False)


def stored(db: Path) -> dict[str, int]:
    con = store_connect(str(db))
    try:
        return dict(con.execute("SELECT path, lines_read FROM files").fetchall())
    finally:
        con.close()


def check_archive(arch, workdir: Path) -> None:
    path = workdir / arch.name
    path.write_bytes(arch.data)
    said: list[str] = []
    summary = ingest([str(path)], str(workdir / "s.duckdb"), CATALOG, warn=said.append)
    said += [p for f in summary.files for p in f.problems]
    rows = stored(workdir / "s.duckdb")
    for member, text in arch.texts.items():
        key = str(path) + (f"!{member}" if member else "")
        want = len(expected_lines(text))
        named = any(arch.name in w for w in said)
        if arch.damaged and not arch.cut:
            continue   # a flipped byte in tar data or an unchecked zstd block can pass unseen
        if rows.get(key) == want:
            continue
        assert named, f"{key}: {rows.get(key)} of {want} lines stored and nothing said: {said}"
        if not arch.damaged:
            assert any(f"!{member}" in w or (not member and arch.name in w) for w in said), said


@fuzz_settings(40)
@given(arch=archives())
def test_fuzz_input_layer(arch):
    with tempfile.TemporaryDirectory() as d:
        try:
            check_archive(arch, Path(d))
        except BaseException:
            save_failure(f"archives/{arch.name}", arch.data)
            raise


@pytest.mark.parametrize("path", corpus("archives"), ids=lambda p: p.name)
def test_corpus_archives(path, tmp_path, catalog):
    """Kept inputs, each damaged (found by the fuzzing, or its neighbours):
    ingest goes on past them and says what is wrong with each."""
    said: list[str] = []
    target = tmp_path / path.name
    target.write_bytes(path.read_bytes())
    (tmp_path / "after.log").write_text("2026-03-02 03:17:41 INFO the next input\n")
    s = ingest([str(target), str(tmp_path / "after.log")], str(tmp_path / "s.duckdb"), catalog, warn=said.append)
    assert any(path.name in w for w in said), said
    assert [f.status for f in s.files if f.path.endswith("after.log")] == ["ingested"]


# ------------------------------------------------------ the real command, in a child

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
_PEAK = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; "
         "print('PEAK_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(rc)")


def _batch(n: int, seed: int) -> list:
    """n archives drawn from the same strategy, reproducibly."""
    from hypothesis import HealthCheck, settings
    got: list = []

    @settings(max_examples=n, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(archives())
    def collect(arch):
        got.append(arch)
    collect()
    random.Random(seed).shuffle(got)
    return got[:n]


def test_fuzzed_batch_through_the_cli(tmp_path):
    """40 fuzzed archives and streams (and a gzip bomb past the ratio check)
    in one directory, ingested by `ranktrace ingest`: no traceback, every
    damaged-and-lost archive named, output free of control characters, peak
    RSS under 1 GB."""
    d = tmp_path / "in"
    d.mkdir()
    batch = _batch(40, 15)
    for i, arch in enumerate(batch):
        (d / f"{i:02d}_{arch.name}").write_bytes(arch.data)
    # 300 MiB of 1 MiB lines in 300 KB of gzip: past MIN_RATIO_CHECK and
    # MAX_RATIO (text, so that it is not refused as binary first).
    import zlib
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"A" * ((1 << 20) - 1) + b"\n"
    bomb = b"".join(z.compress(chunk) for _ in range(300)) + z.flush()
    assert len(bomb) * discover.MAX_RATIO < 300 << 20
    (d / "zz_bomb.log.gz").write_bytes(bomb)
    proc = subprocess.run([sys.executable, "-c", _PEAK, sys.executable, "-m", "ranktrace.cli", "ingest", str(d),
                           "--db", str(tmp_path / "s.duckdb")], capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode in (0, 1), out[-3000:]
    peak_mb = int(out.rsplit("PEAK_KB", 1)[1].split()[0]) / 1024
    assert peak_mb < 1024, f"peak RSS {peak_mb:.0f} MB"
    assert not CONTROL.search(out.replace("\n", "").replace("\r", "")), "raw control characters in the output"
    assert "zz_bomb.log.gz" in out and "decompression bomb" in out
    rows = stored(tmp_path / "s.duckdb")
    for i, arch in enumerate(batch):
        fname = f"{i:02d}_{arch.name}"
        if arch.damaged and not arch.cut:
            continue
        for member, text in arch.texts.items():
            got = [n for p, n in rows.items() if p.endswith(fname + (f"!{member}" if member else ""))]
            if got != [len(expected_lines(text))]:
                assert fname in out, f"{fname}!{member}: stored {got}, nothing said"
