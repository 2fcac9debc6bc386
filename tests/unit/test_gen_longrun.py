"""benchmarks/gen_longrun.py: the long-run generator and its ground truth (issue 27, deliverable 5).

Property-style over several seeds per story (small size): the same arguments give the same bytes; the
truth is consistent (attempts in order and apart, failed attempts with verdicts of their story's kind,
the culprit in the logs, the GPU's PCI id tied to its rank by NCCL's init line, the step going back to
a checkpoint); every line is claimed by ranktrace's catalog unless it is raw for a reason said here;
the restart lines sit where the truth puts the attempts' starts; the held-out part is gated.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import re
import sys
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"


def _load():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("gen_longrun", BENCH / "gen_longrun.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gen_longrun"] = mod
    spec.loader.exec_module(mod)
    return mod


G = _load()
TUNING_LAYOUTS = [x for x in G.LAYOUTS if x != "pdsh_deepspeed"]
SEEDS = (1, 2, 3)


def _z(x: str) -> dt.datetime:
    return dt.datetime.strptime(x, "%Y-%m-%dT%H:%M:%S.%fZ")


def _cases():
    """Several seeds per story, the layout cycling over the tuning layouts that can tell the story."""
    out = []
    for i, story in enumerate(G.STORIES):
        lays = [x for x in TUNING_LAYOUTS if story not in G.UNTOLD.get(x, ())]
        for j, seed in enumerate(SEEDS):
            out.append((story, lays[(i + j) % len(lays)], seed))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("longrun")
    out = {}
    for story, layout, seed in _cases():
        d = root / f"{story}__{layout}__{seed}"
        out[(story, layout, seed)] = (d, G.generate(d, story, seed, layout, "small"))
    return out


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes(tmp_path):
    for story, layout in (("gpu_fault", "torchrun_node"), ("hang", "k8s_cri"), ("host_oom", "slurm_srun"),
                          ("rdzv_missing", "torchrun_logdir")):
        a, b, c = tmp_path / f"{story}a", tmp_path / f"{story}b", tmp_path / f"{story}c"
        G.generate(a, story, 4, layout)
        G.generate(b, story, 4, layout)
        G.generate(c, story, 5, layout)
        fa = _files(a)
        assert fa == _files(b), f"{story}/{layout}: the same seed gave different bytes"
        assert fa != _files(c), f"{story}/{layout}: seeds 4 and 5 gave the same bytes"


def test_truth_consistent(runs):
    for (story, layout, seed), (d, t) in runs.items():
        where = f"{story}/{layout}/{seed}"
        atts = t["attempts"]
        assert [a["id"] for a in atts] == list(range(1, len(atts) + 1)), where
        for a, b in zip(atts, atts[1:]):
            assert _z(a["end"]) <= _z(b["start"]), f"{where}: attempt {a['id']} ends after {b['id']} starts"
            assert _z(a["start"]) < _z(b["start"]), where
            if a["last_step"] is not None and b["first_step"] is not None:
                assert b["first_step"] <= a["last_step"] + 1, f"{where}: attempt {b['id']} does not resume " \
                                                              "from a checkpoint at or before the last step"
        for a in atts:
            assert _z(a["start"]) <= _z(a["end"]), where
            assert a["outcome"] in ("failed", "completed", "cancelled", "running"), where
            assert ("verdict" in a) == (a["outcome"] == "failed"), where
            if "verdict" in a:
                v = a["verdict"]
                assert v["kind"] == G.KIND[v["story"]], where
                assert v["host"] in t["hosts"], where
                assert v["rank"] is None or 0 <= v["rank"] < t["world_size"], where
                assert _z(a["start"]) <= _z(v["time"]) <= _z(a["end"]) + dt.timedelta(seconds=1), where
        failed = [a for a in atts if a["outcome"] == "failed"]
        assert t["verdict"] == (failed[-1]["verdict"] if failed else t["verdict"]), where
        if not failed:
            assert t["verdict"]["kind"] == "none", where
        feat = atts[t["featured_attempt"] - 1]
        if story == "ib_flap":
            assert feat["outcome"] in ("running", "completed") and "ib_flap" in feat["benign"], where
        else:
            assert feat["verdict"]["story"] == story, where
        if story == "rdzv_missing":
            prev = atts[t["featured_attempt"] - 2]
            assert prev["verdict"]["kind"] == "node_failure" and prev["verdict"]["host"] == feat["verdict"]["host"]
            assert feat["first_step"] is None, f"{where}: the rendezvous that never completes has no step"
        assert set(t["clock_offsets_s"]) >= set(t["hosts"]), where
        assert all(abs(o) <= 180 for o in t["clock_offsets_s"].values()), where


def test_culprit_and_gpu_in_the_logs(runs):
    """The culprit's host is named in the logs; a GPU fault's PCI id is in a kernel line of that host,
    and that host's NCCL init line gives the culprit rank that GPU (bus id)."""
    for (story, layout, seed), (d, t) in runs.items():
        text = "\n".join(b.decode() for b in _files(d).values())
        for a in t["attempts"]:
            v = a.get("verdict")
            if not v:
                continue
            assert v["host"] in text, f"{story}/{layout}/{seed}: {v['host']} is in no log"
            if v["kind"] == "gpu_fault":
                bus = v["gpu"][5:7]
                assert re.search(rf"NVRM: Xid \(PCI:0000:{bus}:00\): {v['xid']},", text), (story, layout, seed)
                nccl_bus = f"{int(bus, 16) << 12:x}"      # NCCL prints the PCI id with %lx: 0000:07:00.0 -> 7000
                assert re.search(rf"{re.escape(v['host'])}:\d+:\d+ \[\d\] NCCL INFO ncclCommInitRank comm 0x[0-9a-f]+ "
                                 rf"rank {v['rank']} nranks \d+ cudaDev \d nvmlDev \d busId {nccl_bus} ", text), \
                    f"{story}/{layout}/{seed}: no NCCL init line ties rank {v['rank']} to bus {bus}"


# Lines ranktrace's catalog leaves as 'raw', each for a reason: a real text no format claims (reported to
# the lead; parsers/ is not ours to change) or a plain print a script writes without any layout.
RAW_OK = {
    r"\[titan\] \d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - root - INFO - ":
        "catalog gap (reported): torchtitan's logger '[titan] %(asctime)s - %(name)s - %(levelname)s - %(message)s'",
    r"(Restoring states from the checkpoint path at|Restored all states from the checkpoint at) ":
        "catalog gap (reported): Lightning's rank_zero_info resume lines are bare messages",
    r"(saved checkpoint /|resuming from checkpoint /|no checkpoint found, training from scratch)":
        "a script's own print() without time or layout (the 'plain' telling)",
    r"^\[\d+\]:  what\(\):  ":
        "catalog gap (reported): the '[${rank}]:' torchrun prefix envelope wants a non-space after it",
    r"\] iteration +\d+/ *\d+ \| consumed samples|loading distributed checkpoint from|successfully loaded "
    r"checkpoint from|\] saving checkpoint at iteration|could not find the metadata file|will not load any "
    r"checkpoints": "catalog gap (reported; held-out telling): Megatron-LM's lines (iteration time with microseconds)",
    r"pdsh@\S+: \S+: ssh exited with exit code \d+": "catalog gap (reported; held-out layout): pdsh's own error",
}


def _ingest(d: Path, db: str) -> duckdb.DuckDBPyConnection:
    sys.path.insert(0, str(REPO / "src"))
    from ranktrace.formats import load_catalog
    from ranktrace.ingest.pipeline import ingest
    files = sorted(str(p.relative_to(d.parent)) for p in d.rglob("*") if p.is_file() and p.name != "truth.json")
    old = os.getcwd()
    os.chdir(d.parent)
    try:
        ingest(files, db, load_catalog(check_samples=False))
    finally:
        os.chdir(old)
    from ranktrace.store import connect   # a store is a directory (its lines as Parquet, one DuckDB file)
    return connect(db)


@pytest.fixture(scope="module")
def stores(runs, tmp_path_factory):
    """One seed per story (seed 1; layouts cycle) plus one held-out run, ingested."""
    root = tmp_path_factory.mktemp("stores")
    picked = [(k, v) for k, v in runs.items() if k[2] == 1]
    h = root / "held"
    picked.append((("gpu_fault", "pdsh_deepspeed", 1001), (h, G.generate(h, "gpu_fault", 1001, "pdsh_deepspeed",
                                                                             "small", heldout=True))))
    out = []
    for i, (key, (d, t)) in enumerate(picked):
        out.append((key, d, t, _ingest(d, str(root / f"s{i}.duckdb"))))
    yield out
    for *_, con in out:
        con.close()


def test_every_line_parsed_or_raw_for_a_reason(stores):
    bad = []
    for key, d, t, con in stores:
        for f, line, raw in con.execute("SELECT file, line, raw FROM events WHERE format = 'raw'").fetchall():
            if not any(re.search(p, raw) for p in RAW_OK):
                bad.append(f"{key}: {f}:{line}: {raw[:160]}")
        # the culprit is an identity of the store: its rank on some line, its host on some line
        for a in t["attempts"]:
            v = a.get("verdict")
            if v and v["rank"] is not None:
                # on a line, or as the rank of the world's NCCL communicator (a communicator's rank is
                # the process's rank in that communicator: no line identity; identity.world_comms)
                n = con.execute("SELECT count(*) FROM events WHERE rank = ?", [v["rank"]]).fetchone()[0]
                if n == 0 and "nccl_comm" in {r[0] for r in con.execute("SHOW TABLES").fetchall()}:
                    n = con.execute("SELECT count(*) FROM nccl_comm WHERE rank = ? AND nranks = "
                                    "(SELECT max(nranks) FROM nccl_comm)", [v["rank"]]).fetchone()[0]
                assert n > 0, f"{key}: no line carries rank {v['rank']}"
            if v and t["layout"] != "k8s_cri":   # a pod's lines carry the pod, its node is in the journal
                n = con.execute("SELECT count(*) FROM events WHERE host = ?", [v["host"]]).fetchone()[0]
                assert n > 0, f"{key}: no line carries host {v['host']}"
    assert not bad, "lines no format claims:\n" + "\n".join(bad[:20])


BOUNDARY = {
    # how each mechanism's attempt begins in the logs: the first such line of the attempt is its start
    "elastic": r"torch/distributed/run\.py:\d+\] Using nproc_per_node|Rendezvous'ing worker group",
    "resubmit": r"torch/distributed/run\.py:\d+\] Using nproc_per_node|sched: Allocate JobId="
                r"|runner\.py:\d+:main\] cmd = pdsh",
    "requeue": r"sched: Allocate JobId=",
    "pod_restart": r"torch/distributed/run\.py:\d+\] Using nproc_per_node|Rendezvous'ing worker group",
}


def test_restart_lines_where_the_truth_says(stores):
    """Each attempt's start is the true time of a boundary line of its mechanism (the line's own time
    minus its host's clock offset), and its launcher says which restart it is."""
    for key, d, t, con in stores:
        mech = t["telling"]["mechanism"]
        offs = t["clock_offsets_s"]
        rows = con.execute("SELECT ts, host, file, raw FROM events WHERE regexp_matches(raw, ?) AND ts IS NOT NULL",
                           [BOUNDARY[mech]]).fetchall()
        true_times = []
        for ts, host, f, raw in rows:
            h = host if host in offs else ("slurmctld" if "slurmctld" in f else None)
            pod_of = {p: x for x, p in (t.get("pods") or {}).items()}
            if h is None:      # a pod's log: the clock of the node the pod ran on
                h = next((x for p, x in pod_of.items() if f"_{p}_" in f), None)
            if h is None:      # a line from the launching host of a pdsh run: the first host's clock
                h = next(x for x in t["hosts"] if x in raw or x in f) if any(x in raw or x in f for x in t["hosts"]) \
                    else t["hosts"][0]
            true_times.append(ts - dt.timedelta(seconds=offs.get(h, 0.0)))
        for a in t["attempts"]:
            s = _z(a["start"])
            near = [x for x in true_times if abs((x - s).total_seconds()) <= 1.0]
            assert near, f"{key}: no {mech} boundary line at attempt {a['id']}'s start {a['start']}"
        raws = "\n".join(r[0] for r in con.execute("SELECT raw FROM events").fetchall())
        for a in t["attempts"][1:]:
            if mech == "elastic" and a.get("restart_count"):
                for n in set(a["restart_count"].values()):
                    assert f"restart_count={n}" in raws, f"{key}: no restart_count={n}"
            if mech == "requeue":
                assert f"SLURM_RESTART_COUNT={a['id'] - 1}" in raws, key
            if mech == "pod_restart" and a["first_step"] is not None:
                assert any(p.name == f"{a['id'] - 1}.log" for p in d.rglob("*.log")), key


def test_eval_subgroups_are_no_restart(tmp_path):
    """A live process's new communicator (ncclCommSplit) keeps its pid: the init line of a sub-group
    comes from a pid that initialised the world communicator in the same attempt."""
    seen = 0
    for seed in range(1, 13):
        d = tmp_path / str(seed)
        t = G.generate(d, "exception", seed, "torchrun_node")
        if not t["noise"]["eval_subgroups"]:
            continue
        text = "\n".join(b.decode() for b in _files(d).values())
        for m in re.finditer(r"(\S+):(\d+):\d+ \[\d\] NCCL INFO ncclCommSplit comm", text):
            assert re.search(rf"{re.escape(m.group(1))}:{m.group(2)}:\d+ \[\d\] NCCL INFO ncclCommInitRank ", text)
            seen += 1
    assert seen > 0, "no run of these seeds made evaluation sub-groups"


def test_held_out_is_gated(tmp_path):
    with pytest.raises(SystemExit):
        G.generate(tmp_path / "a", "hang", G.HELDOUT_SEED_MIN)
    with pytest.raises(SystemExit):
        G.generate(tmp_path / "b", "hang", 1, "pdsh_deepspeed")
    with pytest.raises(SystemExit):
        G.generate(tmp_path / "c", "hang", 1, "torchrun_node", progress="megatron")
    with pytest.raises(SystemExit):
        G.generate(tmp_path / "d", "hang", 1, "torchrun_node", heldout=True)
    fam = G.family(False, [1, 2])
    assert all(s < G.HELDOUT_SEED_MIN and lay != "pdsh_deepspeed" for _, lay, s in fam)
    assert {st for st, _, _ in fam} == set(G.STORIES)
    held = G.family(True, [G.HELDOUT_SEED_MIN + 1])
    assert any(lay == "pdsh_deepspeed" for _, lay, _ in held)
    assert all(s >= G.HELDOUT_SEED_MIN for _, _, s in held)


def test_tuning_runs_never_tell_the_held_out_way(runs):
    for (story, layout, seed), (d, t) in runs.items():
        assert t["telling"]["progress"] not in G.HELDOUT["progress"], (story, layout, seed)
        for a in t["attempts"]:
            assert (a.get("verdict") or {}).get("telling") not in G.HELDOUT["tellings"], (story, layout, seed)


def test_held_out_tellings_appear(tmp_path):
    """Each held-out telling is drawn somewhere in a held-out family (or the split would measure nothing)."""
    got_prog, got_tell = set(), set()
    for seed in range(G.HELDOUT_SEED_MIN + 1, G.HELDOUT_SEED_MIN + 9):
        t = G.generate(tmp_path / f"o{seed}", "host_oom", seed, "torchrun_node", heldout=True)
        got_prog.add(t["telling"]["progress"])
        got_tell |= {(a.get("verdict") or {}).get("telling") for a in t["attempts"]}
    assert set(G.HELDOUT["progress"]) <= got_prog
    assert set(G.HELDOUT["tellings"]) <= got_tell


def test_truth_file_is_the_returned_truth(runs):
    for (story, layout, seed), (d, t) in list(runs.items())[:3]:
        assert json.loads((d / "truth.json").read_text()) == t


def test_timelines_hold_together_over_many_seeds():
    """The generator checks its own timeline (no attempt ends after the next one starts; under elastic
    restarts every agent is back before the rendezvous completes) and raises otherwise: render (without
    writing) many more plans than the tests above write."""
    n = 0
    for story in G.STORIES:
        for layout in TUNING_LAYOUTS:
            if story in G.UNTOLD.get(layout, ()):
                continue
            for seed in range(4, 10):
                run = G.Run(story, layout, seed)
                G.LAYOUT_CLASSES[layout](run).render()
                assert len(run.attempts) >= 1
                n += 1
    assert n == 6 * sum(1 for s in G.STORIES for lay in TUNING_LAYOUTS if s not in G.UNTOLD.get(lay, ()))


def test_lightning_bars_elapsed_is_tqdms(tmp_path):
    """A Lightning bar's elapsed is tqdm's `now - start` (format_interval: [H:]MM:SS), so it never goes back
    within one bar (one launch's epoch): the generator printed a step's index times that step's own time, which
    jumped from 12:59 to 44:11 on a slow step and back (a clock of bars built on it would fit the generator)."""
    bar = re.compile(r"Epoch (\d+): +\d+%\|[^|]*\| (\d+)/\d+ \[(?:(\d+):)?(\d\d):(\d\d)<")
    seen = 0
    for seed in (3, 28):
        d = tmp_path / str(seed)
        G.generate(d, "node_freeze", seed, "torchrun_node", progress="lightning")
        for name, data in sorted(_files(d).items()):
            last = None   # (epoch, step, elapsed) of the file's previous bar
            for m in bar.finditer(data.decode()):
                epoch, step = int(m.group(1)), int(m.group(2))
                elapsed = int(m.group(3) or 0) * 3600 + int(m.group(4)) * 60 + int(m.group(5))
                if last is not None and last[0] == epoch and last[1] < step:   # the same bar, one step on
                    assert elapsed >= last[2], (name, last, (epoch, step, elapsed))
                    seen += 1
                last = (epoch, step, elapsed)
    assert seen > 50, seen


def test_hf_trainer_bar_is_one_bar_per_launch(tmp_path):
    """hf_bar's tqdm bar (the HF Trainer's ProgressCallback: no description, total = max steps) counts its
    elapsed time from the launch and does not start again at an epoch, as Lightning's does; the log dicts are
    printed between its lines. It is never drawn for a layout: the sets of every seed stay as they were."""
    bar = re.compile(r"(?m)(?:^|[:\]] ?)\s*(\d+)%\|[^|]*\| (\d+)/(\d+) \[(?:(\d+):)?(\d\d):(\d\d)<")
    G.generate(tmp_path, "hang", 5, "torchrun_node", progress="hf_bar")
    truth = json.loads((tmp_path / "truth.json").read_text())
    bars = dicts = 0
    for name, data in sorted(_files(tmp_path).items()):
        text = data.decode()
        dicts += text.count("{'loss': ")
        last = None
        for m in bar.finditer(text):
            step, total = int(m.group(2)), int(m.group(3))
            elapsed = int(m.group(4) or 0) * 3600 + int(m.group(5)) * 60 + int(m.group(6))
            if last is not None and last[0] < step:
                assert elapsed >= last[1], (name, last, (step, elapsed))   # across epochs too
            last = (step, elapsed)
            bars += 1
    assert truth["telling"]["progress"] == "hf_bar"
    assert bars > 50 and dicts > 5, (bars, dicts)
    assert all("hf_bar" not in styles for styles in sys.modules["longrun.plan"].PROGRESS.values())
