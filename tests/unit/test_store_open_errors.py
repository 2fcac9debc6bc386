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
from ranktrace.store import connect as store_connect

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
    assert "is a file, not a ranktrace store" in err and str(db) in err
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
        [sys.executable, "-c", "import duckdb, sys, time\nfrom ranktrace.store import connect\n"
         f"c = connect({str(db)!r}, read_only=False)\nprint('held', flush=True)\nsys.stdin.read()"],
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
    with pytest.raises(StoreError, match="is a file, not a ranktrace store"):
        open_readonly(db)
    # a store's directory whose DuckDB file has no store in it
    (tmp_path / "d").mkdir()
    duckdb.connect(str(tmp_path / "d" / "ranktrace.duckdb")).close()
    with pytest.raises(StoreError, match="not a ranktrace store"):
        open_readonly(tmp_path / "d")


def test_a_directory_that_is_no_store_as_db(tmp_path, capsys):
    rc, err = _run(capsys, ["diagnose", "--db", str(tmp_path)])
    assert rc == 2 and "no such store" in err


def _set_version(db, v: str) -> None:
    import duckdb
    con = store_connect(str(db), read_only=False)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [v])
    con.close()


def _version(db) -> str:
    import duckdb
    con = store_connect(str(db))
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


def test_a_store_of_an_older_schema_is_refused_and_left_alone(logfile, capsys):
    """A store of an older schema is refused by every command, readers and
    ingest alike (its lines are not where this version reads them), with the
    command that rebuilds it, and is left as it was."""
    from ranktrace.store import SCHEMA_VERSION
    db = logfile / "old.duckdb"
    assert main(["ingest", str(logfile / "a.log"), "--db", str(db), "-q"]) == 0
    older = str(int(SCHEMA_VERSION) - 1)
    _set_version(db, older)
    capsys.readouterr()
    for argv in (["diagnose", "--db", str(db)], ["ingest", str(logfile / "a.log"), "--db", str(db), "-q"]):
        rc, err = _run(capsys, argv)
        assert rc == 2 and f"schema version {older}" in err and "ranktrace ingest LOGS --db" in err, err
    assert _version(db) == older


def test_a_single_file_store_of_schema_5_is_refused(logfile, capsys):
    """A store of the layout before parts (one DuckDB file, schema 5) is
    refused with its version and the command that rebuilds it."""
    import duckdb
    db = logfile / "inc.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '5')")
    con.close()
    for cmd in ("diagnose", "sql", "ingest"):
        rc, err = _run(capsys, COMMANDS[cmd](str(db), logfile))
        assert rc == 2 and "store schema version 5" in err and "rebuild it" in err, err
        assert f"ranktrace ingest LOGS --db {logfile / 'inc'}.store" in err
