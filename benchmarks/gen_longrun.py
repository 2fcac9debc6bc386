"""Long training runs told as a sequence of attempts, each with its ground truth (issue 27, deliverable 5).

    python benchmarks/gen_longrun.py OUT_DIR --story gpu_fault --seed 3 [--layout torchrun_node] [--size small]
    python benchmarks/gen_longrun.py OUT_DIR --family [--size small] [--seeds 1-3] [--heldout]
    python benchmarks/gen_longrun.py --list [--heldout]

One incident is a directory like sample_logs/*: the log files in the launcher's native layout plus
`truth.json` (the contract of sample_logs/README.md, "Attempts in the answers": attempts in time order
with id/start/end/outcome/boundary and, for failed attempts, verdict {kind, rank, host, pod, gpu}; the
top-level verdict is the last failed attempt's; plus the per-host clock offsets, the story, layout, seed
and the way the story was told). `--family` writes one subdirectory per (story, layout, seed).

A run is 1-7 attempts: training from a checkpoint, a failure (or a preemption, or nothing), a restart by
the launcher's own mechanism, training again from the last checkpoint (the step counter goes back), maybe
the same node failing again. Everything is drawn from random.Random(seed): which node, rank and GPU, when,
how the cascade shows, the clock skew of each host (up to minutes), the noise (IB port flaps that recover,
retried sockets, c10d store reconnects, NCCL WARN noise, a straggler, UserWarnings, process groups that a
live process creates and destroys for evaluation: NOT restarts). UTC, deterministic: the same arguments
give the same bytes.

Stories (the failure of the featured attempt; other attempts fail in other ways or are preempted):
  gpu_fault      Xid 79 / 48 / 94 / 48+64 on one GPU; the owning rank (PCI bus id -> GPU -> rank through
                 NCCL's init lines) gets the CUDA error                                   kind gpu_fault
  host_oom       the kernel's OOM killer kills one rank (or its DataLoader worker)         kind oom
  hang           one rank stops before a collective; the others' watchdogs time out        kind hang
  ib_down        one node's IB port goes down for good; NCCL transport errors, timeouts    kind network_error
  ib_flap        an IB port flaps and recovers: that attempt does not fail              (no failure)
  segfault       SIGSEGV in one rank (exitcode -11)                                        kind crash
  exception      a Python exception in one rank (traceback, exitcode 1)                    kind exception
  node_freeze    every rank of one node goes silent at once                                kind node_failure
  rdzv_missing   after a node froze, the restart's rendezvous times out: it never rejoins   kind rendezvous_timeout

Layouts (each with its own restart mechanism):
  torchrun_node     per-node torchrun console (--tee: '[default3]:' or '[11]:' prefixes), dmesg -T per node;
                    restarts: torchrun --max-restarts (elastic) or a resubmitted job (new files)
  torchrun_logdir   the agent's console per node + torchrun --log-dir per-rank files
                    (<run>/attempt_<restart_count>/<local_rank>/{stdout,stderr}.log); restarts: elastic
  slurm_srun        srun --label output (slurm-<job>.out), slurmctld/slurmd logs, dmesg -T per node;
                    restarts: Slurm requeue (same job id, SLURM_RESTART_COUNT; the output appended, or one
                    file per restart with --output=slurm-%j_%r.out) or a resubmitted job (new job id)
  deepspeed_srun    srun --ntasks-per-node=1 deepspeed --no_ssh --node_rank=$SLURM_NODEID: one srun task per node (its
                    id is the node's index), DeepSpeed's launch.py on each node spawning the workers; their output
                    untagged in slurm-<job>.out (with srun --label: the node's index) or one file per rank
                    (--enable_each_rank_log); the launcher names the last command it spawned, not the failed one.
                    Restarts: requeue or resubmit. Added in session 13: not in the held-out family.
  mpirun_slurm      sbatch + Open MPI's mpirun --tag-output (every line '[1,<rank>]<stdout|stderr>:' in
                    slurm-<job>.out; with --timestamp-output mpirun's own time first), slurmctld/slurmd logs;
                    mpirun kills every process when the first fails and reports that one; a frozen node's orted
                    is reported lost. Restarts: requeue or resubmit. Added in session 19: not in the held-out family.
  k8s_cri           Kubeflow PyTorchJob: CRI pod logs (<n>.log per container restart) with torchrun inside,
                    kubelet journal per node, kubectl describe / get events / get pods; restarts: the
                    containers restart (restartPolicy OnFailure)
  pdsh_deepspeed    HELD OUT (see below)

HELD OUT FROM TUNING (the hidden judge uses "a generator you do not have, with stories of these kinds
told differently"; tune the correlator on the rest, look at held-out output only to measure):
  - every seed >= 1000, for every story and layout;
  - the whole layout `pdsh_deepspeed` (the DeepSpeed launcher over pdsh: one console with 'host: '
    prefixes, DeepSpeed's logger, journald kernel logs; restarts: resubmitted jobs);
  - the whole progress/resume telling `megatron` (Megatron-LM's iteration lines printed by the last rank,
    its checkpoint load/save lines);
  - the OOM telling `oom_dataloader` (the kernel kills a DataLoader worker process, whose pid is no rank's;
    the rank then dies of "DataLoader worker (pid ...) is killed by signal: Killed.").
They appear only with --heldout, and --heldout only makes seeds >= 1000. HELDOUT below lists them.

Sizes: small (2-3 nodes, minutes per attempt, under 2 MB: seconds to ingest; the CI property tests), medium
(4-8 nodes, 20-60 minutes per attempt, about 15 MB), large (16 nodes x 8 GPUs, 4-7 hours of training, every
rank printing progress: about 0.9 GB in 2.5 minutes at under 40 MB of memory; the `diagnose < 10 s` check).

The parts live in benchmarks/longrun/ (plan, sink, render, launch_torchrun, launch_other, truth) and the
emitters' texts, with their sources, in benchmarks/emit/. An attempt's `end` is when its last process
ended; under elastic restarts one node's teardown can overlap another node's rejoin by seconds, and there
the end is the next attempt's start. The generator checks its own timeline and raises on anything else.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from emit import progress as P  # noqa: E402
from longrun.launch_other import DeepspeedSrun, MpirunSlurm, PdshDeepspeed, SlurmSrun  # noqa: E402
from longrun.launch_torchrun import K8sCri, Torchrun, TorchrunLogdir  # noqa: E402
from longrun.plan import ADDED_LATER, HELDOUT, HELDOUT_SEED_MIN, KIND, LAYOUTS, SIZES, STORIES, UNTOLD, Run  # noqa: E402
from longrun.truth import truth_of  # noqa: E402

# what the scorer and the tests read here: the stories, their kinds, the layouts, the HELD-OUT part
__all__ = ["HELDOUT", "HELDOUT_SEED_MIN", "KIND", "LAYOUTS", "SIZES", "STORIES", "UNTOLD", "Run", "generate", "family",
           "parse_seeds", "main", "LAYOUT_CLASSES"]

LAYOUT_CLASSES = {"torchrun_node": Torchrun, "torchrun_logdir": TorchrunLogdir, "slurm_srun": SlurmSrun,
                  "k8s_cri": K8sCri, "pdsh_deepspeed": PdshDeepspeed, "deepspeed_srun": DeepspeedSrun,
                  "mpirun_slurm": MpirunSlurm}


def generate(out: str | Path, story: str, seed: int, layout: str | None = None, size: str = "small",
             heldout: bool = False, mechanism: str | None = None, progress: str | None = None,
             node_tz: float = 0.0) -> dict:
    """Write one incident under `out`; return its truth (also written to truth.json)."""
    if layout is None:
        pick = random.Random(f"layout:{story}:{seed}")
        allowed = [x for x in LAYOUTS if story not in UNTOLD.get(x, ()) and (heldout or x != "pdsh_deepspeed")
                   and x not in ADDED_LATER]
        layout = pick.choice(allowed)
    run = Run(story, layout, seed, size, heldout, mechanism, progress, node_tz)
    rend = LAYOUT_CLASSES[layout](run)
    rend.render()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rend.s.write(out)
    truth = truth_of(run, rend)
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth


def family(heldout: bool = False, seeds: list[int] | None = None) -> list[tuple[str, str, int]]:
    """The (story, layout, seed) of a family: every story in every layout that can tell it. Tuning: seeds
    1.. and the tuning layouts; held out: seeds >= 1000 and every layout (pdsh_deepspeed included)."""
    if seeds is None:
        seeds = [HELDOUT_SEED_MIN + 1] if heldout else [1]
    out = []
    for story in STORIES:
        for layout in LAYOUTS:
            if story in UNTOLD.get(layout, ()) or (layout == "pdsh_deepspeed" and not heldout) or (
                    layout in ADDED_LATER and heldout):
                continue
            for s in seeds:
                out.append((story, layout, s))
    return out


def parse_seeds(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?")
    ap.add_argument("--story", choices=STORIES)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layout", choices=LAYOUTS)
    ap.add_argument("--size", choices=tuple(SIZES), default="small")
    ap.add_argument("--mechanism", help="restart mechanism (elastic, resubmit, requeue, pod_restart)")
    ap.add_argument("--progress", choices=tuple(P.STYLES), help="progress/resume telling")
    ap.add_argument("--node-tz", type=float, default=0.0, metavar="HOURS",
                    help="k8s_cri only: the nodes' journals (kernel, kubelet) in local time HOURS from UTC, with "
                         "no zone written, beside the pods' UTC CRI logs (an on-premises cluster not on UTC)")
    ap.add_argument("--family", action="store_true", help="every story x layout (one subdirectory each)")
    ap.add_argument("--seeds", default=None, help="seeds of a family: '1-3' or '1,5,9'")
    ap.add_argument("--list", action="store_true", help="list the family's (story, layout, seed) and exit")
    ap.add_argument("--heldout", action="store_true",
                    help="the HELD-OUT part (seeds >= 1000, the pdsh_deepspeed layout, the megatron telling, "
                         "oom_dataloader): to measure, never to tune")
    a = ap.parse_args(argv)
    if a.family or a.list:
        if a.mechanism or a.story or a.layout != ap.get_default("layout"):
            ap.error("--family makes every story x layout with their own mechanisms: --story, --layout and "
                     "--mechanism are for one run")
        seeds = parse_seeds(a.seeds) if a.seeds else None
        fam = family(a.heldout, seeds)
        if a.list:
            for story, layout, seed in fam:
                print(f"{story}\t{layout}\t{seed}")
            return 0
        if not a.out:
            ap.error("OUT_DIR is required")
        for story, layout, seed in fam:
            t = generate(Path(a.out) / f"{story}__{layout}__{seed}", story, seed, layout, a.size, a.heldout,
                         progress=a.progress, node_tz=a.node_tz)
            print(f"{story}__{layout}__{seed}: {len(t['attempts'])} attempts, verdict {t['verdict']['kind']}")
        return 0
    if not a.out or not a.story:
        ap.error("OUT_DIR and --story are required (or --family / --list)")
    t = generate(a.out, a.story, a.seed, a.layout, a.size, a.heldout, a.mechanism, a.progress, a.node_tz)
    print(json.dumps({"attempts": [(x["id"], x["outcome"], (x.get("verdict") or {}).get("kind"))
                                   for x in t["attempts"]],
                      "verdict": t["verdict"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
