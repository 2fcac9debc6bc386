import json

from ranktrace.correlate import diagnose
from ranktrace.correlate.detectors.base import KINDS

from .fixtures import ev, steps, store

NODES = {"n1": [0, 1], "n2": [2, 3], "n3": [4, 5]}


def _incident(skew=None):
    skew = skew or {}
    evs = steps(NODES, 10, skew=skew)
    evs.append(ev(6.0 + skew.get("n2", 0), "RuntimeError: corrupted batch", kind="python_exception",
                  host="n2", rank=3))
    for h, rs in NODES.items():
        for r in rs:
            if r != 3:
                evs.append(ev(6.5 + skew.get(h, 0), "Connection closed by peer", kind="peer_closed", host=h, rank=r))
    return evs


def test_contract_shape_and_culprit():
    d = diagnose(store(_incident()))
    json.dumps(d)   # serialisable
    v = d["verdict"]
    assert set(v) == {"kind", "rank", "local_rank", "host", "pod", "pid", "gpu", "time", "confidence", "summary"}
    assert v["kind"] in KINDS and v["kind"] == "exception"
    # confidence is calibrated (choose.calibrated): an exception told by its order and cascade was right
    # about three times in four on the labelled runs; a hardware record earns more
    assert (v["rank"], v["host"]) == (3, "n2") and v["confidence"] >= 0.7
    assert v["time"].endswith("Z")
    assert d["cascade"] and all(c["rank"] != 3 for c in d["cascade"])
    assert any(e["role"] == "cause" and "corrupted" in e["text"] for e in d["evidence"])
    for c in d["clock"]:
        assert set(c) == {"host", "offset_s", "uncertainty_s", "basis"}


def test_same_verdict_under_clock_skew():
    # n2 runs 40 s ahead and n1 25 s behind: raw order would blame someone else
    skew = {"n2": 40.0, "n1": -25.0}
    d = diagnose(store(_incident(skew)))
    assert (d["verdict"]["rank"], d["verdict"]["kind"]) == (3, "exception")
    c = {x["host"]: x for x in d["clock"]}
    ref = next(h for h, x in c.items() if x["basis"] == "reference host")
    for h, x in c.items():
        assert abs(x["offset_s"] - (skew.get(h, 0) - skew.get(ref, 0))) <= x["uncertainty_s"] + 1e-9


END = [ev(4.0, f"[default] worker group successfully finished. Waiting 300 seconds for other agents to finish.",
          kind="worker_group_done", role="lifecycle", host=h) for h in NODES]


def test_clean_run_is_none():
    d = diagnose(store(steps(NODES, 5) + END))
    assert d["verdict"]["kind"] == "none" and d["verdict"]["rank"] is None
    assert d["verdict"]["confidence"] >= 0.8
    assert any("successfully finished" in e["text"] for e in d["evidence"])


def test_none_needs_proof_of_a_normal_end():
    # progress and nothing else: the excerpt may stop before the failure
    d = diagnose(store(steps(NODES, 5)))
    assert d["verdict"]["kind"] == "unknown" and d["verdict"]["confidence"] < 0.5
    assert any("end of the job" in m for m in d["missing"])
    # only one node says it finished: none, but not confident, naming the nodes that did not
    d = diagnose(store(steps(NODES, 5) + END[:1]))
    assert d["verdict"]["kind"] == "none" and d["verdict"]["confidence"] < 0.8
    assert any("n2" in m and "n3" in m for m in d["missing"])
    # a scheduler's COMPLETED with no node named covers the job
    done = ev(5.0, "3|pretrain|gpu|COMPLETED|0:0|0:0|n[1-3]|3", kind="step_end", role="lifecycle")
    d = diagnose(store(steps(NODES, 5) + [done]))
    assert d["verdict"]["kind"] == "none" and d["verdict"]["confidence"] >= 0.8
    # a step_end that reports a failing job_rc is no proof
    bad = ev(5.0, "job 20 completed with slurm_rc = 0, job_rc = 35072", kind="step_end", role="lifecycle")
    assert diagnose(store(steps(NODES, 5) + [bad]))["verdict"]["kind"] == "unknown"


def test_abnormal_lines_no_rule_knows_never_give_none():
    for text in ("Warning  OOMKilled  2m  kubelet  Container pytorch was OOMKilled",
                 "Warning  BackOff  1m (x5 over 3m)  kubelet  Back-off restarting failed container",
                 "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
                 "node1:1234:1250 [0] misc/socket.cc:50 NCCL WARN Net : Connection closed by remote peer",
                 "[1,0]<stderr>:[node1:01234] *** Process received signal *** Caught signal 11",
                 "worker 3 exited with exit code 1"):
        d = diagnose(store(steps(NODES, 5) + END + [ev(6.0, text, host="n2")]))
        assert d["verdict"]["kind"] == "unknown" and d["verdict"]["confidence"] < 0.5, text
        assert d["verdict"]["host"] == "n2" and d["evidence"], text


def test_two_inseparable_causes_are_not_confident():
    evs = steps(NODES, 5) + [
        ev(None, "RuntimeError: a", kind="python_exception", host="n1", rank=0),
        ev(None, "RuntimeError: b", kind="python_exception", host="n3", rank=5)]
    d = diagnose(store(evs))
    assert d["verdict"]["confidence"] < 0.8
    ranks = {h["rank"] for h in d["hypotheses"]}
    assert {0, 5} <= ranks


def test_symptoms_only_is_unknown_or_low_confidence():
    evs = steps(NODES, 5) + [ev(9, "Watchdog caught collective operation timeout", kind="collective_timeout",
                                host=h, rank=r) for h, rs in NODES.items() for r in rs]
    d = diagnose(store(evs))
    assert d["verdict"]["kind"] == "unknown" or d["verdict"]["confidence"] < 0.8
    assert d["missing"]


def test_pinned_offset_changes_order():
    evs = steps(NODES, 10) + [
        ev(6.0, "RuntimeError: n1 first", kind="python_exception", host="n1", rank=0),
        ev(7.0, "RuntimeError: n3 later", kind="python_exception", host="n3", rank=4)]
    assert diagnose(store(evs))["verdict"]["rank"] == 0
    # pin n3 two seconds ahead: its line really came at 5.0 s
    assert diagnose(store(evs), offsets={"n3": 2.0})["verdict"]["rank"] == 4


def test_unclassified_failure_text_is_not_a_clean_run():
    benign = steps(NODES, 5) + END + [ev(9, "[c10d] uv_loop_close failed with:-16 errn:EBUSY", host="n1")]
    assert diagnose(store(benign))["verdict"]["kind"] == "none"
    bad = benign + [ev(10, "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)", host="n2")]
    d = diagnose(store(bad))
    assert d["verdict"]["kind"] == "unknown" and d["verdict"]["confidence"] < 0.5
    assert d["evidence"] and d["missing"]


def test_coverage_caps_confidence_to_what_the_excerpt_shows():
    # starts mid-cascade: a peer complaint before the only cause line
    evs = [ev(1.0, "Connection closed by peer", kind="peer_closed", host="n1", rank=0),
           ev(5.0, "RuntimeError: corrupted batch", kind="python_exception", host="n2", rank=3)]
    d = diagnose(store(evs))
    assert d["verdict"]["kind"] == "exception" and d["verdict"]["rank"] == 3
    assert d["verdict"]["confidence"] <= 0.7 and any("starts with a symptom" in m for m in d["missing"])
    # no times at all
    d = diagnose(store([ev(None, "RuntimeError: corrupted batch", kind="python_exception", host="n2", rank=3)]))
    assert d["verdict"]["kind"] == "exception" and d["verdict"]["confidence"] <= 0.6
    assert any("no line carries a time" in m for m in d["missing"])
    # the whole incident, timed, cause first: confident
    d = diagnose(store(_incident()))
    assert d["verdict"]["confidence"] >= 0.7 and not any("excerpt" in m for m in d["missing"])
