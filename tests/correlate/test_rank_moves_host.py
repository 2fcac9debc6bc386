"""A rank's stream that names a new host has moved there: a requeue on other nodes (issue 27's long runs).

mpirun tags rank 0's lines `[1,0]<stdout>:` in every launch; when Slurm requeues the job onto other nodes,
rank 0's NCCL lines name its new host. The engine took a stream that named two hosts for a console of
several hosts and stopped carrying either, so every later line of ranks 0-3 had no host, hence no clock:
their times were read on no node's clock, the next attempt's first lines fell into the one before, and a
hang whose watchdog reports came after a requeue request was called a cancelled job with no failure (fresh
run hang/mpirun_slurm/33 attempt 4). Now the stream moves: its lines take the new host from the line that
names it (crates/engine/src/stream.rs)."""

from __future__ import annotations

from ranktrace.correlate import diagnose

from .fixtures import generated_run, who


def test_a_requeued_ranks_lines_name_its_new_host(tmp_path, catalog):
    truth, con = generated_run(tmp_path, "hang", 33, "mpirun_slurm", catalog)
    try:
        # rank 0's "resuming from checkpoint" of each launch after the first: on gpu-a032, then (requeued onto
        # gpu-a[033-034]) on gpu-a034
        hosts = [h for (h,) in con.execute(
            "SELECT host FROM events WHERE rank = 0 AND raw LIKE '%<stdout>:resuming from checkpoint%' ORDER BY line").fetchall()]
        found = diagnose(con)["attempts"]
    finally:
        con.close()
    assert hosts == ["gpu-a032", "gpu-a034", "gpu-a034", "gpu-a034"], hosts
    want = truth["attempts"][3]
    assert want["outcome"] == "failed"
    got = found[3]
    assert (got["outcome"], *who(got["verdict"], "kind", "rank", "host")) == (
        "failed", want["verdict"]["kind"], want["verdict"]["rank"], want["verdict"]["host"]), got["verdict"]
