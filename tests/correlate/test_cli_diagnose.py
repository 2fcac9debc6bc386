import json

from ranktrace.cli import main

from .fixtures import ev, steps, store

NODES = {"n1": [0, 1], "n2": [2, 3]}


def _db(tmp_path):
    path = str(tmp_path / "s.duckdb")
    evs = steps(NODES, 6, skew={"n2": 12.0}) + [
        ev(20.5, "failed (exitcode: -9) local_rank: 1 (pid: 777) of binary: python", kind="worker_failed", host="n2"),
        ev(8.0, "Connection closed by peer", kind="peer_closed", host="n1", rank=0),
        ev(8.0, "Connection closed by peer", kind="peer_closed", host="n1", rank=1),
        ev(20.0, "Connection closed by peer", kind="peer_closed", host="n2", rank=2),
        ev(1, "local_ranks=[0, 1]", host="n2", file="n2.log", line=900),
        ev(1, "global_ranks=[2, 3]", host="n2", file="n2.log", line=901)]
    store(evs, path=path).close()
    return path


def test_json_is_the_contract(tmp_path, capsys):
    db = _db(tmp_path)
    assert main(["diagnose", "--db", db, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    v = d["verdict"]
    assert (v["kind"], v["rank"], v["host"], v["pid"]) == ("killed", 3, "n2", 777)
    assert {c["host"] for c in d["clock"]} == {"n1", "n2"}


def test_text_names_culprit_evidence_and_next_step(tmp_path, capsys):
    db = _db(tmp_path)
    assert main(["diagnose", "--db", db]) == 0
    out = capsys.readouterr().out
    assert out.startswith("VERDICT: KILLED")
    for section in ("EVIDENCE", "CASCADE", "CLOCK", "NEXT"):
        assert section in out
    assert "n2.log:" in out and "dmesg" in out


def test_offset_flag_and_md(tmp_path, capsys):
    db = _db(tmp_path)
    assert main(["diagnose", "--db", db, "--format", "md", "--offset", "n2=5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Verdict: `killed`") and "pinned by hand" in out


def test_missing_store_is_an_error(tmp_path, capsys):
    assert main(["diagnose", "--db", str(tmp_path / "nope.duckdb")]) == 2
