"""The report and export code is headless: it never imports textual, and the
commands register through the CLI's extension point."""
import subprocess
import sys


def test_no_textual_import():
    code = ("import sys; import ranktrace.report, ranktrace.export, ranktrace.commands.report, "
            "ranktrace.commands.export; bad = [m for m in sys.modules if m == 'textual' or m.startswith('textual.')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_commands_are_registered(capsys):
    from ranktrace.cli import main
    for argv in (["report", "--help"], ["export", "perfetto", "--help"], ["export", "parquet", "--help"]):
        try:
            main(argv)
        except SystemExit as e:
            assert e.code == 0
    out = capsys.readouterr().out
    assert "--redact" in out and "--max-events" in out and "--overwrite" in out


def test_next_steps_cover_every_verdict_kind():
    import re
    import tomllib
    from pathlib import Path

    import ranktrace.report.build as b
    design = (Path(__file__).resolve().parents[2] / ".." / "shared" / "design.md")
    kinds = set(b.KIND_PHRASE)
    if design.exists():
        text = design.read_text()
        block = text.split("`kind` is exactly one of:", 1)[1].split("### Store", 1)[0]
        kinds |= set(re.findall(r"`([a-z_]+)`", block))
    steps = tomllib.loads(Path(b.__file__).with_name("next_steps.toml").read_text())
    assert kinds <= set(steps["kind"]), kinds - set(steps["kind"])
    assert kinds <= set(b.KIND_PHRASE)
