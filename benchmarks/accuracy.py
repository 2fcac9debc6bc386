"""Verdict accuracy over incidents with ground truth, beside a naive baseline.

    python benchmarks/accuracy.py                      # sample_logs/*/ + ../shared/real_log_shapes
    python benchmarks/accuracy.py /tmp/cap/all ...     # more incident directories (each subdir one
                                                        # incident with expected_verdict.json/truth.json)
    python benchmarks/accuracy.py --no-shapes -v       # per-incident lines
    (plus tests/correlate/heldout: held-out public bug-report shapes, unless --no-heldout)
    python benchmarks/accuracy.py --longrun [DIR] [--longrun-seeds 1-2] [--longrun-size small] [-v]
                                                        # long runs (gen_longrun.py), per attempt;
                                                        # only these sets run

An incident is a directory holding expected_verdict.json (or truth.json); every other file
in it (truth files and README.md excepted, so the answer never reaches the store) is
ingested into a fresh store, then `ranktrace.correlate.diagnose` runs on it.

Counts per set:
  located        the verdict names the culprit the truth names (rank when the truth gives a
                 rank, host when it gives a host; a job-level truth with neither is located
                 when the verdict names no wrong rank)
  kind           the verdict kind equals the truth kind
  confident-wrong  not located or wrong kind, with confidence >= 0.8 (must be 0)
Baseline: "trust the earliest torchrun Root Cause block, else the first srun task error,
else the first error line" (rank/host from that line; kind from its exit code).

real_log_shapes (one incident per file): scored only where the manifest names a
first_failure; located = every identity field it gives (rank, host, pod, pid, srun task)
that the verdict also gives agrees; kind is checked against a map of the manifest's kinds.

--longrun: long runs of benchmarks/gen_longrun.py (a family generated into a temporary directory:
every story x layout at the tuning seeds and, reported apart, the HELD-OUT part: seeds >= 1000, the
held-out layout and tellings; or the incidents of DIR, split by their truth's `heldout`), scored per
attempt (benchmarks/longrun_score.py): attempts found vs the truth's, each true attempt matched to a found
one by time overlap, and for every failed true attempt: culprit located, kind right, confident-wrong.
When the diagnose JSON has no `attempts`, the top-level verdict is scored against the last failed
attempt, and the output says so.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(HERE))

from ranktrace.correlate import diagnose  # noqa: E402
from ranktrace.correlate.clock import align  # noqa: E402
from ranktrace.correlate.detectors.base import query, signal_kind  # noqa: E402
from ranktrace.correlate.util import ensure_kind_catalog  # noqa: E402
from ranktrace.formats import load_catalog  # noqa: E402
from ranktrace.ingest.pipeline import ingest  # noqa: E402
from ranktrace.store import open_readonly  # noqa: E402
from reliability import reliability  # noqa: E402

TRUTH_FILES = {"truth.json", "expected_verdict.json", "README.md"}
# the shared excerpts sit beside the checkout (/work/main -> /work/shared); a worktree one level
# deeper (/work/wt/NAME) finds them two levels up; RANKTRACE_SHAPES overrides both
SHAPES = Path(os.environ.get("RANKTRACE_SHAPES") or next(
    (str(p / "shared" / "real_log_shapes") for p in (REPO.parent, REPO.parent.parent)
     if (p / "shared" / "real_log_shapes").is_dir()), REPO.parent / "shared" / "real_log_shapes"))

# manifest failure_kind -> acceptable verdict kinds
SHAPE_KINDS = {
    "nccl_error": {"network_error", "unknown", "crash", "exception", "cuda_error"},
    "nccl_timeout": {"hang", "network_error", "unknown", "desync"},
    "python_exception": {"exception"},
    "oom_gpu": {"gpu_oom"}, "oom_host": {"oom"}, "oom_k8s": {"oom"},
    "xid": {"gpu_fault"}, "sigkill": {"killed", "oom"},
    "time_limit": {"time_limit"}, "cancelled": {"cancelled"},
    "socket_timeout": {"rendezvous_timeout", "network_error", "unknown"},
    "connection_refused": {"rendezvous_timeout", "network_error", "unknown"},
    "image_pull": {"scheduling"}, "rendezvous_timeout": {"rendezvous_timeout"},
}


def incident_files(d: Path) -> list[str]:
    """The incident's files, as paths relative to its parent directory (ingest from there), as a user
    runs `ranktrace ingest incident/`: the checkout's own directory names (a worktree called `h13`)
    must not reach the path hints as host names."""
    return sorted(str(p.relative_to(d.parent)) for p in d.rglob("*") if p.is_file() and p.name not in TRUTH_FILES)


class _cwd:
    def __init__(self, d: Path):
        self.d, self.old = d, None

    def __enter__(self):
        self.old = os.getcwd()
        os.chdir(self.d)

    def __exit__(self, *a):
        os.chdir(self.old)


def load_truth(d: Path) -> dict | None:
    for name in ("expected_verdict.json", "truth.json"):
        p = d / name
        if p.exists():
            t = json.loads(p.read_text())
            return t.get("verdict", t)
    return None


def baseline(con) -> dict:
    """Trust the earliest Root Cause block / first srun task error / first error line."""
    ensure_kind_catalog(con)
    align(con)
    rc = [r for r in query(con, "worker_exits") if r["source"] == "root_cause"]
    rc.sort(key=lambda r: (r["ats"] is None, r["ats"] or 0))
    if rc:
        r = rc[0]
        return {"kind": signal_kind(r["signal"]) or "exception", "rank": r["rank"], "host": r["host"]}
    te = [r for r in query(con, "task_exits") if "Terminated" not in (r["state"] or "")]
    if te:
        r = te[0]
        first = r["ranges"].split(",")[0].split("-")[0]
        return {"kind": "oom" if "memory" in r["state"].lower() else "exception",
                "rank": int(first) if first.isdigit() else None, "host": r["node"]}
    row = con.execute("SELECT rank, host FROM aligned_events WHERE severity IN ('error', 'critical') "
                      "ORDER BY ats NULLS LAST, file, line LIMIT 1").fetchone()
    if row:
        return {"kind": "exception", "rank": row[0], "host": row[1]}
    return {"kind": "none", "rank": None, "host": None}


def located(v: dict, t: dict) -> bool:
    checks = []
    if t.get("rank") is not None:
        checks.append(v.get("rank") == t["rank"])
    if t.get("host") is not None:
        checks.append(v.get("host") == t["host"])
    if not checks:
        return v.get("rank") is None or t.get("kind") in ("none",) and v.get("kind") == "none"
    return all(checks)


def ingest_incident(d: Path, cat, db: str) -> None:
    """Ingest the incident's files (its truth files left out) into the store `db`, from its parent
    directory (as a user runs `ranktrace ingest incident/`)."""
    with _cwd(d.parent):
        ingest(incident_files(d), db, cat)


def score_all(incs: list[Path], score_one) -> list[dict]:
    """score_one(d) for every incident; one that raises is reported and skipped (an ingest problem must
    not hide the other incidents)."""
    rs = []
    for d in incs:
        try:
            r = score_one(d)
        except Exception as exc:
            print(f"  ERR  {d.name}: {type(exc).__name__}: {exc}"[:200])
            continue
        if r:
            rs.append(r)
    return rs


def score_incident(d: Path, cat, verbose: bool) -> dict | None:
    truth = load_truth(d)
    if truth is None:
        return None
    with tempfile.TemporaryDirectory() as td:
        db = os.path.join(td, "s.duckdb")
        ingest_incident(d, cat, db)
        con = open_readonly(db)
        t0 = time.perf_counter()
        out = diagnose(con)
        dt_s = time.perf_counter() - t0
        con.close()
        con = open_readonly(db)
        base = baseline(con)
        con.close()
    v = out["verdict"]
    res = {"name": d.name, "truth": truth, "verdict": v, "baseline": base, "seconds": dt_s,
           "located": located(v, truth), "kind": v["kind"] == truth["kind"],
           "b_located": located(base, truth), "b_kind": base["kind"] == truth["kind"]}
    res["confident_wrong"] = (not res["located"] or not res["kind"]) and v["confidence"] >= 0.8
    # clock: on skewed bundles, every estimated offset within its stated uncertainty of the truth
    want = {c["host"]: c["offset_s"] for c in (json.loads((d / "expected_verdict.json").read_text()).get("clock") or [])
            } if (d / "expected_verdict.json").exists() else {}
    if want:
        got = {c["host"]: c for c in out["clock"]}
        ref = next((h for h, c in got.items() if c["basis"] == "reference host"), None)
        shift = want.get(ref, 0.0)
        res["clock_ok"] = all(h not in got or got[h]["uncertainty_s"] is None
                              or abs(got[h]["offset_s"] - (o - shift)) <= got[h]["uncertainty_s"] + 1e-6
                              for h, o in want.items())
    if verbose:
        mark = "ok " if res["located"] and res["kind"] else "MISS"
        print(f"  {mark} {d.name:<32} truth {truth['kind']}/{truth.get('rank')}/{truth.get('host')}  "
              f"got {v['kind']}/{v['rank']}/{v['host']} conf {v['confidence']:.2f}  "
              f"baseline {base['kind']}/{base['rank']}/{base['host']}")
    return res


def shape_located(v: dict, ff: dict) -> bool | None:
    checks = []
    if ff.get("rank") is not None:
        checks.append(v.get("rank") == ff["rank"])
    if ff.get("srun_task") is not None:
        checks.append(v.get("rank") == ff["srun_task"])
    if ff.get("host"):
        h = ff["host"].replace("...", "")
        checks.append(bool(v.get("host")) and (v["host"] == ff["host"] or h in v["host"]))
    if ff.get("pod"):   # a pod may be the host of its own lines (pdsh/kubectl prefixes)
        got = [x for x in (v.get("pod"), v.get("host")) if x]
        checks.append(any(x == ff["pod"] or ff["pod"].endswith("/" + x) for x in got))
    if ff.get("pid") is not None and ff.get("rank") is None and not ff.get("host"):
        checks.append(v.get("pid") == ff["pid"])
    if not checks:
        return None
    return all(checks)


def score_shapes(cat, verbose: bool) -> list[dict]:
    man = json.loads((SHAPES / "manifest.json").read_text())
    out = []
    for e in man:
        x = e["expected"]
        ff = x.get("first_failure")
        if not ff:
            continue
        try:
            r = _score_shape(e, x, ff, cat, verbose)
        except Exception as exc:
            print(f"  ERR  {e['file']}: {type(exc).__name__}: {exc}"[:200])
            continue
        out.append(r)
    return out


def _score_shape(e, x, ff, cat, verbose) -> dict:
    with tempfile.TemporaryDirectory() as td:
        db = os.path.join(td, "s.duckdb")
        with _cwd(SHAPES):
            ingest([e["file"]], db, cat)
        con = open_readonly(db)
        d = diagnose(con)
        con.close()
        con = open_readonly(db)
        base = baseline(con)
        con.close()
    v = d["verdict"]
    loc = shape_located(v, ff)
    bloc = shape_located(base, ff)
    ok_kinds = SHAPE_KINDS.get(x.get("failure_kind"))
    kind_ok = None if ok_kinds is None else v["kind"] in ok_kinds
    r = {"name": e["file"], "located": loc, "kind": kind_ok, "b_located": bloc,
         "b_kind": None if ok_kinds is None else base["kind"] in ok_kinds, "verdict": v, "ff": ff,
         "confident_wrong": (loc is False or kind_ok is False) and v["confidence"] >= 0.8}
    if verbose:
        mark = "ok " if loc is not False and kind_ok is not False else "MISS"
        print(f"  {mark} {e['file'][:44]:<44} want {x.get('failure_kind')}/"
              f"{ {k: v2 for k, v2 in ff.items() if k != 'basis'} }  got {v['kind']}/r{v['rank']}/{v['host']}/"
              f"{v['pod']}/{v['pid']} conf {v['confidence']:.2f}")
    return r




HELDOUT = REPO / "tests" / "correlate" / "heldout"


def score_heldout(cat, verbose: bool) -> list[dict]:
    """tests/correlate/heldout: public bug-report shapes no format was built from (heldout.json: per file
    the acceptable kinds, the culprit fields when a careful reader can name one)."""
    return score_excerpts(HELDOUT, "heldout.json", cat, verbose)


def _gpu_key(g) -> str | None:
    """A GPU as its PCI bus id without domain and function (0000:3b:00.0 -> 3b:00), else as written."""
    if g is None:
        return None
    s = str(g).lower()
    if s.count(":") == 2:
        s = s.split(":", 1)[1]
    return s.split(".")[0]


CULPRIT_FIELDS = ("rank", "local_rank", "host", "pid", "pod", "gpu")


def _field_ok(c: dict, v: dict, k: str) -> bool:
    """Whether verdict v gives excerpt label c's culprit field k as loc() below compares it."""
    if k == "pod":
        return c["pod"] in (v.get("pod"), v.get("host"))
    if k == "gpu":
        return _gpu_key(v.get("gpu")) == _gpu_key(c["gpu"])
    return v.get(k) == c[k]


def miss_facts(con, c: dict, doc: dict) -> dict:
    """Coarse facts about one culprit miss, for --miss-summary: only categories (field names, statuses,
    catalogue format/envelope names), never a file name, value or text, so a held-out set's misses can
    be counted without being read. Per truth field: did the verdict give it right, leave it empty, or
    give another value; is the true value in some line's identity column (found, not chosen), only in
    the raw text (no token read it), or nowhere (implied); the format and envelopes of the first line
    that holds it, and of the verdict's first cause line."""
    v = doc["verdict"]
    fields = [k for k in CULPRIT_FIELDS if c.get(k) is not None]
    status = {}
    for k in fields:
        status[k] = "right" if _field_ok(c, v, k) else ("empty" if v.get(k) is None and not (
            k == "pod" and v.get("host")) else "other value")
    named = [k for k in CULPRIT_FIELDS if v.get(k) is not None]
    if not named:
        verdict = "named nobody"
    elif any(s == "other value" for s in status.values()):
        verdict = "a different value of a truth field"
    elif any(s == "right" for s in status.values()):
        verdict = "part of the truth fields, the rest empty"
    else:
        verdict = "another field only"

    def where(k):
        val = c[k]
        if k == "gpu":
            col_sql, txt = "lower(gpu) LIKE '%' || ? || '%'", _gpu_key(val)
            arg = txt
        elif k == "pod":
            col_sql, arg, txt = "(pod = ? OR host = ?)", None, str(val)
        else:
            col_sql, arg, txt = f"{k} = ?", val, str(val)
        args = [val, val] if k == "pod" else [arg]
        row = con.execute(f"SELECT format, envelopes FROM events WHERE {col_sql} ORDER BY file, line LIMIT 1",
                          args).fetchone()
        if row:
            return "in an identity column", row
        if k in ("rank", "local_rank"):    # a bare digit is in every line: no text test for these
            return "in no identity column", None
        row = con.execute("SELECT format, envelopes FROM events WHERE contains(lower(raw), lower(?)) "
                          "ORDER BY file, line LIMIT 1", [txt]).fetchone()
        if row:
            return "in raw text only", row
        return "not in the text", None

    per_field = {}
    for k in fields:
        if status[k] == "right":
            continue
        w, row = where(k)
        per_field[k] = {"status": status[k], "where": w,
                        "line": f"{row[0]}|{row[1] or '-'}" if row else None,
                        "context": _value_context(con, k, c[k]) if w != "in an identity column" else None}
    cause = next((e for e in doc.get("evidence") or [] if e.get("role") == "cause"), None)
    ev = None
    if cause:
        row = con.execute("SELECT format, envelopes FROM events WHERE file = ? AND line = ? LIMIT 1",
                          [cause["file"], cause["line"]]).fetchone()
        ev = f"{row[0]}|{row[1] or '-'}" if row else "no such line"
    return {"fields": "+".join(fields), "verdict": verdict, "per_field": per_field,
            "evidence": ev or "no cause line", "verdict_kind": v["kind"]}


# How the text around a missed value reads, in categories fixed before any held-out miss was looked at
# (the forms emitters use for a machine, a process and a rank): a category name is all --miss-summary
# prints of it. First match wins; {v} is the value, escaped.
_CONTEXTS = {
    "host": [
        ("user@host shell prompt", r"\w@{v}(?:[:\s\]]|$)"),
        ("host:pid:tid (NCCL-like)", r"(?:^|[\s\]])\(?{v}:\d+:\d+"),
        ("'host: ' at line start", r"^\s*{v}:\s"),
        ("[host...] or (host...) bracket", r"[\[(]{v}[\]):\s,]"),
        ("host/node/machine word before", r"(?i)(?:host|hostname|node|nodename|nodelist|machine|server|instance|exec_host|exec host)\W{{0,4}}{v}"),
        ("ip/addr word before", r"(?i)(?:ip|addr|address|inet)\W{{0,4}}{v}"),
        ("on/at/from/to/by host", r"(?i)\b(?:on|at|from|to|by|in)\s+{v}"),
        ("in a path or URL", r"(?:/{v}|{v}/|://{v})"),
        ("table row column", r"^\S+(?:\s{{2,}}\S+){{2,}}"),
    ],
    "pid": [
        ("pid word before", r"(?i)\bpid\W{{0,4}}{v}\b"),
        ("process word before", r"(?i)process(?:es)?\W{{0,4}}{v}\b"),
        ("host:pid:tid (NCCL-like)", r"[\w.-]+:{v}:\d+"),
        ("(pid) in parentheses", r"\({v}\)"),
        ("[pid] in brackets", r"\[{v}\]"),
    ],
    "rank": [
        ("rank word", r"(?i)\brank\W{{0,4}}{v}\b"),
        ("process/task/worker word", r"(?i)\b(?:process|task|worker|proc|replica)\W{{0,4}}{v}\b"),
        ("[N] or (N) tag at line start", r"^\s*[\[(]{v}[\]),]"),
        ("gpu/device/cuda word", r"(?i)\b(?:gpu|device|cuda)\W{{0,4}}{v}\b"),
    ],
}
_CONTEXTS["local_rank"] = _CONTEXTS["rank"]
_CONTEXTS["pod"] = _CONTEXTS["host"]


def _value_context(con, k: str, val) -> str:
    """The category (_CONTEXTS) of the first raw line that holds value `val` of column `k`: how the text
    words it. 'no form known' when a line holds it in none of those forms; 'not in the text' when none does."""
    import re
    forms = _CONTEXTS.get(k)
    if not forms:
        return "no categories for this field"
    rxs = [(name, re.compile(f.format(v=re.escape(str(val))))) for name, f in forms]
    hit = False
    for (raw,) in con.execute("SELECT raw FROM events ORDER BY file, line").fetchall():
        for line in (raw or "").split("\n"):
            if str(val).lower() not in line.lower() and k not in ("rank", "local_rank"):
                continue
            for name, rx in rxs:
                if rx.search(line):
                    return name
            hit = hit or str(val).lower() in line.lower()
    return "no form known" if hit else "not in the text"


def score_excerpts(d: Path, manifest: str, cat, verbose: bool, miss_summary: bool = False) -> list[dict]:
    """Excerpts of directory `d` listed in `d/manifest` (file, decidable, kinds, and the culprit fields
    rank / local_rank / host / pid / pod / gpu a careful reader can name), each ingested alone.
    miss_summary: each culprit miss also gets `miss` (miss_facts), read while its store is open."""
    out = []
    for c in json.loads((d / manifest).read_text()):
        with tempfile.TemporaryDirectory() as td:
            db = os.path.join(td, "s.duckdb")
            with _cwd(d):
                ingest([c["file"]], db, cat)
            con = open_readonly(db)
            doc = diagnose(con)
            v = doc["verdict"]
            fields = [k for k in CULPRIT_FIELDS if c.get(k) is not None]
            miss = (miss_facts(con, c, doc) if miss_summary and c["decidable"] and fields
                    and not all(_field_ok(c, v, k) for k in fields) else None)
            con.close()
            con = open_readonly(db)
            base = baseline(con)
            con.close()
        def loc(x):
            if not c["decidable"]:
                return None
            checks = [x.get(k) == c[k] for k in ("rank", "local_rank", "host", "pid") if c.get(k) is not None]
            if c.get("pod"):
                checks.append(c["pod"] in (x.get("pod"), x.get("host")))
            if c.get("gpu"):
                checks.append(_gpu_key(x.get("gpu")) == _gpu_key(c["gpu"]))
            return all(checks) if checks else x.get("rank") is None
        r = {"name": c["file"], "verdict": v, "located": loc(v), "kind": v["kind"] in c["kinds"],
             "b_located": loc(base), "b_kind": base["kind"] in c["kinds"]}
        r["confident_wrong"] = v["confidence"] >= 0.8 and (r["located"] is False or not r["kind"])
        if miss is not None:
            r["miss"] = miss
        if verbose:
            mark = "ok " if r["located"] is not False and r["kind"] else "MISS"
            want = {k: c[k] for k in ("rank", "local_rank", "host", "pid", "pod", "gpu") if c.get(k) is not None}
            print(f"  {mark} {c['file'][:44]:<44} want {c['kinds']}/{want}  "
                  f"got {v['kind']}/r{v['rank']}/{v['host']}/{v['pod']}/{v['pid']}/{v.get('gpu')} conf {v['confidence']:.2f}")
        out.append(r)
    return out


def report(title: str, rs: list[dict]) -> None:
    n = len(rs)
    if not n:
        print(f"{title}: no incidents")
        return

    def cnt(k):
        return sum(1 for r in rs if r[k] is True), sum(1 for r in rs if r[k] is not None)

    loc, nl = cnt("located")
    kind, nk = cnt("kind")
    bl, nbl = cnt("b_located")
    bk, nbk = cnt("b_kind")
    cw = sum(1 for r in rs if r["confident_wrong"])
    clk = [r["clock_ok"] for r in rs if "clock_ok" in r]
    print(f"{title}: {n} incidents" + (f"; skewed clocks estimated within uncertainty: {sum(clk)}/{len(clk)}"
                                        if clk else ""))
    print(f"  {'':<14}{'located':>10}{'kind':>10}{'confident-wrong':>17}")
    print(f"  {'ranktrace':<14}{f'{loc}/{nl}':>10}{f'{kind}/{nk}':>10}{cw:>17}")
    print(f"  {'baseline':<14}{f'{bl}/{nbl}':>10}{f'{bk}/{nbk}':>10}{'-':>17}")
    print(reliability([(r["verdict"]["confidence"], r["located"] is not False and r["kind"] is not False)
                       for r in rs]))


def miss_summary(title: str, rs: list[dict]) -> None:
    """Counts of the culprit misses by category (miss_facts): no file name, value or text is printed, so
    this may be run on a held-out set. A miss counts once per category table; per_field tables count
    one row per truth field the verdict missed."""
    from collections import Counter
    ms = [(r["miss"], r["kind"]) for r in rs if r.get("miss")]
    job = sum(1 for r in rs if r["located"] is False and not r.get("miss"))
    print(f"{title}: culprit misses by category ({len(ms)} misses of "
          f"{sum(1 for r in rs if r['located'] is not None)} decidable"
          + (f"; and {job} with no culprit field in the truth where the verdict named a rank" if job else "") + ")")

    def table(name, keys):
        print(f"  {name}:")
        for k, n in sorted(Counter(keys).items(), key=lambda x: (-x[1], str(x[0]))):
            print(f"    {n:>3}  {k}")

    table("truth fields", [m["fields"] for m, _ in ms])
    table("what the verdict gave", [m["verdict"] for m, _ in ms])
    table("kind", ["right" if k else "wrong" for _, k in ms])
    table("verdict kind when it named nobody", [m["verdict_kind"] for m, _ in ms if m["verdict"] == "named nobody"])
    table("missed field: status", [f"{f}: {x['status']}" for m, _ in ms for f, x in m["per_field"].items()])
    table("missed field: where its value is", [f"{f}: {x['where']}" for m, _ in ms for f, x in m["per_field"].items()])
    table("missed value not in an identity column: how the text words it",
          [f"{f}: {x['context']}" for m, _ in ms for f, x in m["per_field"].items() if x.get("context")])
    table("missed value's first line (format|envelopes)",
          [x["line"] for m, _ in ms for x in m["per_field"].values() if x["line"]])
    table("verdict's first cause line (format|envelopes)", [m["evidence"] for m, _ in ms])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="*", help="directories of incidents (or one incident directory)")
    ap.add_argument("--no-shapes", action="store_true", help="skip ../shared/real_log_shapes")
    ap.add_argument("--no-samples", action="store_true", help="skip sample_logs/")
    ap.add_argument("--no-heldout", action="store_true", help="skip tests/correlate/heldout")
    ap.add_argument("--excerpts", metavar="DIR", action="append", default=[],
                    help="also score the excerpts of DIR listed in DIR/excerpts.json (file, decidable, kinds, "
                         "culprit fields), e.g. tests/correlate/identity_excerpts/dev")
    ap.add_argument("--miss-summary", action="store_true",
                    help="for --excerpts sets: counts of the culprit misses by category (the truth's fields, "
                         "what the verdict gave, where the value is, the formats of its line and of the "
                         "verdict's cause line); prints no file name or text, so it may run on held-out sets")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--json", metavar="FILE", help="write per-incident results")
    ap.add_argument("--longrun", nargs="?", const="", default=None, metavar="DIR",
                    help="score long runs per attempt (gen_longrun.py); only these sets run")
    ap.add_argument("--longrun-seeds", default="1", help="tuning seeds of the generated family ('1-3'); the "
                                                         "held-out family uses the same seeds + 1000")
    ap.add_argument("--longrun-size", default="small", choices=("small", "medium", "large"))
    ap.add_argument("--longrun-sets", default="tuning,heldout", help="generated sets to score: tuning,heldout")
    a = ap.parse_args(argv)
    cat = load_catalog(check_samples=False)
    if a.longrun is not None:
        from longrun_score import run_longrun
        return run_longrun(a, cat, ingest_incident, score_all)
    sets: list[tuple[str, list[Path]]] = []
    if not a.no_samples:
        sets.append(("sample_logs", sorted(p for p in (REPO / "sample_logs").iterdir() if p.is_dir())))
    for d in a.dirs:
        p = Path(d)
        inc = [p] if load_truth(p) else sorted(q for q in p.iterdir() if q.is_dir())
        sets.append((str(p), inc))
    results = {}
    for title, incs in sets:
        if a.verbose:
            print(f"{title}:")
        rs = score_all(incs, lambda d: score_incident(d, cat, a.verbose))
        results[title] = rs
        report(title, rs)
    if not a.no_shapes and SHAPES.exists():
        if a.verbose:
            print("real_log_shapes:")
        rs = score_shapes(cat, a.verbose)
        results["real_log_shapes"] = rs
        report("real_log_shapes (where the manifest names a first failure)", rs)
    if not a.no_heldout and HELDOUT.exists():
        if a.verbose:
            print("heldout:")
        rs = score_heldout(cat, a.verbose)
        results["heldout"] = rs
        report("heldout (tests/correlate/heldout: public bug-report shapes; located where decidable)", rs)
    for d in a.excerpts:
        if a.verbose:
            print(f"{d}:")
        rs = score_excerpts(Path(d), "excerpts.json", cat, a.verbose, a.miss_summary)
        results[d] = rs
        report(f"{d} (located where decidable)", rs)
        if a.miss_summary:
            miss_summary(d, rs)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1, default=str))
    bad = sum(r["confident_wrong"] for rs in results.values() for r in rs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
