"""DeepSpeed's launcher under srun with no --label (benchmarks/gen_longrun.py layout deepspeed_srun): one
console that every node writes to, its launcher and rank lines naming no host, requeued by Slurm. What
names the node there is the links: the pids a launcher killed (NCCL's 'host:pid:tid' lines of those
pids), the world communicator's init lines of the file (host and global rank), and the watchdog
reports of the ranks that waited. Each case is one failed attempt of a generated run (tuning seeds:
these runs were the misses of a fresh set, session 15)."""

from __future__ import annotations

import pytest

from .fixtures import generated_attempts, who


@pytest.mark.parametrize("story, seed, attempt, kind, host, rank", [
    # a silent SIGSEGV: the launcher's '-11' report is its node's (the pids it killed are NCCL's there), not
    # the other node's where the batch script's requeue cancel lands; the other launcher's kills, a few
    # lines above, are not this report's
    ("segfault", 17, 3, "crash", "trn-node07", None),
    # a rank that hung before a collective and wrote only NCCL's untimed lines: the others' watchdog
    # reports leave it out; the ranks of the resubmitted job are on other nodes than the first job's (the
    # file's own init lines say which), and the launchers' SIGABRT reports are their watchdogs' aborts
    ("hang", 17, 2, "hang", "gpu-a017", 1),
    # a rank's exception on a node whose launcher lines name no host: its 'Killing subprocess' lines are
    # its node's teardown (the pid's NCCL lines name the node), so the node did not go quiet
    ("exception", 18, 2, "exception", "gpu-a040", 3),
    # the training loop's lines of a resubmitted job that is still training, long after the job's last line
    # of a host: read on their own clock, not pulled back (onto another node's clock) before the job began,
    # where they made the OOM-killed rank of the attempt before look like it trained on
    ("host_oom", 4, 2, "oom", "cn0023", 11),
    ("gpu_fault", 5, 4, "exception", "trn-node28", 1),
])
def test_each_failed_attempt_names_its_culprit(tmp_path, catalog, story, seed, attempt, kind, host, rank):
    truth, attempts = generated_attempts(tmp_path, story, seed, "deepspeed_srun", catalog)
    want = next(a for a in truth if a["id"] == attempt)["verdict"]
    assert who(want) == (kind, host)   # the generator's story, as this test reads it
    got = next(a for a in attempts if a["id"] == attempt)["verdict"]
    assert who(got) == (kind, host), got.get("summary")
    if rank is not None:
        assert got["rank"] == rank


def test_a_requeue_onto_another_node_gives_the_srun_label_that_node_in_the_new_step(tmp_path, catalog):
    # --label, requeued after trn-node21 froze: the new step's task 0 runs on the spare node. Its launcher's
    # first lines (before its NCCL lines) must not take trn-node21 from the task's lines of the step before
    # (the stream's carried host, srun's report of task 0): on trn-node21's clock the new launch looked like
    # an attempt of its own, a few seconds long (a fresh requeue set of session 16: seed 27 of 15)
    truth, attempts = generated_attempts(tmp_path, "node_freeze", 27, "deepspeed_srun", catalog, mechanism="requeue")
    assert [a["outcome"] for a in truth] == ["failed", "completed"]   # the story, as read here
    assert [a["outcome"] for a in attempts] == ["failed", "completed"]
    assert who(attempts[0]["verdict"]) == ("node_failure", "trn-node21")
