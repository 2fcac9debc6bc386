"""A node whose own kernel reported a CPU stuck (watchdog: BUG: soft lockup) is not a victim of the cascade,
whatever its ranks complained of before: no waiting peer's CPU locks up in the kernel (choose.py, feature
`victim`; detectors.base.OWN_NODE_KINDS). In a fresh generated run (node_freeze under srun, seed 29), a rank of
the frozen node had logged a reset connection a minute before (noise the job trained past); the node, named
by its kernel and by slurmctld, lost at 0.27 to another node's SIGABRT report at 0.29 (with the first cause
scored again after the demotions, test_first_cause_after_demotions, it won at 0.5, still marked a victim)."""

from __future__ import annotations

from .fixtures import generated_attempts, who


def test_a_node_its_kernel_says_locked_up_is_not_a_victim(tmp_path, catalog):
    truth, found = generated_attempts(tmp_path, "node_freeze", 29, "slurm_srun", catalog)
    assert who(truth[2]["verdict"]) == ("node_failure", "gpu-a009")
    v = found[2]["verdict"]
    assert who(v) == ("node_failure", "gpu-a009"), v
    top = found[2]["hypotheses"][0]
    assert (top["host"], top["features"]["victim"]) == ("gpu-a009", 0.0), top
