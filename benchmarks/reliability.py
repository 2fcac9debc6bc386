"""The reliability table of a set of verdicts: per confidence bin, how many verdicts and how many were right
(issue 27: of the verdicts at >= 0.8, how many were right). accuracy.py prints it for every set it scores,
fit_choice.py for the probabilities it fits."""

from __future__ import annotations

BINS = ((0.0, 0.5), (0.5, 0.6), (0.6, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01))


def reliability(conf: list[tuple]) -> str:
    """conf: (confidence, right, ...) per verdict. One line per bin that holds any."""
    lines = ["  confidence    verdicts  right"]
    for lo, hi in BINS:
        b = [c[1] for c in conf if lo <= c[0] < hi]
        if b:
            lines.append(f"  {lo:.1f}-{min(hi, 1.0):.1f}     {len(b):>8}  {sum(b):>5} ({sum(b) / len(b):.0%})")
    return "\n".join(lines)
