"""The benchmark's corpus is made of real line shapes: every line of it must
be claimed, or the benchmark measures the raw fallback instead of parsing
(a zero-padded c10 month once left 4.5 k lines per 32 MB unclaimed)."""

import subprocess
import sys

from rt_testlib import REPO


def test_generated_corpus_is_fully_claimed(tmp_path, ingest_to):
    out = tmp_path / "corpus"
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "gen_corpus.py"), str(out), "--mb", "1"],
                   check=True, capture_output=True)
    _summary, con = ingest_to([out])
    total, raw = con.execute("SELECT count(*), count(*) FILTER (format = 'raw') FROM events").fetchone()
    assert total > 5000
    assert raw == 0, con.execute("SELECT raw FROM events WHERE format = 'raw' LIMIT 3").fetchall()
    # Every [rankN]: line has rank N; every glog line its time.
    bad = con.execute(r"""SELECT count(*) FROM events
        WHERE raw LIKE '[rank%]:%' AND rank IS DISTINCT FROM CAST(regexp_extract(raw, '^\[rank(\d+)\]', 1) AS INTEGER)
        """).fetchone()[0]
    assert bad == 0
    assert con.execute("SELECT count(*) FROM events WHERE format = 'torch_c10d' AND ts_kind <> 'year_inferred'"
                       ).fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM events WHERE format = 'torch_c10d'").fetchone()[0] > 0


def test_store_benchmark_stores_every_line_each_way(tmp_path, ingest_to):
    """bench_store.py: the store's lines written as DuckDB rows and as Parquet, each timed, every
    line in both (its count printed), and the Parquet file smaller than the DuckDB one."""
    import re
    _summary, con = ingest_to([REPO / "sample_logs" / "torchrun_segfault"])
    n = con.execute("SELECT count(*) FROM event_lines").fetchone()[0]
    con.close()
    p = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_store.py"), str(tmp_path / "store.duckdb")],
                       check=True, capture_output=True, text=True)
    assert f"lines {n:,}," in p.stdout
    ways = re.findall(r"^(duckdb rows|parquet \(pyarrow\))\s+([\d.]+) s CPU\s+([\d.]+) MB/s per core\s+([\d.]+) MB$",
                      p.stdout, re.M)
    assert [name for name, *_ in ways] == ["duckdb rows", "parquet (pyarrow)"]
    sizes = {name: float(mb) for name, _cpu, _rate, mb in ways}
    assert sizes["parquet (pyarrow)"] <= sizes["duckdb rows"]
