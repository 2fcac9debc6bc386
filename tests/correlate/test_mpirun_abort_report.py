"""Open MPI's launcher names the first process to die, not the first to fail (orte errmgr: 'mpirun noticed that
process rank N ... exited on signal 6 (Aborted).'). After an IB port went down on one node, a rank on another
node whose NCCL call failed ('remote process exited or there was a network error') is taken down by its own
watchdog (SIGABRT), and mpirun reports that rank: how the job was brought down, as srun's 'tasks N: Aborted' is,
not its cause (first sight of gen_longrun's mpirun_slurm layout: 'crash' on that rank, the port's node lost)."""

from __future__ import annotations

from ranktrace.correlate import diagnose

from .fixtures import generated_run


def test_the_rank_mpirun_saw_abort_first_is_not_the_cause_of_a_lost_ib_port(tmp_path, catalog):
    truth, con = generated_run(tmp_path, "ib_down", 2, "mpirun_slurm", catalog)
    want = truth["attempts"][1]["verdict"]
    assert (want["kind"], want["host"]) == ("network_error", "node24")
    out = (tmp_path / "run" / "slurm-554626.out").read_text()
    assert "mpirun noticed that process rank 11 with PID 0 on node node26 exited on signal 6 (Aborted)." in out
    v = diagnose(con)["attempts"][1]["verdict"]
    con.close()
    assert (v["kind"], v["host"]) == ("network_error", "node24"), v
