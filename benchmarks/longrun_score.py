"""Per-attempt scoring of long runs (benchmarks/accuracy.py --longrun; truth from gen_longrun.py).

For one incident: ingest, diagnose, then
- attempts: how many the diagnosis found against the truth's; each true attempt is matched to at most
  one found attempt, the pairs with the most time in common first (found times are on the aligned clock,
  which runs at the reference host's offset: they are moved to true time by that host's true offset);
- every failed true attempt: located (the rank when the truth names a rank and the logs do, else the host,
  or the pod when the truth gives one, and no other rank), kind right, confident-wrong (wrong at confidence
  >= 0.8), from the verdict of its matched found attempt (none matched: not located, kind wrong);
- false alarms: found attempts with a failure verdict matched to a true attempt that did not fail.
When the diagnose JSON has no `attempts` (a correlator from before issue 27), the top-level verdict is
scored against the last failed true attempt only, and the report says so.

Reports per story (of each failed attempt) and the totals, separately for the tuning and the held-out
sets: the held-out part (gen_longrun.HELDOUT) is there to measure, never to tune on.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import tempfile
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ranktrace.correlate import diagnose  # noqa: E402
from ranktrace.store import open_readonly  # noqa: E402

import gen_longrun  # noqa: E402
from reliability import reliability  # noqa: E402

CONFIDENT = 0.8


def _t(x: str | None) -> dt.datetime | None:
    if not x:
        return None
    return dt.datetime.fromisoformat(x.replace("Z", "+00:00")).replace(tzinfo=None)


def ref_shift(out: dict, truth: dict) -> float:
    """Seconds to subtract from the diagnosis's aligned times to get true times: the true offset of the
    host its clock is aligned to (0 when it names none)."""
    offs = truth.get("clock_offsets_s", {})
    for c in out.get("clock") or []:
        if c.get("basis") == "reference host" and c.get("host") in offs:
            return float(offs[c["host"]])
    return 0.0


def match(true_atts: list[dict], found: list[dict], shift: float) -> dict[int, dict]:
    """true attempt id -> found attempt, one-to-one, largest overlap first; a found attempt of no length
    matches the true attempt it falls in."""
    pairs = []
    for t in true_atts:
        a0, a1 = _t(t["start"]), _t(t["end"])
        for j, f in enumerate(found):
            b0, b1 = _t(f.get("start")), _t(f.get("end")) or _t(f.get("start"))
            if b0 is None:
                continue
            b0 -= dt.timedelta(seconds=shift)
            b1 -= dt.timedelta(seconds=shift)
            ov = (min(a1, b1) - max(a0, b0)).total_seconds()
            if ov > 0 or (b0 == b1 and a0 <= b0 <= a1):
                pairs.append((max(ov, 0.0), t["id"], j))
    pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
    out, used = {}, set()
    for _, tid, j in pairs:
        if tid in out or j in used:
            continue
        out[tid] = found[j]
        used.add(j)
    return out


def culprit_ok(v: dict | None, t: dict) -> bool:
    if not v:
        return False
    if t.get("rank") is not None and t.get("rank_named", True):
        return v.get("rank") == t["rank"]
    if t.get("rank") is not None and v.get("rank") not in (None, t["rank"]):
        return False
    got = {x for x in (v.get("host"), v.get("pod")) if x}
    want = {x for x in (t.get("host"), t.get("pod")) if x}
    return bool(got & want)


def score(d: Path, cat, ingest_incident, verbose: bool = False) -> dict:
    truth = json.loads((d / "truth.json").read_text())
    with tempfile.TemporaryDirectory() as td:
        db = os.path.join(td, "s.duckdb")
        t0 = time.perf_counter()
        ingest_incident(d, cat, db)
        t1 = time.perf_counter()
        con = open_readonly(db)
        out = diagnose(con)
        t2 = time.perf_counter()
        con.close()
    true_atts = truth["attempts"]
    failed = [a for a in true_atts if a["outcome"] == "failed"]
    per_attempt = "attempts" in out
    rows = []
    res = {"name": d.name, "story": truth["story"], "layout": truth["layout"], "heldout": truth.get("heldout", False),
           "per_attempt": per_attempt, "true_attempts": len(true_atts), "ingest_s": round(t1 - t0, 2),
           "diagnose_s": round(t2 - t1, 2)}
    if per_attempt:
        found = out["attempts"]
        m = match(true_atts, found, ref_shift(out, truth))
        res.update(found_attempts=len(found), matched=len(m))
        for a in failed:
            f = m.get(a["id"])
            v = (f or {}).get("verdict")
            rows.append(_row(a, v, f is not None))
        res["false_alarms"] = sum(1 for a in true_atts if a["outcome"] != "failed" and a["id"] in m
                                  and (m[a["id"]].get("verdict") or {}).get("kind", "none") not in ("none", "cancelled")
                                  and m[a["id"]].get("outcome") == "failed")
    else:
        res.update(found_attempts=None, matched=None, false_alarms=None)
        if failed:
            rows.append(_row(failed[-1], out["verdict"], True))
        else:
            res["false_alarms"] = int(out["verdict"]["kind"] != "none")
    res["failed"] = rows
    if verbose:
        for r in rows:
            mark = "ok " if r["located"] and r["kind_ok"] else "MISS"
            print(f"  {mark} {d.name:<40} #{r['attempt']} {r['story']:<12} truth {r['truth']}  got {r['got']}")
    return res


def _row(a: dict, v: dict | None, matched: bool) -> dict:
    t = a["verdict"]
    loc = culprit_ok(v, t)
    kind_ok = bool(v) and v.get("kind") == t["kind"]
    conf = (v or {}).get("confidence") or 0.0
    return {"attempt": a["id"], "story": t["story"], "matched": matched, "located": loc, "kind_ok": kind_ok,
            "confident_wrong": (not loc or not kind_ok) and conf >= CONFIDENT, "confidence": conf,
            "truth": f"{t['kind']}/r{t.get('rank')}/{t.get('host')}",
            "got": f"{(v or {}).get('kind')}/r{(v or {}).get('rank')}/{(v or {}).get('host')} "
                   f"conf {conf:.2f}" if v else "(no verdict)"}


def report(title: str, results: list[dict]) -> None:
    if not results:
        print(f"{title}: no incidents")
        return
    per = all(r["per_attempt"] for r in results)
    print(f"{title}: {len(results)} runs, {sum(r['true_attempts'] for r in results)} true attempts, "
          f"{sum(len(r['failed']) for r in results)} failed attempts scored")
    if not per:
        print("  NOTE: the diagnose JSON has no `attempts`: the top-level verdict is scored against the LAST "
              "failed attempt of each run only; earlier failed attempts are not scored")
    else:
        exact = sum(1 for r in results if r["found_attempts"] == r["true_attempts"])
        matched = sum(r["matched"] for r in results)
        print(f"  attempts: found count == true count in {exact}/{len(results)} runs; true attempts matched "
              f"by time overlap {matched}/{sum(r['true_attempts'] for r in results)}; "
              f"false alarms (a failure verdict on an attempt that did not fail) "
              f"{sum(r['false_alarms'] or 0 for r in results)}")
    rows = [x for r in results for x in r["failed"]]
    print(f"  {'story':<14}{'failed':>8}{'located':>9}{'kind':>7}{'both':>7}{'conf-wrong':>12}")
    for story in list(gen_longrun.STORIES) + ["all"]:
        rs = rows if story == "all" else [x for x in rows if x["story"] == story]
        if not rs:
            continue
        n = len(rs)
        print(f"  {story:<14}{n:>8}{sum(x['located'] for x in rs):>9}{sum(x['kind_ok'] for x in rs):>7}"
              f"{sum(x['located'] and x['kind_ok'] for x in rs):>7}{sum(x['confident_wrong'] for x in rs):>12}")
    print(reliability([(x["confidence"], x["located"] and x["kind_ok"]) for x in rows]))
    benign = [r for r in results if not r["failed"]]
    if benign and not per:
        print(f"  runs without any failure: {len(benign)}, given a failure verdict: "
              f"{sum(r['false_alarms'] or 0 for r in benign)}")
    print(f"  time: ingest {sum(r['ingest_s'] for r in results):.1f}s, diagnose "
          f"{sum(r['diagnose_s'] for r in results):.1f}s (max {max(r['diagnose_s'] for r in results):.1f}s)")


def run_longrun(a, cat, ingest_incident, score_all) -> int:
    """accuracy.py --longrun: returns 1 when any verdict is confidently wrong, as the other sets do."""
    sets: list[tuple[str, list[Path]]] = []
    tmp = None
    if a.longrun:
        root = Path(a.longrun)
        incs = [root] if (root / "truth.json").exists() else sorted(p for p in root.iterdir()
                                                                    if (p / "truth.json").exists())
        truths = {p: json.loads((p / "truth.json").read_text()) for p in incs}
        sets.append(("tuning", [p for p in incs if not truths[p].get("heldout")]))
        sets.append(("HELD OUT (measure only)", [p for p in incs if truths[p].get("heldout")]))
    else:
        tmp = tempfile.TemporaryDirectory(prefix="rt_longrun_")
        seeds = gen_longrun.parse_seeds(a.longrun_seeds)
        want = a.longrun_sets.split(",")
        for name, held in (("tuning", False), ("heldout", True)):
            if name not in want:
                continue
            fam = gen_longrun.family(held, [s + (gen_longrun.HELDOUT_SEED_MIN if held else 0) for s in seeds])
            dirs = []
            for story, layout, seed in fam:
                d = Path(tmp.name) / name / f"{story}__{layout}__{seed}"
                gen_longrun.generate(d, story, seed, layout, a.longrun_size, held)
                dirs.append(d)
            sets.append(("tuning" if not held else "HELD OUT (measure only)", dirs))
    results = {}
    bad = 0
    for title, incs in sets:
        if a.verbose:
            print(f"{title}:")
        rs = score_all(incs, lambda d: score(d, cat, ingest_incident, a.verbose))
        results[title] = rs
        report(f"long runs, {title}", rs)
        bad += sum(x["confident_wrong"] for r in rs for x in r["failed"])
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1, default=str))
    if tmp is not None:
        tmp.cleanup()
    return 1 if bad else 0
