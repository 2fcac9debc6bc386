"""benchmarks/run_all.py in --quick mode (3 MB): every metric is in the
report, with sane values: counts that agree with `wc -l`, ratios and RSS
above zero, the TUI's real first screen, every README query. No timing
thresholds: those belong to the real run on a quiet machine."""

from __future__ import annotations

import json
from pathlib import Path
import math
import re
import subprocess
import sys

import pytest

from rt_testlib import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import measure  # noqa: E402
from ranktrace.store import connect as store_connect


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    out = tmp / "latest.json"
    p = subprocess.run([sys.executable, str(REPO / "benchmarks" / "run_all.py"), "--quick",
                        "--work", str(tmp / "work"), "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(out.read_text()), p.stdout, tmp / "work"


def _positive(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v) and v > 0


def test_ingest_counts_every_line_as_wc_and_lnav_do(quick):
    rep, _, _ = quick
    [r] = rep["ingest"]
    c = r["corpus"]
    assert c["files"] > 10 and c["lines"] > 10_000
    assert r["wc"]["lines"] == c["lines"]
    assert r["lnav"]["lines"] == c["lines"], "lnav did not index every line"
    assert r["lnav"]["files"] == c["files"]
    assert r["ingest"]["lines"] == c["lines"], "files.lines_read differs from wc -l"
    assert r["ingest"]["files"] == c["files"]
    assert r["ingest"]["events"] > 0
    assert r["ingest"]["events"] == rep["readers"]["scan"]["events"]


def test_ingest_rates_rss_and_ratios_are_sane(quick):
    rep, _, _ = quick
    [r] = rep["ingest"]
    for tool in ("wc", "lnav", "ingest"):
        for k in ("s", "cpu_s", "mb_s", "lines_s", "peak_rss_mib", "peak_tree_rss_mib"):
            assert _positive(r[tool][k]), (tool, k, r[tool][k])
        assert r[tool]["peak_tree_rss_mib"] >= r[tool]["peak_rss_mib"]
        assert r[tool]["mb_s"] == pytest.approx(r["corpus"]["bytes"] / 1e6 / r[tool]["s"])
    # DuckDB, polars and Python cannot fit in the RSS of `wc -l`.
    assert r["ingest"]["peak_rss_mib"] > 50 > r["wc"]["peak_rss_mib"]
    assert set(r["ratios"]) == {"ingest_mb_s_vs_lnav", "ingest_mb_s_vs_wc", "ingest_cpu_vs_lnav", "ingest_rss_vs_lnav",
                                "store_vs_input"}
    assert all(_positive(v) for v in r["ratios"].values()), r["ratios"]
    assert r["ratios"]["ingest_mb_s_vs_lnav"] == pytest.approx(r["ingest"]["mb_s"] / r["lnav"]["mb_s"])
    assert r["ratios"]["ingest_cpu_vs_lnav"] == pytest.approx(r["ingest"]["cpu_s"] / r["lnav"]["cpu_s"])
    assert r["ingest"]["store_bytes"] > 0


def test_readers_diagnose_tui_queries(quick):
    rep, _, work = quick
    rd = rep["readers"]
    assert rd["store"]["bytes"] == rep["ingest"][0]["ingest"]["store_bytes"]
    assert _positive(rd["store"]["vs_input"])
    assert _positive(rd["scan"]["s"])
    assert _positive(rd["diagnose"]["s"]) and _positive(rd["diagnose"]["vs_scan"])
    assert rd["diagnose"]["verdict"].startswith("VERDICT")
    tui = rd["tui"]
    assert _positive(tui["first_screen_s"]) and _positive(tui["tiny_store_first_screen_s"])
    assert _positive(tui["vs_tiny_store"])
    assert measure.tui_ready(tui["screen"]) and "trn-node01" in tui["screen"]
    names = [n for n, _ in measure.readme_queries(REPO / "README.md")[0]]
    assert len(names) >= 3
    assert [q["name"] for q in rd["queries"]] == names     # every README query, in README order
    for q in rd["queries"]:
        for k in ("s", "cli_s", "vs_scan", "cli_vs_cli_floor"):
            assert _positive(q[k]), (q["name"], k)
        assert q["rows"] >= 0
    assert any(q["rows"] > 0 for q in rd["queries"])
    assert _positive(rd["cli_floor_s"])
    e = rd["export_parquet"]
    assert e and _positive(e["s"]) and list((Path(rd["store"]["path"]) / e["dir"]).rglob("*.parquet"))   # (written in the store, where the README runs it)


def test_markdown_table_has_a_row_per_metric(quick):
    rep, stdout, _ = quick
    assert rep["markdown"] in stdout
    rows = [ln for ln in stdout.splitlines() if ln.startswith("| ") and not ln.startswith("| ---")]
    assert rows[0].startswith("| metric |")
    body = rows[1:]
    n_queries = len(rep["readers"]["queries"])
    assert len(body) == 8 + 2 + 2 * n_queries + 1     # the store's row is its ingest's (--quick: one corpus)
    for row in body:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 6, row
        assert re.fullmatch(r"[\d,.]+", cells[4]) and float(cells[4].replace(",", "")) > 0, row
    for name in ("MB/s", "lines/s", "lines read", "peak RSS", "store MB", "diagnose", "TUI first screen",
                 "export parquet"):
        assert any(name in r for r in body), name
    m = rep["meta"]
    assert m["lnav"].startswith("lnav ") and m["cpus"] >= 1 and re.fullmatch(r"[0-9a-f]{40}", m["commit"])


# --------------------------------------------------------------------------- the measuring helpers

def test_run_reports_the_peak_rss_of_the_child_and_its_tree(tmp_path):
    code = ("import subprocess, sys, time\n"
            "b = bytearray(120 * 2**20)\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import time; b = bytearray(120 * 2**20); time.sleep(0.5)'])\n"
            "time.sleep(0.4); c.wait()\n")
    r = measure.run([sys.executable, "-c", code]).check()
    assert 120 <= r.peak_rss_mib < 200            # the largest process alone
    assert r.peak_tree_rss_mib >= 240             # both at once, sampled
    assert r.wall_s >= 0.4 and r.cpu_s > 0
    # A small program is small: the benchmark's own RSS (Python, DuckDB) is not counted in.
    (tmp_path / "f").write_text("a\nb\n")
    assert measure.run(["wc", "-l", str(tmp_path / "f")]).check().peak_rss_mib < 10
    failed = measure.run([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert failed.returncode == 3 and failed.peak_rss_mib > 0


def test_readme_queries_follow_the_readme(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text('Use:\n\n    ranktrace sql "SELECT 1 AS a" --db inc.duckdb\n\n'
                      "```sql\nSELECT 2\nFROM t;\n```\n\n```json\n{}\n```\n"
                      "    ranktrace export parquet --db inc.duckdb out/\n")
    qs, export = measure.readme_queries(readme)
    assert [q for _, q in qs] == ["SELECT 1 AS a", "SELECT 2\nFROM t"]
    assert [n for n, _ in qs] == ["README:3 `SELECT 1 AS a`", "README:6 `SELECT 2 FROM t`"]
    assert export == "out/"


def test_tui_ready_needs_a_lane_and_a_list_row():
    lane = "▾ node-c11 ✖6           │▃█────"
    row = " 16:57:22.310  node-c14    6     info   info     [Rank 6] Running"
    assert measure.tui_ready(f"header\n{lane}\n\n{row}\n")
    assert not measure.tui_ready(f"header\n{lane}\n")           # the list not drawn yet
    assert not measure.tui_ready(f"header\n{row}\n")            # the timeline not drawn yet
    assert not measure.tui_ready("  loading /tmp/x.duckdb ...\n 2026-11-29 UTC   16:57:05\n")


def test_a_missing_tool_that_cannot_be_installed_is_named(monkeypatch):
    monkeypatch.setattr(measure.os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as e:
        measure.ensure_tool("no-such-tool-rt", "no-such-package-rt", "a test")
    msg = str(e.value)
    assert "`no-such-tool-rt` (a test) is not installed" in msg and "apt-get install -y no-such-package-rt" in msg


def test_first_screen_times_the_command_in_a_terminal(tmp_path):
    s, screen = measure.first_screen(["sh", "-c", "sleep 0.3; echo READY; sleep 10"], lambda t: "READY" in t,
                                     cwd=tmp_path, size=(80, 24))
    assert 0.3 <= s < 5 and "READY" in screen
    assert len(screen.splitlines()) <= 24
    with pytest.raises(SystemExit) as e:
        measure.first_screen(["sh", "-c", "echo bye"], lambda t: False, cwd=tmp_path, timeout=20)
    assert "exited before its first screen" in str(e.value) and "bye" in str(e.value)


def test_reader_layouts_keep_every_line_and_the_verdict(quick, tmp_path):
    """bench_store --readers: each layout copy holds the events of the store (same rows through
    view events) and diagnoses to the same verdict (readers() exits otherwise)."""
    import bench_store
    _, _, work = quick
    store = next(p.parent for p in work.rglob("ranktrace.duckdb") if "tiny" not in str(p))
    got = bench_store.readers(store, tmp_path)
    assert [g["layout"] for g in got] == [n for n, _ in bench_store.READER_LAYOUTS]
    assert all(_positive(g["diagnose_cpu_s"]) for g in got)
    src = store_connect(str(store))
    want = src.execute("SELECT count(*), sum(hash(event_id, message, raw, ts)) FROM events").fetchone()
    src.close()
    for name, _ in bench_store.READER_LAYOUTS:
        con = store_connect(tmp_path / name.replace(" ", "_"))
        assert con.execute("SELECT count(*), sum(hash(event_id, message, raw, ts)) FROM events").fetchone() == want, name
        con.close()
    lines_table = store_connect(tmp_path / "lines_in_duckdb")
    assert lines_table.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'event_lines_table'").fetchone()[0] == 1
    lines_table.close()