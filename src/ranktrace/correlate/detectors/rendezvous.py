"""Rendezvous timeout: the expected node set (Slurm node list, nnodes / min_nodes) against
the hosts that showed up. Names the missing node when the set is known, else counts."""

from __future__ import annotations

import re

from ..hostlist import expand_hostlist
from ..util import has_columns, table_exists
from .base import Finding, query


def job_started(con):
    """Aligned time of the first sign that the job assembled (progress line or worker start
    after a completed rendezvous), else None."""
    # groups of lines (queries/align/event_groups.sql): start_ats is the first line of no kind that
    # says `step N` / `iter N`
    r = con.execute("""
        SELECT min(CASE WHEN kind IN ('progress', 'rdzv_complete', 'comm_init') THEN first_ats
                        WHEN kind IS NULL AND rank IS NOT NULL THEN start_ats END)
        FROM aligned_groups WHERE first_ats IS NOT NULL
    """).fetchone()
    return r[0] if r else None


def guess_missing(hosts: list[str], need: int) -> str | None:
    """With one node missing from a regular name sequence (ml-e01..ml-e03 of 4), name the gap:
    a leading gap from 1 (or 0), an interior gap, else the next number. None when the names
    do not form one sequence or more than one node is missing."""
    if need - len(hosts) != 1 or len(hosts) < 2:
        return None
    ms = [re.fullmatch(r"(.*?)(\d+)", h) for h in hosts]
    if not all(ms) or len({m.group(1) for m in ms}) != 1:
        return None
    prefix = ms[0].group(1)
    widths = {len(m.group(2)) for m in ms}
    width = widths.pop() if len(widths) == 1 and any(m.group(2).startswith("0") for m in ms) else 0
    nums = sorted(int(m.group(2)) for m in ms)
    start = 0 if 0 in nums else 1
    gaps = [n for n in range(start, nums[-1] + 2) if n not in nums]
    return f"{prefix}{gaps[0]:0{width}d}" if gaps else None


def previous_attempt_hosts(con) -> set[str]:
    """The hosts that ran ranks in the attempt before the one in scope (ranktrace.correlate.attempts):
    after a restart, the nodes a re-rendezvous waits for (empty for a run's first attempt)."""
    if not table_exists(con, "aligned_groups_all"):
        return set()
    cur = con.execute("SELECT min(attempt) FROM aligned_groups WHERE attempt > 0").fetchone()[0]
    if cur is None or cur <= 1:
        return set()
    return {h for (h,) in con.execute("SELECT DISTINCT host FROM aligned_groups_all WHERE attempt = ? "
                                      "AND host IS NOT NULL AND rank IS NOT NULL", [cur - 1]).fetchall()}


def rendezvous(con) -> list[Finding]:
    # whether a launcher said the rendezvous failed, asked first: the statements of the job's shape are
    # read only then (a scheduler's log may repeat its NodeList= line 86,600 times in an attempt)
    if not query(con, "rendezvous", around="SELECT 1 FROM {} WHERE what IN ('rdzv_timeout', 'store_fail', 'unreached') LIMIT 1"):
        return []
    rs = query(con, "rendezvous")
    fails = [r for r in rs if r["what"] in ("rdzv_timeout", "store_fail", "unreached")]
    if not fails:
        return []
    if job_started(con) is not None:
        # the job assembled: its rendezvous completed. An error before that was a retry it got past
        # (workers reaching for the store before it listens), an error after it is teardown
        return []
    unreached = sorted({r["value"] for r in fails if r["what"] == "unreached" and r["value"]})
    if unreached:
        # the launcher said which node it could not reach (ssh could not resolve its name): that node never joined
        ev = [r["event_id"] for r in fails if r["what"] == "unreached"][:3]
        return [Finding(detector="rendezvous", kind="rendezvous_timeout", score=0.85 if len(unreached) == 1 else 0.6,
                        why=f"the launcher could not reach {', '.join(unreached)} (ssh could not resolve the name): "
                            f"the job never assembled", host=m, time=fails[0]["ats"], evidence=ev, direct=True,
                        extra={"missing": unreached}) for m in unreached]
    expected: set[str] = set()
    for r in rs:
        if r["what"] == "nodelist" and r["value"]:
            try:
                expected.update(expand_hostlist(r["value"]))
            except ValueError:
                pass
    if has_columns(con, "slurm_alloc", "nodelist"):
        for (nl,) in con.execute("SELECT DISTINCT nodelist FROM slurm_alloc WHERE nodelist IS NOT NULL").fetchall():
            try:
                expected.update(expand_hostlist(nl))
            except ValueError:
                pass
    counts = [int(r["value"]) for r in rs if r["what"] in ("min_nodes", "nnodes") and (r["value"] or "").isdigit()]
    if has_columns(con, "elastic_launch", "min_nodes"):
        counts += [int(n) for (n,) in con.execute("SELECT DISTINCT TRY_CAST(min_nodes AS BIGINT) FROM elastic_launch "
                                                  "WHERE TRY_CAST(min_nodes AS BIGINT) IS NOT NULL").fetchall()]
    need = max(counts) if counts else None
    present = {h for (h,) in con.execute(
        "SELECT DISTINCT host FROM aligned_groups WHERE host IS NOT NULL").fetchall()}
    spoke = [r for r in rs if r["what"] in ("joined", "rdzv_timeout", "rdzv_complete", "store_fail")]
    joined = {r["host"] for r in spoke if r["host"]}
    seen = joined or present
    # who took part, for the count: a pod whose node is unknown counts as itself
    # (three placed pods' logs were "1 of 4 expected nodes" with one node's kubelet journal)
    took_part = {r["host"] or f"pod {r['pod']}" for r in spoke if r["host"] or r["pod"]} or seen
    ev = [fails[0]["event_id"]] + [r["event_id"] for r in rs if r["what"] in ("nodelist", "min_nodes", "nnodes")][:2]
    store = any(r["what"] == "store_fail" for r in fails) and not any(r["what"] == "rdzv_timeout" for r in fails)
    if expected:
        missing = sorted(expected - seen)
        if missing:
            return [Finding(detector="rendezvous", kind="rendezvous_timeout", score=0.85 if len(missing) == 1 else 0.6,
                            why=f"rendezvous failed; the node list expects {len(expected)} nodes but "
                                f"{', '.join(missing)} never showed up", host=m, time=fails[0]["ats"], evidence=ev,
                            direct=True, extra={"missing": missing, "expected": sorted(expected)}) for m in missing]
    before = previous_attempt_hosts(con)
    gone = sorted(before - seen) if before and joined else []
    if gone and (need is None or len(gone) <= max(1, need - len(took_part))):
        return [Finding(detector="rendezvous", kind="rendezvous_timeout", score=0.8 if len(gone) == 1 else 0.55,
                        why=f"rendezvous failed; {', '.join(gone)} ran the job's ranks in the attempt before and "
                            f"never showed up in this one ({len(seen)} node(s) did)", host=m, time=fails[0]["ats"],
                        evidence=ev, direct=True, extra={"missing": gone, "expected": sorted(before)}) for m in gone]
    guess = guess_missing(sorted(seen), need) if need is not None else None
    if guess:
        return [Finding(detector="rendezvous", kind="rendezvous_timeout", score=0.6,
                        why=f"rendezvous failed; {len(seen)} of {need} expected nodes showed up "
                            f"({', '.join(sorted(seen))}); the missing one is probably {guess} (inferred from the "
                            f"host name sequence, not stated in the logs)",
                        host=guess, time=fails[0]["ats"], evidence=ev, direct=True,
                        extra={"missing": [guess], "inferred": True, "job_level": True})]
    why = "rendezvous failed"
    if store:
        why = "the rendezvous store could not be reached (its host never started or is unreachable)"
    if need is not None:
        why += f"; {len(took_part)} of {need} expected nodes showed up ({need - len(took_part)} missing, names unknown)"
    else:
        why += "; the expected node set is unknown (no node list / nnodes in the logs)"
    return [Finding(detector="rendezvous", kind="rendezvous_timeout", score=0.7, why=why, time=fails[0]["ats"],
                    evidence=ev, direct=True,
                    extra={"missing_count": (need - len(took_part)) if need else None, "job_level": True})]
