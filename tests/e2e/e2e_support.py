"""Helpers shared by the e2e tests (a module with a unique name, so it can
be imported from test files whatever other conftest.py files exist)."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CAPTURE_DIR = ROOT / "tools" / "capture"
SAMPLE_LOGS = ROOT / "sample_logs"
VENV = Path(os.environ.get("RANKTRACE_TORCH_VENV", "/opt/ranktrace-torch"))
STATE = Path("/run/ranktrace-capture-slurm")
REQUIRE = os.environ.get("RANKTRACE_REQUIRE_E2E") == "1"


def _load_capture():
    """tools/capture/capture.py (stdlib only) as a module: scenarios, KINDS."""
    spec = importlib.util.spec_from_file_location("rt_capture", CAPTURE_DIR / "capture.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


capture_mod = _load_capture()
KINDS = capture_mod.KINDS          # design.md section 4 taxonomy
SCENARIOS = capture_mod.SCENARIOS


def _missing(slurm=True, torch=True):
    why = []
    if os.geteuid() != 0:
        why.append("not root (unshare, Slurm daemons and kill by PID need root)")
    if torch and not (VENV / "bin" / "torchrun").exists():
        why.append(f"no torch venv at {VENV}")
    if torch and not shutil.which("unshare"):
        why.append("no unshare")
    if slurm:
        why += [f"no {b}" for b in ("slurmctld", "slurmd", "slurmdbd", "sbatch", "munged", "mariadbd")
                if not shutil.which(b)]
    return why


def require(slurm=True, torch=True):
    why = _missing(slurm, torch)
    if why:
        msg = "e2e prerequisites missing: " + "; ".join(why) + " (run tools/capture/install.sh)"
        if REQUIRE:
            pytest.fail(msg + " and RANKTRACE_REQUIRE_E2E=1", pytrace=False)
        pytest.skip(msg)


def _ours_up():
    f = STATE / "slurmctld.pid"
    try:
        os.kill(int(f.read_text().strip()), 0)
        return True
    except (OSError, ValueError):
        return False


@pytest.fixture(scope="session")
def slurm_cluster():
    """A running Slurm cluster from slurm_up.sh; stopped at the end of the
    session if this fixture started it."""
    require(slurm=True, torch=False)
    was_up = _ours_up()
    r = subprocess.run(["bash", str(CAPTURE_DIR / "slurm_up.sh")], capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        pytest.fail(f"slurm_up.sh failed ({r.returncode}):\n{r.stdout}\n{r.stderr}", pytrace=False)
    yield
    if not was_up:
        subprocess.run(["bash", str(CAPTURE_DIR / "slurm_down.sh")], capture_output=True, timeout=300)


@pytest.fixture(scope="session")
def torch_ready():
    require(slurm=False, torch=True)


def run_capture(name, out, timeout=900):
    """Run one scenario with the real harness and return (truth, verdict)."""
    r = subprocess.run([sys.executable, str(CAPTURE_DIR / "capture.py"), "run", name, "--out", str(out)],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"capture {name} failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    truth = json.loads((Path(out) / "truth.json").read_text())
    verdict = json.loads((Path(out) / "expected_verdict.json").read_text())
    return truth, verdict


@pytest.fixture(scope="session")
def capture(tmp_path_factory):
    """capture(name) -> (bundle_dir, truth, verdict), each scenario at most once a session."""
    done = {}

    def _run(name):
        if name not in done:
            out = tmp_path_factory.mktemp("bundles") / name
            done[name] = (out,) + run_capture(name, out)
        return done[name]
    return _run
