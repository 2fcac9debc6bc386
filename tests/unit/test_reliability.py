"""benchmarks/reliability.py: the table accuracy.py prints under every set (issue 27: of the verdicts at >= 0.8,
how many were right)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from reliability import reliability  # noqa: E402


def test_each_verdict_counts_in_its_confidence_bin_and_the_right_ones_are_counted():
    table = reliability([(0.95, True), (0.85, False), (0.81, True), (0.3, True), (1.0, True)])
    rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[1:]}
    assert rows == {"0.0-0.5": ["1", "1", "(100%)"], "0.8-0.9": ["2", "1", "(50%)"],
                    "0.9-1.0": ["2", "2", "(100%)"]}
