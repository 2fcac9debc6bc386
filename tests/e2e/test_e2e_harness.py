"""Checks of the capture harness that need neither Slurm nor torch."""
import subprocess
import sys

import pytest

from e2e_support import CAPTURE_DIR, capture_mod as mod


def test_capture_list_names_every_scenario_with_a_taxonomy_kind():
    r = subprocess.run([sys.executable, str(CAPTURE_DIR / "capture.py"), "list"],
                       capture_output=True, text=True, check=True)
    listed = {line.split()[0] for line in r.stdout.splitlines()}
    assert listed == set(mod.SCENARIOS)
    kinds = {sc["kind"] for sc in mod.SCENARIOS.values()}
    assert kinds <= set(mod.KINDS)
    # the incidents issue 3 asks for are all there
    assert {"none", "exception", "crash", "killed", "oom", "hang", "node_failure",
            "rendezvous_timeout", "time_limit", "cancelled"} <= kinds
    assert sum(1 for sc in mod.SCENARIOS.values() if sc.get("skew")) >= 2
    assert any(sc["launcher"] == "slurm_torchrun" for sc in mod.SCENARIOS.values())


@pytest.mark.parametrize("script", ["install.sh", "slurm_up.sh", "slurm_down.sh", "node_launch.sh"])
def test_shell_scripts_parse(script):
    subprocess.run(["bash", "-n", str(CAPTURE_DIR / script)], check=True)
