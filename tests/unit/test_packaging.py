"""An installed (non-editable) wheel finds parsers/ and queries/; every
command is documented in the README."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_installed_wheel_finds_its_data(tmp_path):
    wheel_dir = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheel_dir), str(REPO)],
                   check=True, capture_output=True)
    wheel = next(wheel_dir.glob("ranktrace-*.whl"))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    code = ("import ranktrace, ranktrace.resources as r; "
            "from ranktrace.formats import load_catalog; c = load_catalog(check_samples=False); "
            "print(ranktrace.__file__); print(r.data_dir('parsers')); print(r.data_dir('queries')); "
            "print(len(c.formats)); print(len(list(r.data_dir('queries').glob('schema/*.sql')))); "
            "import ranktrace.formats as f; print(f.precomputed(r.data_dir('parsers')) is not None)")
    env = dict(os.environ, PYTHONPATH=str(target))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True,
                         capture_output=True, text=True).stdout.split("\n")
    assert out[0].startswith(str(target)), "imported the wheel, not the checkout"
    assert out[1].startswith(str(target)) and out[2].startswith(str(target))
    assert int(out[3]) >= 2 and int(out[4]) >= 1
    assert out[5] == "True", "the wheel's precomputed catalog is missing or stale"


def test_every_command_is_in_the_readme():
    from ranktrace.cli import _register_extras, build_parser
    _register_extras()
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    readme = (REPO / "README.md").read_text()
    missing = [c for c in commands if f"ranktrace {c}" not in readme]
    assert missing == []
