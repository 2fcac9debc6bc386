"""Absence is evidence: ranks named by others, the rank missing from watchdog reports or
behind on SeqNum, desync (different OpType at one SeqNum), and ranks that say nothing
while their peers complain about a lost peer."""

from __future__ import annotations

from collections import Counter, defaultdict

from ..util import on
from .base import Finding, query


def named_ranks(con) -> list[Finding]:
    rs = query(con, "named_ranks")
    by: dict[tuple, list[dict]] = defaultdict(list)
    for r in rs:
        if r["rank"] is not None and r["rank"] == r["named_rank"] and r["how"] != "barrier":
            continue   # a rank naming itself is not a witness
        by[(r["named_rank"], r["how"])].append(r)
    out = []
    n_barrier = len({k[0] for k in by if k[1] == "barrier"})
    for (rank, how), lst in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        r = lst[0]
        if how == "barrier":
            score, kind = (0.5 if n_barrier == 1 else 0.35), "hang"
            why = (f"rank {r['rank'] if r['rank'] is not None else '?'} reports rank {rank} did not reach "
                   f"monitoredBarrier (a hang, or a rank that died just before)")
        elif how == "from_rank":
            score, kind = 0.45, "unknown"
            why = f"{len(lst)} line(s) say the failure came from rank {rank}"
        else:
            score, kind = 0.03, "unknown"
            why = f"'check rank {rank} logs for faulty rank' (generic advice of c10d; weak)"
        out.append(Finding(detector="named_ranks", kind=kind, score=score, why=why, rank=rank, time=r["ats"],
                           evidence=[x["event_id"] for x in lst[:3]], direct=how == "barrier",
                           extra={"how": how, "witnesses": len(lst)}))
    return out


def watchdog(con) -> list[Finding]:
    rs = [r for r in query(con, "watchdog") if r["seq"] is not None]
    if not rs:
        return []
    out: list[Finding] = []
    by_pg: dict = defaultdict(list)
    for r in rs:
        by_pg[r["pg"]].append(r)
    # the ranks seen in the attempt: a line whose time is its neighbour's counts (a rank that wrote only NCCL's
    # untimed lines, then hung, is the one the others' reports leave out)
    known_ranks = {r[0] for r in con.execute(
        "SELECT DISTINCT rank FROM aligned_groups WHERE rank IS NOT NULL AND first_ats IS NOT NULL").fetchall()}
    for pg, lst in sorted(by_pg.items(), key=lambda kv: str(kv[0])):
        # desync: different ops at one seq
        ops_at: dict[int, dict] = defaultdict(dict)
        for r in lst:
            if r["rank"] is not None and r["op"]:
                ops_at[r["seq"]].setdefault(r["rank"], (r["op"], r))
        for seq, per_rank in sorted(ops_at.items()):
            ops = Counter(op for op, _ in per_rank.values())
            if len(ops) > 1:
                majority, nmaj = ops.most_common(1)[0]
                tie = sum(1 for c in ops.values() if c == nmaj) > 1
                for rank, (op, r) in sorted(per_rank.items()):
                    if op != majority or tie:
                        out.append(Finding(
                            detector="watchdog", kind="desync", score=0.4 if tie else 0.7,
                            why=f"at SeqNum {seq} rank {rank} ran {op} while "
                                f"{', '.join(f'{n}x {o}' for o, n in ops.items() if o != op)} ran otherwise",
                            rank=rank, host=r["host"], time=r["ats"], evidence=[r["event_id"]], direct=True,
                            extra={"seq": seq, "pg": pg}))
        # the rank behind: lowest timed-out seq / last completed
        per_rank_seq = {}
        for r in lst:
            if r["rank"] is None:
                continue
            v = r["last_completed"] if r["last_completed"] is not None else r["seq"] - 1
            prev = per_rank_seq.get(r["rank"])
            if prev is None or v < prev[0]:
                per_rank_seq[r["rank"]] = (v, r)
        if len(per_rank_seq) >= 2:
            lo = min(v for v, _ in per_rank_seq.values())
            hi = max(v for v, _ in per_rank_seq.values())
            behind = [rk for rk, (v, _) in per_rank_seq.items() if v == lo]
            if lo < hi and len(behind) <= max(1, len(per_rank_seq) // 4):
                for rk in sorted(behind):
                    v, r = per_rank_seq[rk]
                    out.append(Finding(detector="watchdog", kind="hang", score=0.45,
                                       why=f"rank {rk} last completed collective {v} while others completed up to {hi}"
                                           + (f" (PG {pg})" if pg else ""),
                                       rank=rk, host=r["host"], time=r["ats"], evidence=[r["event_id"]],
                                       extra={"seq": v, "pg": pg}))
        # missing from the reports of one collective
        by_seq: dict[int, set] = defaultdict(set)
        for r in lst:
            if r["rank"] is not None:
                by_seq[r["seq"]].add(r["rank"])
        if by_seq and len(known_ranks) >= 3:
            seq, reporters = max(by_seq.items(), key=lambda kv: (len(kv[1]), -kv[0]))
            missing = sorted(known_ranks - reporters - {rk for rk in known_ranks if rk in per_rank_seq and per_rank_seq[rk][0] >= seq})
            if len(reporters) >= 2 and 0 < len(missing) <= max(1, len(known_ranks) // 4):
                ev = [r["event_id"] for r in lst if r["seq"] == seq][:3]
                for rk in missing:
                    out.append(Finding(detector="watchdog", kind="unknown", score=0.35,
                                       why=f"{len(reporters)} ranks report a timeout of collective {seq}; rank {rk} "
                                           f"does not (it is the one they waited for, or its log is missing)",
                                       rank=rk, evidence=ev,
                                       extra={"seq": seq, "pg": pg, "absent": True, "sole": len(missing) == 1}))
    return out


def silent_ranks(con) -> list[Finding]:
    """Ranks with no cause/symptom line of their own while most peers report a lost peer. A line
    written while the job still trained (a retried socket before the hang) is not a complaint about
    this failure."""
    from ..survival import trained_to_the_end, training_stop
    if trained_to_the_end(con) == "the logs end":
        return []   # every rank made progress until the logs end: none of them went silent
    rs = query(con, "rank_activity")
    if len(rs) < 2:
        return []
    stop, slack = training_stop(con)
    untimed: set[tuple] = set()

    # a rank that says another rank's collective timed out (torch's flight recorder: 'Received a dump signal
    # due to a collective timeout from rank N') saw the failure and blames a peer: a witness, not the silent one
    witnesses = {(w["host"], w["rank"]) for w in query(con, "named_ranks")
                 if w["how"] == "from_rank" and w["rank"] is not None and w["rank"] != w["named_rank"]}

    def complained(r) -> bool:   # a complaint once training had stopped (or no progress to tell)
        if (r["host"], r["rank"]) in witnesses:
            return True
        if r["n_symptom"] == 0 and r["n_cause"] == 0:
            return False
        if r["last_fail_ats"] is None:   # its complaints have no time of their own: the file's order tells
            return (r["host"], r["rank"]) not in untimed
        return stop is None or r["last_fail_ats"] >= stop - slack

    # the file's order is read only when it can matter: it turns complaining ranks silent, so too few
    # complaining ranks stay too few
    if stop is not None and sum(complained(r) for r in rs) >= len(rs) / 2:
        untimed = _survived_untimed_complaints(con, rs)
    complaining = [r for r in rs if complained(r)]
    silent = [r for r in rs if not complained(r)]
    if not complaining or not silent or len(complaining) < len(rs) / 2:
        return []
    out = []
    score = 0.4 if len(silent) == 1 else max(0.1, 0.4 / len(silent))
    max_step = max((r["last_step"] for r in rs if r["last_step"] is not None), default=None)
    for r in silent:
        behind = (max_step is not None and r["last_step"] is not None and r["last_step"] < max_step)
        out.append(Finding(detector="silent_ranks", kind="unknown", score=score + (0.1 if behind else 0.0),
                           why=f"rank {r['rank']}{on(r['host'])} wrote no error while {len(complaining)} peers reported "
                               f"failures; its last line is at step {r['last_step']}"
                               + (f" (others reached {max_step})" if behind else ""),
                           rank=r["rank"], host=r["host"], time=r["last_ats"],
                           evidence=[r["last_event_id"]] if r["last_event_id"] is not None else [],
                           extra={"last_step": r["last_step"], "last_ats": r["last_ats"], "silent_count": len(silent)}))
    return out


def _survived_untimed_complaints(con, rs: list[dict]) -> set[tuple]:
    """(host, rank) of the ranks whose complaints all lack a time of their own (NCCL's WARN lines on a
    console) and were each followed by survival.STEPS of the rank's own steps in the same file: written
    while the job still trained (a reset socket it retried, an IB port that came back), not about how
    it ended."""
    from ..survival import STEPS, steps_after
    keys = [(r["host"], r["rank"]) for r in rs if r["last_fail_ats"] is None and (r["n_symptom"] or r["n_cause"])]
    if not keys:
        return set()
    # a rank's last such line of each file: the steps after an earlier line of the file include those after it
    lines: dict[tuple, list[int]] = defaultdict(list)
    for host, rank, eid in con.execute(
            "SELECT host, rank, arg_max(last_event_id, last_line) FROM aligned_groups WHERE role IN ('cause', 'symptom') "
            "AND NOT ts_ok AND rank IS NOT NULL AND last_event_id IS NOT NULL GROUP BY host, rank, file_id").fetchall():
        lines[(host, rank)].append(eid)
    after = steps_after(con, sorted({e for k in keys for e in lines.get(k, [])}))
    return {k for k in keys if lines.get(k) and all(after.get(e, 0) >= STEPS for e in lines[k])}
