"""Every command that opens a store says what is wrong with --db (not a
DuckDB file, locked by another ingest, no such directory) instead of a
traceback (issue 15)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ranktrace.cli import main
from ranktrace.store import StoreError, open_readonly, open_store

LOG = "2026-03-02T03:00:00Z step 1\n"

COMMANDS = {
    "ingest": lambda db, tmp: ["ingest", str(tmp / "a.log"), "--db", db, "-q"],
    "demo": lambda db, tmp: ["demo", "--db", db],
    "diagnose": lambda db, tmp: ["diagnose", "--db", db],
    "report": lambda db, tmp: ["report", "--db", db],
    "sql": lambda db, tmp: ["sql", "SELECT 1", "--db", db],
    "tui": lambda db, tmp: ["tui", "--db", db, "--force"],
    "perfetto": lambda db, tmp: ["export", "perfetto", "--db", db, "-o", str(tmp / "t.json")],
    "parquet": lambda db, tmp: ["export", "parquet", "--db", db, str(tmp / "ds")],
}


def _run(capsys, argv) -> tuple[int, str]:
    rc = main(argv)
    _, err = capsys.readouterr()
    return rc, err


@pytest.fixture
def logfile(tmp_path):
    (tmp_path / "a.log").write_text(LOG)
    return tmp_path


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_not_a_duckdb_file(logfile, capsys, cmd):
    db = logfile / "notes.duckdb"
    db.write_text("these are my notes, not a database\n")
    rc, err = _run(capsys, COMMANDS[cmd](str(db), logfile))
    assert rc == 2
    assert "not a DuckDB database" in err and str(db) in err
    assert "Traceback" not in err
    assert db.read_text() == "these are my notes, not a database\n"   # left as it was


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_missing_directory(logfile, capsys, cmd):
    db = logfile / "no" / "such" / "dir" / "s.duckdb"
    rc, err = _run(capsys, COMMANDS[cmd](str(db), logfile))
    assert rc == 2
    assert str(db) in err and "Traceback" not in err
    if cmd in ("ingest", "demo"):
        assert "does not exist" in err and "mkdir -p" in err
    else:
        assert "no such store" in err
    assert not (logfile / "no").exists()


@pytest.fixture
def locked_store(logfile):
    """A store held open for writing by another process (as a running ingest holds it)."""
    db = logfile / "busy.duckdb"
    open_store(db).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time\n"
         f"c = duckdb.connect({str(db)!r})\nprint('held', flush=True)\nsys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    yield db, holder.pid
    holder.stdin.close()
    holder.wait(timeout=30)


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_locked_by_another_process(locked_store, logfile, capsys, cmd):
    db, pid = locked_store
    rc, err = _run(capsys, COMMANDS[cmd](str(db), logfile))
    assert rc == 2
    assert "in use by another process" in err and f"pid {pid}" in err and "ranktrace ingest" in err
    assert "Traceback" not in err


def test_a_duckdb_file_that_is_not_a_store(tmp_path):
    import duckdb
    db = tmp_path / "plain.duckdb"
    duckdb.connect(str(db)).close()
    with pytest.raises(StoreError, match="not a ranktrace store"):
        open_readonly(db)


def test_a_directory_as_db(tmp_path, capsys):
    rc, err = _run(capsys, ["diagnose", "--db", str(tmp_path)])
    assert rc == 2 and "is a directory" in err
