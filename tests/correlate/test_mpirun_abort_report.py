"""Open MPI's launcher names the first process to die, not the first to fail (orte errmgr: 'mpirun noticed that
process rank N ... exited on signal 6 (Aborted).'). After an IB port went down on one node, a rank on another
node whose NCCL call failed ('remote process exited or there was a network error') is taken down by its own
watchdog (SIGABRT), and mpirun reports that rank: how the job was brought down, as srun's 'tasks N: Aborted' is,
not its cause (first sight of gen_longrun's mpirun_slurm layout: 'crash' on that rank, the port's node lost)."""

from __future__ import annotations

from .fixtures import generated_attempts, who


def test_the_rank_mpirun_saw_abort_first_is_not_the_cause_of_a_lost_ib_port(tmp_path, catalog):
    truth, found = generated_attempts(tmp_path, "ib_down", 2, "mpirun_slurm", catalog)
    assert who(truth[1]["verdict"]) == ("network_error", "node24")
    out = (tmp_path / "run" / "slurm-554626.out").read_text()
    assert "mpirun noticed that process rank 11 with PID 0 on node node26 exited on signal 6 (Aborted)." in out
    assert who(found[1]["verdict"]) == ("network_error", "node24"), found[1]["verdict"]
