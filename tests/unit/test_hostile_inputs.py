"""Inputs that used to hang, read the store itself, or lose lines silently."""

import os
import subprocess
import sys

import duckdb

from ranktrace.ingest.discover import discover
from ranktrace.ingest.pipeline import ingest
from ranktrace.store import connect as store_connect


def _events(db):
    con = store_connect(str(db))
    try:
        return con.execute("SELECT raw, ts FROM events ORDER BY line").fetchall()
    finally:
        con.close()


def test_fifo_without_a_writer_does_not_hang(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-m", "ranktrace.cli", "ingest", str(fifo), "--db", str(tmp_path / "s.duckdb")],
                          capture_output=True, text=True, timeout=60)
    assert "pipe" in proc.stderr + proc.stdout


def test_a_pipe_argument_is_read(tmp_path, catalog):
    r, w = os.pipe()
    os.write(w, b"2026-03-02 03:17:41 ERROR boom\n")
    os.close(w)
    s = ingest([f"/dev/fd/{r}"], str(tmp_path / "s.duckdb"), catalog)
    assert [f.status for f in s.files] == ["ingested"]
    assert _events(tmp_path / "s.duckdb")[0][0] == "2026-03-02 03:17:41 ERROR boom"


def test_character_devices_are_refused_by_name():
    seen = []
    assert list(discover(["/dev/zero"], seen.append)) == []
    assert seen and "/dev/zero" in seen[0] and "not a regular file" in seen[0]


def test_ingest_dot_never_reads_its_own_store(tmp_path, catalog, monkeypatch):
    (tmp_path / "a.log").write_text("2026-03-02 03:17:41 INFO hello\n")
    monkeypatch.chdir(tmp_path)
    ingest(["."], "ranktrace.duckdb", catalog)
    s = ingest(["."], "ranktrace.duckdb", catalog)   # the store exists now, and maybe its WAL
    assert all("ranktrace.duckdb" not in f.path for f in s.files)


def test_a_sample_bundles_answers_are_not_ingested(tmp_path, catalog):
    b = tmp_path / "bundle"
    b.mkdir()
    (b / "node.log").write_text("2026-03-02 03:17:41 ERROR boom\n")
    for name in ("expected_verdict.json", "truth.json", "README.md"):
        (b / name).write_text('{"verdict": {"kind": "exception"}}\n')
    s = ingest([str(b)], str(tmp_path / "s.duckdb"), catalog)
    assert [os.path.basename(f.path) for f in s.files] == ["node.log"]


def test_cr_only_line_endings_are_lines(tmp_path, catalog):
    (tmp_path / "mac.log").write_bytes(b"2026-03-02 03:17:41 INFO a\r2026-03-02 03:17:42 INFO b\r")
    s = ingest([str(tmp_path / "mac.log")], str(tmp_path / "s.duckdb"), catalog)
    assert len(_events(tmp_path / "s.duckdb")) == 2
    assert any("CR only" in p for p in s.files[0].problems)


def test_implausible_years_are_flagged_and_not_used(tmp_path, catalog):
    (tmp_path / "y.log").write_text("2026-03-02 03:17:41 INFO ok\n0001-01-01 00:00:00 ERROR bogus\n"
                                    "9999-12-31 23:59:59 ERROR bogus\n")
    s = ingest([str(tmp_path / "y.log")], str(tmp_path / "s.duckdb"), catalog)
    times = [t for _, t in _events(tmp_path / "s.duckdb")]
    assert len(set(times)) == 1 and times[0].year == 2026
    assert any("outside 1990-2099" in p for p in s.files[0].problems)
    con = store_connect(str(tmp_path / "s.duckdb"))
    flagged = con.execute("SELECT ts_kind, ts_text FROM events WHERE line > 1 ORDER BY line").fetchall()
    con.close()
    assert flagged == [("interpolated", "0001-01-01 00:00:00"), ("interpolated", "9999-12-31 23:59:59")], \
        "each line says its own time was ignored (detectors leave it out)"


def test_a_symlink_loop_in_a_directory_is_named_not_a_crash(tmp_path, catalog):
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    (d / "a.log").write_text("2026-03-02 03:17:41 INFO hello\n")
    os.symlink(d / "loop1", d / "loop2")
    os.symlink(d / "loop2", d / "loop1")
    os.symlink(d, d / "sub" / "up")           # a directory link back up: never followed
    os.symlink(d / "gone.log", d / "dangling.log")
    warned = []
    s = ingest([str(d)], str(tmp_path / "s.duckdb"), catalog, warn=warned.append)
    assert [f.status for f in s.files] == ["ingested"]
    for name in ("loop1", "loop2", "dangling.log"):
        assert any(name in w and "skipped" in w for w in warned), (name, warned)


def test_an_unreadable_subdirectory_is_named(tmp_path, catalog, monkeypatch):
    """Root reads any directory, so the refusal is the file system's answer
    made by hand: os.walk's listing of one directory fails."""
    d = tmp_path / "in"
    (d / "locked").mkdir(parents=True)
    (d / "locked" / "x.log").write_text("2026-03-02 03:17:41 INFO hidden\n")
    (d / "a.log").write_text("2026-03-02 03:17:41 INFO hello\n")
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)
    monkeypatch.setattr(os, "scandir", scandir)
    warned = []
    ingest([str(d)], str(tmp_path / "s.duckdb"), catalog, warn=warned.append)
    assert any("locked" in w and "cannot read directory" in w for w in warned), warned


def test_a_stream_over_the_limit_is_refused_by_name(tmp_path, catalog, monkeypatch):
    import io
    from ranktrace.ingest import discover as disc
    monkeypatch.setattr(disc, "MAX_STREAM", 1000)
    warned = []
    s = ingest(["-"], str(tmp_path / "s.duckdb"), catalog, warn=warned.append,
               stdin=io.BytesIO(b"2026-03-02 03:17:41 INFO x\n" * 100))
    assert s.files == [] and any("<stdin>" in w and "refused" in w for w in warned), warned


def test_an_empty_directory_says_why_nothing_was_ingested(tmp_path, capsys):
    from ranktrace.cli import main
    (tmp_path / "empty").mkdir()
    rc = main(["ingest", str(tmp_path / "empty"), "--db", str(tmp_path / "s.duckdb")])
    err = capsys.readouterr().err
    assert rc == 1
    assert f"{tmp_path / 'empty'}: no files to read in this directory" in err


def test_a_rank_past_32_bits_loses_its_rank_not_the_store(tmp_path, catalog):
    # the engine keeps a rank as 64 bits, the lines' view narrows it: a value past INTEGER made every read of
    # the lines fail (issue 29's helper found it); the line stays, with no rank
    log = tmp_path / "job.out"
    log.write_text("1: [rank99999999999]: RuntimeError: boom\n0: [rank0]: step 3\n")
    ingest([str(log)], str(tmp_path / "s.duckdb"), catalog)
    con = store_connect(str(tmp_path / "s.duckdb"))
    try:
        rows = con.execute("SELECT line, rank FROM events ORDER BY line").fetchall()
    finally:
        con.close()
    assert [line for line, _ in rows] == [1, 2]
    assert rows[0][1] is None and rows[1][1] == 0
