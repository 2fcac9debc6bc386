"""Fit the weights of the one score that chooses an attempt's culprit (src/ranktrace/correlate/choose.py).

    python benchmarks/fit_choice.py collect OUT.jsonl [--samples] [--longrun DIR ...]
    python benchmarks/fit_choice.py fit OUT.jsonl [--write]      # prints the fit; --write updates
                                                                  # queries/data/choice_weights.toml

`collect` diagnoses labelled runs and writes, per failed attempt whose culprit is among the candidates
or not, the candidates' features and whether each is the truth (culprit located and kind right):
sample_logs bundles (expected_verdict.json: the top-level verdict, or each failed attempt's) and long
runs of benchmarks/gen_longrun.py (truth.json; only the TUNING part: a run whose truth says `heldout`
is refused, it is for measuring only). `fit` fits a conditional logit (exactly one candidate of an
attempt is the culprit: a softmax over its candidates' weighted sums) by gradient ascent with a small
L2 penalty, each weight kept to the sign its feature's meaning gives it (choose.SIGNS), and prints top-1 before/after and a reliability table of the probabilities it gives.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path


HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(HERE))

from accuracy import ingest_incident, located  # noqa: E402
from longrun_score import culprit_ok, match, ref_shift  # noqa: E402
from reliability import reliability  # noqa: E402

from ranktrace.correlate import diagnose  # noqa: E402
from ranktrace.correlate.choose import FEATURES, SIGNS, kind_class, load_weights, probabilities, weighted  # noqa: E402
from ranktrace.formats import load_catalog  # noqa: E402
from ranktrace.store import open_readonly  # noqa: E402

WEIGHTS = REPO / "queries" / "data" / "choice_weights.toml"
L2 = 0.05
# a real capture's attempt counts this many generated ones: its lines are the emitters' own, the
# generator's are a telling of them (and the generator's habits must not outvote the real runs)
REAL_WEIGHT = 5.0
STEPS = 3000
RATE = 0.5


def _groups_of(d: Path, out: dict) -> list[dict]:
    """(truth, hypotheses) per failed attempt of one diagnosed incident."""
    groups = []
    ev = d / "expected_verdict.json"
    truth = json.loads((ev if ev.exists() else d / "truth.json").read_text())
    if truth.get("heldout"):
        raise SystemExit(f"{d}: a held-out run (truth.json says heldout): measure it, never fit on it")
    true_atts = [a for a in truth.get("attempts") or [] if a.get("outcome") == "failed" and a.get("verdict")]
    if true_atts and out.get("attempts"):
        m = match(truth["attempts"], out["attempts"], ref_shift(out, truth))
        for a in true_atts:
            f = m.get(a["id"])
            if f and f.get("hypotheses"):
                groups.append({"name": f"{d.name}#{a['id']}", "truth": a["verdict"], "hyps": f["hypotheses"],
                               "longrun": "story" in truth})
    elif not true_atts:
        t = truth.get("verdict", truth)
        if t.get("kind") not in (None, "none") and out.get("hypotheses"):
            groups.append({"name": d.name, "truth": t, "hyps": out["hypotheses"], "longrun": False})
    return groups


def label(g: dict, h: dict) -> bool:
    t = g["truth"]
    ok = culprit_ok(h, t) if g["longrun"] else located(h, t)
    return ok and h.get("kind") == t["kind"]


def collect(dirs: list[Path], out_path: Path) -> None:
    cat = load_catalog()
    n = 0
    with out_path.open("w") as fh:
        for d in dirs:
            with tempfile.TemporaryDirectory() as td:
                db = os.path.join(td, "s.duckdb")
                try:
                    ingest_incident(d, cat, db)
                    con = open_readonly(db)
                    out = diagnose(con)
                    con.close()
                except Exception as exc:   # one bad run must not stop the others
                    print(f"  ERR {d.name}: {type(exc).__name__}: {exc}"[:200])
                    continue
            for g in _groups_of(d, out):
                # a hypothesis another pass added (control plane, stranded pods) is not scored here
                g["hyps"] = [h for h in g["hyps"] if "features" in h]
                if not g["hyps"]:
                    continue
                fh.write(json.dumps(g, default=str) + "\n")
                n += 1
    print(f"{n} failed attempts from {len(dirs)} runs -> {out_path}")


def _probs(w: dict[str, float], hyps: list[dict]) -> list[float]:
    """The candidates' probabilities, as choose.rank gives them."""
    return probabilities([weighted(h["features"], w) for h in hyps], w.get("temperature", 1.0))


def evaluate(w: dict[str, float], groups: list[dict]) -> dict:
    right, conf = 0, []
    for g in groups:
        p = _probs(w, g["hyps"])
        i = max(range(len(p)), key=lambda j: (p[j], -j))
        right += g["labels"][i]
        conf.append((p[i], g["labels"][i], kind_class(g["hyps"][i].get("kind"))))
    return {"top1": right, "n": len(groups), "conf": conf}


BINS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0000001)


def calibrate(conf: list[tuple]) -> tuple[list[float], list[float]]:
    """The share of right verdicts per probability bin, made monotone (pool adjacent violators, each bin
    weighed by its verdicts; an empty bin takes its neighbour's pool)."""
    pools: list[list[float]] = []   # [right, n, first bin, last bin]
    for i, (lo, hi) in enumerate(zip(BINS, BINS[1:])):
        b = [c[1] for c in conf if lo <= c[0] < hi]
        pools.append([float(sum(b)), float(len(b)), i, i])
        while len(pools) > 1 and (pools[-1][1] == 0 or pools[-2][1] == 0
                                  or pools[-2][0] / pools[-2][1] > pools[-1][0] / pools[-1][1]):
            r, n, _, last = pools.pop()
            pools[-1][0] += r
            pools[-1][1] += n
            pools[-1][3] = last
    values = [0.0] * (len(BINS) - 1)
    for r, n, first, last in pools:
        for i in range(first, last + 1):
            values[i] = round(r / n, 3) if n else 0.0
    return [round(min(e, 1.0), 3) for e in BINS], values


def fit(groups: list[dict], start: dict[str, float]) -> dict[str, float]:
    """Conditional logit over the groups that hold the truth among their candidates."""
    """Conditional logit: per failed attempt, the truth is one of its candidates or none of them (the
    option of score 0); `bias` is fitted like a feature that every candidate has."""
    keys = ("bias",) + FEATURES
    w = {k: start.get(k, 0.0) for k in keys}
    for _ in range(STEPS):
        grad = {k: -L2 * w[k] for k in keys}
        for g in groups:
            p = _probs(w, g["hyps"])
            gw = 1.0 if g["longrun"] else REAL_WEIGHT
            pos = [i for i, ok in enumerate(g["labels"]) if ok]
            # the truth may appear as two candidates (rank and its host): their probability together
            q = sum(p[i] for i in pos)
            for i, h in enumerate(g["hyps"]):
                target = p[i] / q if i in pos else 0.0   # no truth among them: all 0 (none of them)
                x = dict(h["features"], bias=1.0)
                for k in keys:
                    grad[k] += gw * (target - p[i]) * x.get(k, 0.0)
        total = sum(1.0 if g["longrun"] else REAL_WEIGHT for g in groups)
        for k in keys:
            w[k] += RATE * grad[k] / max(1.0, total)
            if k in SIGNS:   # the fit weighs a feature, never turns its meaning around
                w[k] = max(0.0, w[k]) if SIGNS[k] > 0 else min(0.0, w[k])
    return w


def write(w: dict[str, float], cal: dict[str, tuple[list[float], list[float]]], source: str) -> None:
    body = ["# The weights of the one score that chooses an attempt's culprit (src/ranktrace/correlate/choose.py",
            "# names and defines the features). Fitted by benchmarks/fit_choice.py on labelled runs; [fit] says",
            "# on what, and what it measured. Edit by re-fitting, not by hand.", "[fit]",
            f"source = {json.dumps(source)}", "", "[weights]", f"bias = {w['bias']:.3f}", "temperature = 1.0"]
    body += [f"{k} = {w[k]:.3f}" for k in FEATURES]
    body += ["", "# the confidence of a verdict whose probability falls in [edges[i], edges[i+1]): the share",
             "# of such verdicts that were right on the fit set, made monotone; per class of kind (choose.kind_class)"]
    for cls, (edges, values) in sorted(cal.items()):
        body += [f"[calibration.{cls}]", f"edges = {edges}", f"values = {values}"]
    WEIGHTS.write_text("\n".join(body) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect", help="diagnose labelled runs, write their candidates' features")
    c.add_argument("out")
    c.add_argument("--samples", action="store_true", help="the bundles of sample_logs/")
    c.add_argument("--longrun", nargs="*", default=[], help="directories of generated long runs (tuning part)")
    f = sub.add_parser("fit", help="fit the weights on collected features")
    f.add_argument("data", nargs="+")
    f.add_argument("--write", action="store_true", help=f"write {WEIGHTS.relative_to(REPO)}")
    a = ap.parse_args(argv)
    if a.cmd == "collect":
        dirs = sorted(p for p in (REPO / "sample_logs").iterdir() if (p / "expected_verdict.json").exists()) \
            if a.samples else []
        for root in a.longrun:
            r = Path(root)
            dirs += [r] if (r / "truth.json").exists() else sorted(p for p in r.iterdir() if (p / "truth.json").exists())
        collect(dirs, Path(a.out))
        return 0
    groups = [json.loads(x) for p in a.data for x in Path(p).read_text().splitlines() if x.strip()]
    for g in groups:
        g["labels"] = [label(g, h) for h in g["hyps"]]
    now = load_weights(str(WEIGHTS))
    before = evaluate(now, groups)
    w = fit(groups, now)
    after = evaluate(w, groups)
    reach = sum(1 for g in groups if any(g["labels"]))
    print(f"{len(groups)} failed attempts, truth among the candidates in {reach}")
    print(f"top-1 right: current weights {before['top1']}, fitted {after['top1']}")
    for part, sel in (("real captures", False), ("generated", True)):
        gs = [g for g in groups if g["longrun"] == sel]
        if gs:
            print(f"  {part}: current {evaluate(now, gs)['top1']}/{len(gs)}, fitted {evaluate(w, gs)['top1']}/{len(gs)}")
    print("fitted:", ", ".join(f"{k} {w[k]:+.2f}" for k in ("bias",) + FEATURES))
    print("reliability (fitted, on the fit set):\n" + reliability(after["conf"]))
    cal = {cls: calibrate([c for c in after["conf"] if c[2] == cls]) for cls in ("hard", "other")}
    for cls, (edges, values) in cal.items():
        print(f"calibration, {cls} kinds (probability bin -> confidence):",
              ", ".join(f"{lo:.1f}:{v:.2f}" for lo, v in zip(edges, values)))
    if a.write:
        write(w, cal, f"{len(groups)} failed attempts ({', '.join(a.data)}): top-1 {after['top1']}/{len(groups)} "
                 f"(truth among the candidates in {reach})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
