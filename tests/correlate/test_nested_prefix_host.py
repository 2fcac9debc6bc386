"""A nested prefix's lines take the host of the launcher tag around them (issue 28: carry a value to every
line of its stream).

`srun --label` tags each task's lines `5: `; torch's own prefix `[rank5]:` inside it starts a stream of its
own, whose watchdog lines name no host. Task 5's NCCL lines name its node, and when Slurm requeues the job
onto other nodes, the new one (the stream moves). The `[rank5]:` lines had no host, hence no clock: on a
node whose clock ran 4 minutes behind the first node's, rank 4-7's watchdog reports were read 4 minutes
early, before the hang they report, and the attempt was called a crash (fresh run hang/slurm_srun/35 attempt
2). Now a nested stream that names no host takes its outer envelope's (crates/engine/src/stream.rs)."""

from __future__ import annotations

from ranktrace.correlate import diagnose

from .fixtures import generated_run, who


def test_a_ranks_watchdog_lines_take_its_tasks_host(tmp_path, catalog):
    truth, con = generated_run(tmp_path, "hang", 35, "slurm_srun", catalog)
    try:
        # the watchdog reports of ranks 4 and 5 ('5: [rank5]:[E302 ...] ... Watchdog caught ...'), by attempt
        hosts = con.execute(
            "SELECT rank, list(DISTINCT coalesce(host, '?') ORDER BY coalesce(host, '?')) FROM events "
            "WHERE rank IN (4, 5) AND raw LIKE '%[rank%]:%Watchdog caught collective operation timeout%' "
            "GROUP BY rank ORDER BY rank").fetchall()
        found = diagnose(con)["attempts"]
    finally:
        con.close()
    assert truth["nodes"]["trn-node17"] == [4, 5, 6, 7]
    assert hosts == [(4, ["trn-node17"]), (5, ["trn-node17"])], hosts
    want = truth["attempts"][1]["verdict"]
    got = found[1]
    assert (got["outcome"], *who(got["verdict"], "kind", "rank", "host")) == (
        "failed", want["kind"], want["rank"], want["host"]), got["verdict"]
