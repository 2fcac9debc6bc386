"""A store's kept sets (the clock's anchors, the attempts' kept rows, the hot lines) are stamped with what
they are made of: their SQL and the code that writes it, not the whole text of the modules around them.
A reader of another version (a copy of the package, edited) takes them from the store after an edit that
changes none of that (a comment, a docstring, a function of clock.py they do not use), and reads the lines
again after an edit of their SQL or of the code they are made of; the verdict is the same either way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ranktrace.correlate import diagnose
from ranktrace.ingest.pipeline import ingest
from ranktrace.store import connect as store_connect

from rt_testlib import sample_files as _files
from .test_sample_bundles import BUNDLES

REPO = Path(__file__).resolve().parents[2]

# In a subprocess on a copy of the package: which kept sets the diagnosis read from the store, its verdict.
PROBE = """
import json, sys
from ranktrace.correlate import diagnose
from ranktrace.store import connect
con = connect(sys.argv[1])
verdict = diagnose(con)
temp = {n for (n,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
hot = con.execute("SELECT count(*) FROM duckdb_views() WHERE temporary AND view_name = 'hot_src'").fetchone()[0]
print(json.dumps({"read_again": sorted(temp & {"anchor_src", "progress_seconds", "step_buckets"})
                  + ([] if hot else ["hot_src"]), "verdict": verdict}, default=str, sort_keys=True))
"""


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{path.name}: the text to edit is not there once: {old!r}"
    path.write_text(text.replace(old, new))


# (name, file under the copy's root, text there, its replacement, the kept sets read again)
EDITS = [
    ("nothing", None, None, None, []),
    # a function of clock.py that no kept set is made of, a comment and a docstring of the code they are
    ("unrelated_clock_code", "src/ranktrace/correlate/clock.py", "\ndef apart(",
     "\ndef _unused_by_any_kept_set():\n    return 1\n\n\ndef apart(", []),
    ("comment_in_identity", "src/ranktrace/correlate/identity.py", "\ndef base_views(",
     "\n# a comment, edited\ndef base_views(", []),
    ("docstring_of_anchor_views", "src/ranktrace/correlate/clock.py", '"""Temp view events_id_a, what anchors.sql',
     '"""Temp view events_id_a (edited), what anchors.sql', []),
    # what they are made of
    ("anchors_sql", "queries/align/anchors.sql", "-- name: anchors\n", "-- name: anchors\n-- edited\n", ["anchor_src"]),
    ("max_step_anchors", "src/ranktrace/correlate/clock.py", "MAX_STEP_ANCHORS = 512", "MAX_STEP_ANCHORS = 513",
     ["anchor_src"]),
    ("progress_keys_code", "src/ranktrace/correlate/attempts.py",
     "    from .identity import base_views, events_views\n    con.execute(\"\"\"\n        CREATE OR REPLACE TEMP TABLE progress_key_src",
     "    from .identity import base_views, events_views\n    assert con is not None\n    con.execute(\"\"\"\n"
     "        CREATE OR REPLACE TEMP TABLE progress_key_src", ["progress_seconds", "step_buckets"]),
    ("identity_code", "src/ranktrace/correlate/identity.py", "\ndef base_views(",
     "\ndef _unused():\n    return 1\n\n\ndef base_views(", ["anchor_src", "progress_seconds", "step_buckets"]),
    ("hot_events_sql", "queries/align/hot_events.sql", "\nWHERE ", "\nWHERE (1 = 1) AND ", ["hot_src"]),
]


@pytest.fixture(scope="module")
def stored(tmp_path_factory, catalog):
    """A run that restarted (kept rows of both kinds), ingested by this code; its verdict as it reads."""
    bundle = next(b for b in BUNDLES if b.name == "torchrun_restart_resume")
    db = str(tmp_path_factory.mktemp("store") / "s.duckdb")
    cwd = os.getcwd()
    os.chdir(bundle.parent)
    try:
        ingest(_files(bundle), db, catalog)
    finally:
        os.chdir(cwd)
    con = store_connect(db)
    keys = {k for (k,) in con.execute("SELECT key FROM meta WHERE key LIKE '%_stamp'").fetchall()}
    assert {"clock_anchors_stamp", "hot_src_stamp", "progress_seconds_stamp", "step_buckets_stamp"} <= keys
    verdict = json.loads(json.dumps(diagnose(con), default=str, sort_keys=True))
    con.close()
    return db, verdict


@pytest.mark.parametrize("name,rel,old,new,again", EDITS, ids=[e[0] for e in EDITS])
def test_a_kept_set_is_read_again_only_when_what_it_is_made_of_changed(stored, tmp_path, name, rel, old, new, again):
    db, verdict = stored
    root = tmp_path / "version"
    shutil.copytree(REPO / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "queries", root / "queries")
    (root / "parsers").symlink_to(REPO / "parsers")
    if rel:
        _edit(root / rel, old, new)
    out = subprocess.run([sys.executable, "-c", PROBE, db], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(root / "src")}, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout)
    assert got["read_again"] == sorted(again)
    assert got["verdict"] == verdict   # (every edit here leaves the rows as they were: read again, the same)


def test_made_of_reads_code_not_its_layout():
    from ranktrace.correlate.util import _tree, made_of
    a = 'def f(con):\n    """A docstring."""\n    return con.execute("SELECT 1")   # a comment\n'
    b = 'def f(con):\n    # another comment\n    return con.execute(\n        "SELECT 1")\n'
    c = 'def f(con):\n    return con.execute("SELECT 2")\n'
    assert _tree(a) == _tree(b) != _tree(c)
    assert made_of("SELECT 1") != made_of("SELECT 2")
    assert made_of("a", "b") != made_of("b", "a")


def test_made_of_without_source_reads_the_compiled_code(monkeypatch):
    # a bytecode-only install: no source to read; the stamps come from the compiled code (a stamp, not a crash)
    import inspect

    from ranktrace.correlate import clock, identity, util
    monkeypatch.setattr(inspect, "getsource", lambda obj: (_ for _ in ()).throw(OSError("no source")))
    util._code_text.cache_clear()
    util.with_imports.cache_clear()   # (both kept per process: what this process read with source)
    try:
        parts = util.with_imports(identity)
        assert parts == (identity,)
        assert util.made_of(*parts, clock.anchor_views) == util.made_of(identity, clock.anchor_views)
        assert util.made_of(clock.anchor_views) != util.made_of(clock.anchor_rows)
    finally:
        util._code_text.cache_clear()
        util.with_imports.cache_clear()
