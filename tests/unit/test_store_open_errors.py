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


def _set_version(db, v: str) -> None:
    import duckdb
    con = duckdb.connect(str(db))
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [v])
    con.close()


def _version(db) -> str:
    import duckdb
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    finally:
        con.close()


@pytest.mark.parametrize("cmd", sorted(set(COMMANDS) - {"demo"}))
def test_a_store_of_a_newer_schema_is_refused_and_left_alone(logfile, capsys, cmd):
    """No silent misread: a store written by a later ranktrace (a schema this
    one does not know) is neither read nor overwritten."""
    from ranktrace.store import SCHEMA_VERSION
    db = logfile / "new.duckdb"
    assert main(["ingest", str(logfile / "a.log"), "--db", str(db), "-q"]) == 0
    newer = str(int(SCHEMA_VERSION) + 1)
    _set_version(db, newer)
    capsys.readouterr()
    rc, err = _run(capsys, COMMANDS[cmd](str(db), logfile))
    assert rc == 2, err
    assert f"schema version {newer}" in err and f"up to {SCHEMA_VERSION}" in err and "upgrade ranktrace" in err
    assert "Traceback" not in err
    assert _version(db) == newer


def test_a_store_of_an_older_schema_is_brought_up_to_date_by_a_write(logfile, capsys):
    from ranktrace.store import SCHEMA_VERSION
    db = logfile / "old.duckdb"
    assert main(["ingest", str(logfile / "a.log"), "--db", str(db), "-q"]) == 0
    older = str(int(SCHEMA_VERSION) - 1)
    _set_version(db, older)
    capsys.readouterr()
    rc, err = _run(capsys, ["diagnose", "--db", str(db)])
    assert rc == 2 and f"schema version {older}" in err and "ranktrace ingest" in err
    # ingesting the same logs again adds nothing and upgrades the store
    assert main(["ingest", str(logfile / "a.log"), "--db", str(db), "-q"]) == 0
    assert _version(db) == SCHEMA_VERSION
    capsys.readouterr()
    rc, err = _run(capsys, ["diagnose", "--db", str(db)])
    assert rc != 2 and "schema version" not in err
