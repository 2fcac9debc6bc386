"""What a command pays before its work: the modules it imports, the catalog
it loads, the statements opening a store runs."""

import subprocess
import sys

from ranktrace import cli, store

HEAVY = ("duckdb", "polars", "pyarrow", "textual")


def _imported(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
                         check=True, capture_output=True, text=True).stdout.split("\n")[-2]
    return set(out.split())


def test_default_db_is_the_stores():
    assert cli.DEFAULT_DB == store.DEFAULT_DB


def test_the_cli_and_formats_list_import_no_heavy_module():
    for code in ("import ranktrace.cli as c; c._register_extras(); c.build_parser()",
                 "import contextlib, io, ranktrace.cli as c\n"
                 "with contextlib.redirect_stdout(io.StringIO()): c.main(['formats', 'list'])"):
        mods = _imported(code)
        assert not [m for m in HEAVY if m in mods], code


def test_kinds_are_stored_whole(tmp_path, catalog):
    con = store.open_store(str(tmp_path / "s.duckdb"), catalog)
    got = con.execute("SELECT kind, role, severity, failure, description FROM kinds ORDER BY kind").fetchall()
    con.close()
    assert got == sorted((k.name, k.role, k.severity, k.failure, k.description) for k in catalog.kinds.values())
    assert any(k.failure is None for k in catalog.kinds.values()) and any(k.failure for k in catalog.kinds.values())
