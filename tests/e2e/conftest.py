"""End-to-end tests against REAL software: a one-host Slurm cluster and
multi-node torchrun on loopback, driven by tools/capture (see its README).

Markers: `e2e` needs Slurm and/or torch (tools/capture/install.sh), `slow`
marks long captures (not in the default run). Without the software the e2e
tests skip with the reason, unless RANKTRACE_REQUIRE_E2E=1: then they fail,
so CI cannot pass by skipping them.
"""
from e2e_support import capture, slurm_cluster, torch_ready  # noqa: F401  (fixtures)


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: needs real Slurm and/or real torchrun (tools/capture/install.sh)")
    config.addinivalue_line("markers", "slow: long captures, not in the default run (pytest -m slow)")
