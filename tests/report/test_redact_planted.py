"""--redact with planted secrets (issue 15): the short name of a redacted
FQDN, pod names in the JSON report's paths, and `export perfetto|parquet
--redact` (the report's redactor, reused)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import duckdb
import pytest

from ranktrace.cli import main
from ranktrace.report.redact import redact_document

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "correlate"))
from fixtures import ev, store  # noqa: E402

POD = "trainer-worker-3"
PLANTED = {
    "fqdn": "dgx-a17.corp.example.com",
    "short": "dgx-a17",
    "host": "gpu-node-07",
    "pod": POD,
    "ip": "10.1.2.3",
    "user": "alice",
    "token": "hf_abcdefghijklmnopqrstuvwx",
    "password": "hunter2xyz",
}


def test_short_name_goes_with_its_fqdn():
    doc, r = redact_document({"a": "connected to dgx-a17.corp.example.com:29500", "b": "dgx-a17 is slow",
                              "c": "see www.example.com and api.example.com"})
    assert "dgx-a17" not in json.dumps(doc)
    assert doc["b"].split()[0] == doc["a"].split()[2].split(":")[0]   # the same placeholder
    assert "www" in doc["c"] or "host-" in doc["c"]                  # words are not machine names


@pytest.fixture
def planted(tmp_path):
    db = tmp_path / "planted.duckdb"
    path = f"var/log/pods/ml_{POD}_0b5e-41d4/pytorch/0.log"
    evs = [ev(float(i), f"step {i} loss 1.0", kind="progress", host="gpu-node-07", rank=r, pod=POD, file=path)
           for i in range(4) for r in (0, 1)]
    evs += [
        ev(4.0, "rendezvous with dgx-a17.corp.example.com:29500 from 10.1.2.3", host="gpu-node-07", rank=0,
           pod=POD, file=path),
        ev(4.5, "HF_TOKEN=hf_abcdefghijklmnopqrstuvwx password=hunter2xyz cwd /home/alice/train", host="gpu-node-07",
           rank=1, pod=POD, file=path),
        ev(5.0, "RuntimeError: dgx-a17 stopped answering", kind="python_exception", host="gpu-node-07", rank=0,
           pod=POD, file=path),
    ]
    con = store(evs, path=str(db))
    con.execute("INSERT INTO files (file_id, path, source, sha256, host, pod) VALUES (1, ?, ?, 'x', 'gpu-node-07', ?)",
                [path, "/home/alice/bundle/" + path, POD])
    con.close()
    return str(db)


def _leaks(text: str) -> list[str]:
    low = text.lower()
    return [k for k, v in PLANTED.items() if v.lower() in low]


def test_report_json_redacts_pods_in_paths_and_short_names(planted, capsys):
    assert main(["report", "--db", planted, "--format", "json"]) == 0
    plain = capsys.readouterr().out
    assert len(_leaks(plain)) >= 6                    # the test plants what it checks
    assert main(["report", "--db", planted, "--format", "json", "--redact"]) == 0
    out = capsys.readouterr().out
    assert _leaks(out) == []
    assert "pod-1" in out
    for fmt in ("md", "html"):
        assert main(["report", "--db", planted, "--format", fmt, "--redact"]) == 0
        assert _leaks(capsys.readouterr().out) == []


def test_export_perfetto_redact(planted, tmp_path, capsys):
    plain, red = tmp_path / "plain.json.gz", tmp_path / "red.json.gz"
    assert main(["export", "perfetto", "--db", planted, "-o", str(plain)]) == 0
    assert len(_leaks(gzip.decompress(plain.read_bytes()).decode())) >= 6
    assert main(["export", "perfetto", "--db", planted, "-o", str(red), "--redact"]) == 0
    text = gzip.decompress(red.read_bytes()).decode()
    assert _leaks(text) == []
    trace = json.loads(text)
    assert trace["metadata"]["ranktrace"]["redacted"]["secret"] >= 2
    assert any("host-" in json.dumps(e) for e in trace["traceEvents"] if e.get("name") == "process_name")


def _dataset_text(d: Path) -> str:
    con = duckdb.connect()
    out = []
    for f in sorted(d.rglob("*.parquet")):
        out.append(str(f.relative_to(d)))
        out += [json.dumps(r, default=str) for r in con.execute(f"SELECT * FROM read_parquet('{f}')").fetchall()]
    con.close()
    out.append((d / "_ranktrace.json").read_text())
    return "\n".join(out)


def test_export_parquet_redact(planted, tmp_path, capsys):
    assert main(["export", "parquet", "--db", planted, str(tmp_path / "plain")]) == 0
    assert len(_leaks(_dataset_text(tmp_path / "plain"))) >= 6
    assert main(["export", "parquet", "--db", planted, str(tmp_path / "red"), "--redact"]) == 0
    text = _dataset_text(tmp_path / "red")
    assert _leaks(text) == []
    assert "node=host-1" in text                      # the partition is the placeholder too
    con = duckdb.connect()
    n = con.execute(f"SELECT count(*) FROM read_parquet('{tmp_path}/red/events/**/*.parquet')").fetchone()[0]
    assert n == 11                                    # every event is still there
    # the same value gets the same placeholder in every table and run
    assert main(["export", "parquet", "--db", planted, str(tmp_path / "red2"), "--redact"]) == 0
    assert _dataset_text(tmp_path / "red2").replace("red2", "red") == text


def test_export_parquet_redact_in_batches_and_without_its_cache(planted, tmp_path, monkeypatch):
    """The distinct strings come back from DuckDB a batch at a time, and the redacted short
    strings are cached (memory stays bounded on any store): one string a batch and a cache
    of two give the dataset the defaults give, and the export leaves no spill behind."""
    from ranktrace.export import parquet as P
    assert main(["export", "parquet", "--db", planted, str(tmp_path / "one"), "--redact"]) == 0
    monkeypatch.setattr(P, "BATCH_ROWS", 1)
    monkeypatch.setattr(P, "CACHED_STRINGS", 2)
    assert main(["export", "parquet", "--db", planted, str(tmp_path / "many"), "--redact"]) == 0
    assert _dataset_text(tmp_path / "many").replace("many", "one") == _dataset_text(tmp_path / "one")
    assert _leaks(_dataset_text(tmp_path / "many")) == []
    assert not (tmp_path / "many" / P.SPILL).exists()
