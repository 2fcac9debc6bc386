"""`ranktrace report` / `ranktrace export` from the command line: outputs,
errors, and --redact on real logs with planted secrets, hosts, IPs and users."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ranktrace.cli import main
from ranktrace.report.verdict import have_diagnose

from report_helpers import SHAPES, assert_self_contained, chdir, copy_bundle, open_ro, sample_bundles
from rt_testlib import ingest_sample

BUNDLES = sample_bundles()


def _first_bundle():
    if not BUNDLES:
        pytest.skip("no sample incidents in sample_logs/ yet")
    # prefer a torchrun incident with several nodes (the planted test wants host names)
    return next((b for b in BUNDLES if len(list(b.glob("*.log"))) >= 2), BUNDLES[0])


# ---------------------------------------------------------------- outputs and errors

def test_report_end_to_end_with_the_real_diagnosis(verdict_factory, tmp_path, capsys):
    if not have_diagnose():
        pytest.skip("ranktrace.correlate.diagnose not available")
    db, _, vfile = verdict_factory(_first_bundle())
    assert main(["report", "--db", str(db)]) == 0  # diagnoses the store itself
    md = capsys.readouterr().out
    assert md.startswith("# ") and "## Evidence" in md
    out = tmp_path / "r.html"
    assert main(["report", "--db", str(db), "--verdict", str(vfile), "-o", str(out)]) == 0  # format from suffix
    assert_self_contained(out.read_text())
    assert "wrote" in capsys.readouterr().err
    out = tmp_path / "r.txt"
    assert main(["report", "--db", str(db), "--verdict", str(vfile), "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["verdict"]["kind"] and doc["report"]["title"]


def test_report_with_a_verdict_file(verdict_factory, tmp_path, capsys):
    db, verdict, vfile = verdict_factory(_first_bundle())
    assert main(["report", "--db", str(db), "--verdict", str(vfile), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == json.loads(json.dumps(verdict["verdict"], default=str))


def test_missing_store(tmp_path, capsys):
    out = tmp_path / "r.md"
    assert main(["report", "--db", str(tmp_path / "nope.duckdb"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no such store" in err and "ranktrace ingest" in err
    assert not out.exists() and not (tmp_path / "nope.duckdb").exists()
    assert main(["export", "perfetto", "--db", str(tmp_path / "nope.duckdb"), "-o", str(tmp_path / "t.json")]) == 2
    assert main(["export", "parquet", "--db", str(tmp_path / "nope.duckdb"), str(tmp_path / "ds")]) == 2
    assert "no such store" in capsys.readouterr().err
    assert not (tmp_path / "t.json").exists()


def test_unwritable_output(verdict_factory, tmp_path, capsys):
    db, _, vfile = verdict_factory(_first_bundle())
    for target, why in ((tmp_path / "no" / "such" / "dir" / "r.md", "does not exist"),
                        (tmp_path, "is a directory")):
        assert main(["report", "--db", str(db), "--verdict", str(vfile), "-o", str(target)]) == 2
        assert why in capsys.readouterr().err
    assert main(["export", "perfetto", "--db", str(db), "-o", str(tmp_path / "no" / "t.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        import os
        if os.access(ro, os.W_OK):  # root writes anywhere: nothing to check
            return
        assert main(["report", "--db", str(db), "--verdict", str(vfile), "-o", str(ro / "r.md")]) == 2
        assert "not writable" in capsys.readouterr().err
    finally:
        ro.chmod(0o700)


def test_bad_verdict_file(verdict_factory, tmp_path, capsys):
    db, _, _ = verdict_factory(_first_bundle())
    bad = tmp_path / "v.json"
    bad.write_text("{not json")
    assert main(["report", "--db", str(db), "--verdict", str(bad)]) == 2
    assert "not JSON" in capsys.readouterr().err
    bad.write_text('{"kind": "oom"}')
    assert main(["report", "--db", str(db), "--verdict", str(bad)]) == 2
    assert "no \"verdict\" object" in capsys.readouterr().err


def test_export_perfetto_needs_an_output(verdict_factory):
    db, _, _ = verdict_factory(_first_bundle())
    with pytest.raises(SystemExit) as e:
        main(["export", "perfetto", "--db", str(db)])
    assert e.value.code == 2


def test_report_writes_nothing_but_the_output(verdict_factory, tmp_path):
    db, _, vfile = verdict_factory(_first_bundle())
    work = tmp_path / "cwd"
    work.mkdir()
    with chdir(work):
        assert main(["report", "--db", str(db), "--verdict", str(vfile), "-o", "r.md"]) == 0
    assert sorted(p.name for p in work.iterdir()) == ["r.md"]


# ---------------------------------------------------------------- --redact

PLANTED_HOSTS = ["gpu-node-17", "gpu-node-18", "login-3.hpc.acme-corp.com", "login-3", "acme-corp"]
PLANTED_IPS = ["10.20.30.40", "172.16.5.9", "fe80::1c2d:3eff:fe4f:5a6b"]
PLANTED_USERS = ["jdoe", "alice.smith"]
PLANTED_SECRETS = [
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AKIAIOSFODNN7EXAMPLE",
    "S3cr3tPassw0rd-77",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "7f3a9c2e1b5d4a6f8e0c7f3a9c2e1b5d4a6f8e0c",
]

ENV_DUMP = """\
HOSTNAME=gpu-node-17
USER=jdoe
HOME=/home/jdoe
PWD=/home/jdoe/runs/llm-7b
MASTER_ADDR=10.20.30.40
MASTER_PORT=29500
HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789
AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE
AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
WANDB_API_KEY=7f3a9c2e1b5d4a6f8e0c7f3a9c2e1b5d4a6f8e0c
GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345
SLURM_JOB_NODELIST=gpu-node-[17-18]
"""

PLANTED_LINES = [
    "gpu-node-17:4242:4300 [0] NCCL INFO NET/Socket : Using [0]eth0:172.16.5.9<0> [1]ib0:fe80::1c2d:3eff:fe4f:5a6b%ib0<0>",
    "gpu-node-18:5151:5200 [1] NCCL INFO Bootstrap : Using eth0:10.20.30.40<0>",
    "  File \"/home/jdoe/runs/llm-7b/train.py\", line 212, in <module>",
    "  File \"/Users/alice.smith/src/model.py\", line 7, in forward",
    "RuntimeError: could not reach db: password=S3cr3tPassw0rd-77 (user jdoe@login-3.hpc.acme-corp.com)",
    "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U' https://metrics.acme-corp.com/push",
]


def _plant(bundle_dir: Path) -> None:
    """Planted lines into every log file of a copy of a real bundle, an env dump
    on the side, and a node log named after a planted host."""
    for f in sorted(bundle_dir.rglob("*")):
        if f.is_file() and f.suffix in (".log", ".out", ".txt") and f.stat().st_size:
            with open(f, "a") as fh:
                fh.write("\n".join(PLANTED_LINES) + "\n")
    (bundle_dir / "env_dump.txt").write_text(ENV_DUMP)
    (bundle_dir / "gpu-node-17.log").write_text("\n".join(PLANTED_LINES[:2]) + "\n" + ENV_DUMP)


@pytest.fixture(scope="module")
def planted(tmp_path_factory, catalog):
    """A store of real logs with planted secrets: a sample incident when there
    is one, else a few files of ../shared/real_log_shapes."""
    root = tmp_path_factory.mktemp("planted")
    if BUNDLES:
        src = _first_bundle()
        bundle = copy_bundle(src, root / src.name)
    elif SHAPES.is_dir() and any(SHAPES.glob("*.log")):
        bundle = root / "shapes"
        bundle.mkdir()
        for f in sorted(SHAPES.glob("*.log"))[:8]:
            shutil.copy(f, bundle / f.name)
    else:
        pytest.skip("no real logs to plant into (sample_logs/ and real_log_shapes absent)")
    _plant(bundle)
    db = ingest_sample(bundle, root / "planted.duckdb", catalog)
    con = open_ro(db)
    try:
        hosts = sorted(r[0] for r in con.execute("SELECT DISTINCT host FROM events WHERE host IS NOT NULL").fetchall())
        if have_diagnose():
            from ranktrace.report.verdict import get_verdict
            verdict = get_verdict(con)
        else:
            verdict = None
    finally:
        con.close()
    if verdict is None or not verdict["verdict"].get("host"):
        # a verdict naming a planted host, so the title, culprit and next steps carry it too
        verdict = dict(verdict or {}, verdict={
            "kind": "killed", "rank": 1, "local_rank": 1, "host": "gpu-node-17", "pod": None, "pid": 4242,
            "gpu": None, "time": None, "confidence": 0.9,
            "summary": "rank 1 on gpu-node-17 (10.20.30.40) was killed; user jdoe"},
            evidence=[{"file": f"{bundle.name}/gpu-node-17.log", "line": 1, "time": None, "role": "cause",
                       "text": PLANTED_LINES[0]}])
    # the verdict also cites the env dump and the planted lines, so that every
    # planted value is in the unredacted report (else the test proves nothing)
    cite = [(f"{bundle.name}/env_dump.txt", n) for n in (2, 6, 10)]
    cite += [(f"{bundle.name}/gpu-node-17.log", n) for n in (1, 2)]
    some_log = next(f for f in sorted(bundle.rglob("*.log")) if f.name != "gpu-node-17.log")
    n_lines = len(some_log.read_text(errors="replace").splitlines())
    cite += [(str(some_log.relative_to(bundle.parent)), n_lines - k) for k in (0, 4)]
    verdict = dict(verdict, evidence=list(verdict.get("evidence") or []) + [
        {"file": f, "line": n, "time": None, "role": "context", "text": ""} for f, n in cite])
    vfile = root / "verdict.json"
    vfile.write_text(json.dumps(verdict, default=str))
    return {"db": db, "vfile": vfile, "hosts": hosts, "bundle": bundle}


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_redact_leaves_no_planted_value(planted, tmp_path, fmt):
    out = tmp_path / f"r.{fmt}"
    assert main(["report", "--db", str(planted["db"]), "--verdict", str(planted["vfile"]), "--format", fmt,
                 "-o", str(out), "--redact"]) == 0
    text = out.read_text()
    # the unredacted report does carry them (the test would prove nothing otherwise)
    plain = tmp_path / f"plain.{fmt}"
    assert main(["report", "--db", str(planted["db"]), "--verdict", str(planted["vfile"]), "--format", fmt,
                 "-o", str(plain)]) == 0
    plain_text = plain.read_text()
    planted_values = PLANTED_HOSTS + PLANTED_IPS + PLANTED_USERS + PLANTED_SECRETS
    missing = [v for v in planted_values if v not in plain_text and (fmt != "html" or "&" not in v)]
    assert not missing, f"planted values not in the unredacted {fmt} report: {missing}"
    leaks = [s for s in PLANTED_HOSTS + PLANTED_IPS + PLANTED_USERS + PLANTED_SECRETS + planted["hosts"]
             if s in text]
    # parts of secrets count as leaks too
    leaks += [s[5:17] for s in PLANTED_SECRETS if s[5:17] in text]
    assert not leaks, f"{fmt}: {leaks}"
    for ph in ("host-1", "user-1", "secret-1"):
        assert ph in text
    if fmt == "html":
        assert_self_contained(text)
    if fmt == "json":
        doc = json.loads(text)
        assert doc["report"]["redacted"]["secret"] >= len(PLANTED_SECRETS)


def test_redact_placeholders_agree_across_formats(planted, tmp_path):
    outs = {}
    for fmt in ("md", "json"):
        out = tmp_path / f"r.{fmt}"
        assert main(["report", "--db", str(planted["db"]), "--verdict", str(planted["vfile"]), "--format", fmt,
                     "-o", str(out), "--redact"]) == 0
        outs[fmt] = out.read_text()
    doc = json.loads(outs["json"])
    host = doc["verdict"]["host"]
    assert host.startswith("host-")
    assert host in outs["md"].splitlines()[0]
    for row in doc["report"]["status"]["rows"]:
        if row["host"]:
            assert f"| {row['host']} |" in outs["md"]
