"""benchmarks/fit_choice.py: the fit learns from labelled candidates, keeps each weight's sign, and
its calibration is monotone."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import fit_choice  # noqa: E402
from ranktrace.correlate.choose import FEATURES, SIGNS  # noqa: E402


def _hyp(**f):
    return {"features": {k: f.get(k, 0.0) for k in FEATURES}}


def test_fit_learns_which_feature_names_the_culprit_and_keeps_signs():
    # the culprit is the one that did not complain first (victim 0), whatever the evidence says
    groups = []
    for i in range(20):
        culprit = _hyp(evidence=0.4, victim=0.0)
        waited = _hyp(evidence=0.9, victim=1.0)
        groups.append({"hyps": [waited, culprit], "labels": [False, True], "longrun": True})
    start = {k: 0.0 for k in FEATURES}
    w = fit_choice.fit(groups, start)
    assert w["victim"] < 0
    assert fit_choice.evaluate(w, groups)["top1"] == 20
    assert fit_choice.evaluate(start, groups)["top1"] == 0   # ties go to the first listed: wrong
    for k, sign in SIGNS.items():
        assert w[k] * sign >= 0, k


def test_calibration_is_monotone_and_pools_violators():
    conf = [(0.95, True)] * 9 + [(0.95, False)] + [(0.85, True)] * 2 + [(0.85, False)] * 2 \
        + [(0.75, True)] * 3 + [(0.75, False)] + [(0.2, False)] * 4
    edges, values = fit_choice.calibrate(conf)
    assert values == sorted(values)
    assert values[9] == 0.9
    # 0.7-0.8 (3/4 right) above 0.8-0.9 (2/4 right) is a violation: pooled to 5/8
    assert values[7] == values[8] == round(5 / 8, 3)
    assert values[2] == 0.0
