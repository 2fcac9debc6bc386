"""One way to choose the culprit of an attempt (issue 27, deliverable 4).

Every candidate (a rank, a host, a pod or the job, with the findings the detectors made about it) is
described by the same named features; one weighted sum of them, in queries/data/choice_weights.toml,
fitted on labelled runs by benchmarks/fit_choice.py, is its score; the candidates' scores of one
attempt are turned into probabilities (a softmax: at most one of them is the culprit), and the verdict
takes the most probable. (One more option is "none of them", score 0: a lone candidate with weak
evidence is not certain for being alone.) That probability is the verdict's confidence before the caps of what the
input lacks (verdict.py). Nothing else orders candidates.

The features are pure functions of the candidates and the clock (no SQL here), each in [0, 1]:
  evidence   the detectors' own strength, combined over the candidate's findings (noisy-or)
  direct     its own line says what broke (a traceback, an Xid, an OOM kill, a signal)
  first      among the direct candidates, the first to fail, within the clock's uncertainty
  lag        how late its first failure came after the attempt's first one (log scale, 1 = hours)
  specific   how specific its kind is (a GPU fault explains a crash, not the reverse)
  absent     a rank or node that went silent or lagged in sequence (silence, half-dead, named)
  survived   the share of its findings the attempt trained on past (context, not a cause)
  support    only weak or second-hand findings (a launcher's summary, the first to complain), and no
             absence (a rank the others waited for is not second-hand)
  nobody     it names no rank, host or pod (a job-level line)
  explains   the share of the attempt's complaining ranks that complained after it failed
  victim     it complained itself (a collective timeout, a closed peer) before it failed: it waited on
             someone else, and its death (a watchdog's abort) is the cascade's; not when it died of its
             own memory or instruction fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE: no cascade dies of those),
             when its node's own kernel reported a CPU stuck (a soft lockup: no waiting peer's is), or of
             its own exception (a traceback whose text is not about a lost peer: first_cause
             keeps one that is as weak evidence), nor when it is the one rank missing from a collective
             every other rank timed out on (it never reached it: what it complained of before, it did
             not wait on)
  accused    others name it: peers' IB completion errors name its address, ranks' hang reports name
             it, the scheduler names its node
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .detectors.base import OWN_NODE_KINDS, SELF_FAULT_SIGNALS, SELF_FAULT_STATES, SPECIFICITY
from .util import data_dir

FEATURES = ("evidence", "direct", "first", "lag", "specific", "absent", "survived", "support", "nobody",
            "explains", "victim", "accused")
# what each feature may say, fixed by what it means (a fit may weigh it, never turn it around): an
# earlier failure, stronger or more specific evidence argue for a candidate; lateness, survival,
# second-hand evidence, naming nobody, having waited on someone else argue against it
SIGNS = {"evidence": 1, "direct": 1, "first": 1, "lag": -1, "specific": 1, "absent": 1, "survived": -1,
         "support": -1, "nobody": -1, "explains": 1, "victim": -1, "accused": 1}
ABSENCE = {"silent_ranks", "half_dead_nodes", "named_ranks"}
# others name it (not its own line, not its launcher's account of it)
ACCUSED = {"ib_peers", "named_ranks", "node_events"}
# a launcher's or framework's account of someone else's death, or the first rank to complain
SECOND_HAND = {"worker_exits", "task_exits", "first_symptom", "watchdog", "step_cancels"}
# a scheduler's or launcher's report that a process exited (with a code or a signal): it did not freeze
EXIT_REPORTS = {"worker_exits", "task_exits"}
MIN_ORDER_S = 1.0     # two first failures closer than this are simultaneous whatever the clock says
LAG_SCALE_S = 3600.0  # lag 1.0: an hour after the attempt's first failure
# a complaint this close after a death known only from a launcher's report of it still came before
# it: the report is written on another host's clock (srun's "task 5 ... Killed by signal 6" seconds after the
# rank's own watchdog timeout)
VICTIM_SLACK = dt.timedelta(seconds=10)


@dataclass
class Scored:
    candidate: object
    features: dict[str, float]
    score: float = 0.0          # the weighted sum
    probability: float = 0.0    # softmax over the attempt's candidates


@lru_cache(maxsize=4)
def load_weights(path: str | None = None) -> dict[str, float]:
    """The fitted weights: a `bias`, a `temperature` and one per feature (a missing feature weighs 0)."""
    p = Path(path) if path else data_dir("queries") / "data" / "choice_weights.toml"
    w = tomllib.loads(p.read_text())["weights"]
    unknown = set(w) - set(FEATURES) - {"bias", "temperature"}
    if unknown:
        raise ValueError(f"{p}: unknown feature(s) {sorted(unknown)}; known: {', '.join(FEATURES)}")
    return {k: float(v) for k, v in w.items()}


# calibration is kept per class of kind: a hardware or scheduler record (an Xid, an OOM kill, a dead
# node) is wrong far less often than a culprit told from a crash, a hang or a network error
HARD_KINDS = frozenset({"gpu_fault", "oom", "gpu_oom", "node_failure", "time_limit", "cancelled", "scheduling"})


def kind_class(kind: str | None) -> str:
    return "hard" if kind in HARD_KINDS else "other"


@lru_cache(maxsize=8)
def load_calibration(path: str | None = None, cls: str = "other") -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(edges, values) of one class of kind: the share of verdicts that were right per probability bin
    [edges[i], edges[i+1]), made monotone, as fitted; empty when the file has none (the probability is
    then the confidence)."""
    p = Path(path) if path else data_dir("queries") / "data" / "choice_weights.toml"
    c = (tomllib.loads(p.read_text()).get("calibration") or {}).get(cls) or {}
    edges, values = tuple(c.get("edges") or ()), tuple(c.get("values") or ())
    if edges and len(edges) != len(values) + 1:
        raise ValueError(f"{p}: [calibration.{cls}] needs one more edge than values "
                         f"({len(edges)} edges, {len(values)} values)")
    return edges, values


def calibrated(probability: float, kind: str | None = None, path: str | None = None) -> float:
    """The confidence a verdict of this probability and kind earns: how often such verdicts were right
    on the labelled runs (benchmarks/fit_choice.py: the share right per bin, made monotone)."""
    edges, values = load_calibration(path, kind_class(kind))
    if not edges:
        return probability
    i = bisect.bisect_right(edges, probability) - 1
    return values[min(max(i, 0), len(values) - 1)]


def features(cands: list, node_failed: set[str], unc: dict[str | None, float],
             symptom_times: list[tuple[tuple, dt.datetime]]) -> list[dict[str, float]]:
    """The named features of each candidate of one attempt (same order as `cands`).
    `unc`: each host's clock uncertainty (s); `symptom_times`: each complaining lane's
    ((host, rank), first symptom time) on the aligned clock."""
    # the attempt's first failure: not a warning it trained on past (survival.py)
    live = [c for c in cands if not all(x.extra.get("survived") for x in c.findings)] or cands
    direct_times = [c.order_time for c in live if c.direct and c.order_time is not None]
    any_times = [c.order_time for c in live if c.order_time is not None]
    t_first = min(direct_times) if direct_times else None
    first_hosts = {c.field("host") for c in live if c.direct and c.order_time == t_first}
    t_any = min(any_times) if any_times else None
    n_sym = len(symptom_times)
    # hosts whose IB completion errors name a lost peer (network.ib_peers): a rank of theirs that
    # complained and fell silent waited on that link, it did not hang of its own
    lost_peer = {h for c in live for x in c.findings if x.detector == "ib_peers" and not x.extra.get("survived")
                 for h in x.extra.get("reporters", ())}
    out = []
    for c in cands:
        fs = c.findings
        t = c.order_time
        host = c.field("host")
        kind = c.kind(node_failed)
        f = dict.fromkeys(FEATURES, 0.0)
        f["evidence"] = c.score
        f["direct"] = 1.0 if c.direct else 0.0
        if c.direct and t is not None and t_first is not None:
            slack = max([MIN_ORDER_S, unc.get(host) or 0.0] + [unc.get(h) or 0.0 for h in first_hosts])
            f["first"] = 1.0 if (t - t_first).total_seconds() <= slack else 0.0
        if t is None or t_any is None:
            f["lag"] = 1.0
        else:
            f["lag"] = min(1.0, math.log1p(max(0.0, (t - t_any).total_seconds())) / math.log1p(LAG_SCALE_S))
        f["specific"] = 1.0 - SPECIFICITY.get(kind, len(SPECIFICITY)) / len(SPECIFICITY)
        f["absent"] = 1.0 if any(x.detector in ABSENCE or x.extra.get("absent") for x in fs) else 0.0
        f["accused"] = 1.0 if any(x.detector in ACCUSED and not x.extra.get("survived") for x in fs) else 0.0
        f["survived"] = sum(1 for x in fs if x.extra.get("survived")) / len(fs) if fs else 0.0
        f["support"] = 1.0 if not c.direct and f["absent"] == 0.0 and all(x.detector in SECOND_HAND for x in fs) \
            else 0.0
        f["nobody"] = 1.0 if all(c.field(k) is None for k in ("rank", "host", "pod")) else 0.0
        me = (host, c.field("rank"))
        mine = [ts for (h, r), ts in symptom_times if (me[1] is not None and r == me[1] and h in (host, None))
                or (me[1] is None and host is not None and h == host)]
        # when it failed: by its own first failure line (one without a time of its own was written at or
        # after the time it shows: a complaint before that came first, one at it is of unknown order);
        # else by someone's report of its death, give or take the reporter's clock
        own = any(x.time == c.time and x.detector not in SECOND_HAND and not x.extra.get("reported") for x in fs)
        t_fail, slack = (c.time, dt.timedelta(0)) if own else (t, VICTIM_SLACK)
        # a host that went quiet with no teardown (detectors.nodes.half_dead_nodes judged its complaints
        # already) and whose processes no one saw exit: a victim's launcher would have torn it down
        frozen = any(x.detector == "half_dead_nodes" for x in fs) and not any(
            x.detector in EXIT_REPORTS or x.extra.get("reported") or x.extra.get("event_kind") == "process_exit"
            for x in fs)
        own_fault = frozen or any(x.extra.get("signal") in SELF_FAULT_SIGNALS
                                  or x.extra.get("state") in SELF_FAULT_STATES
                                  or (x.detector == "watchdog" and x.extra.get("sole"))
                                  or (x.detector == "first_cause" and x.direct and x.kind == "exception")
                                  or x.extra.get("event_kind") in OWN_NODE_KINDS
                                  for x in fs if not x.extra.get("survived"))
        if mine and t_fail is not None and min(mine) < t_fail + slack and not own_fault:
            f["victim"] = 1.0
        if mine and f["absent"] and not c.direct and host in lost_peer:
            f["victim"] = 1.0
        if n_sym and t is not None:
            after = sum(1 for lane, ts in symptom_times if lane != me and ts >= t - dt.timedelta(seconds=MIN_ORDER_S))
            f["explains"] = after / n_sym
        out.append(f)
    return out


def weighted(f: dict[str, float], weights: dict[str, float]) -> float:
    """A candidate's score: the bias plus its features, each times its weight."""
    return weights.get("bias", 0.0) + sum(weights.get(k, 0.0) * f.get(k, 0.0) for k in FEATURES)


def probabilities(scores: list[float], temperature: float = 1.0) -> list[float]:
    """The softmax of the candidates' scores with one more option, score 0: the culprit is none of
    them (its lines are not in the input, or no detector saw it); `bias` weighs every candidate
    against it. The probabilities of the candidates (they sum to less than 1)."""
    if not scores:
        return []
    t = temperature or 1.0
    top = max(0.0, max(scores))
    e = [math.exp((x - top) / t) for x in scores]
    z = math.exp(-top / t) + sum(e)
    return [x / z for x in e]


def rank(cands: list, feats: list[dict[str, float]], weights: dict[str, float]) -> list[Scored]:
    """The candidates scored and ordered, most probable first (ties: the earlier, then the key)."""
    scored = [Scored(c, f, weighted(f, weights)) for c, f in zip(cands, feats)]
    for s, p in zip(scored, probabilities([s.score for s in scored], weights.get("temperature", 1.0))):
        s.probability = p
    return sorted(scored, key=lambda s: (-s.score, s.candidate.order_time is None,
                                         s.candidate.order_time or dt.datetime.max, str(s.candidate.key)))
