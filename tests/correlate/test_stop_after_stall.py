"""A scheduler's cancel written after ranks reported a collective stuck for its whole timeout is the answer to
a job that had hung (a requeue, a user's scancel of a hung job, the time limit it hung into), not its cause: the
rank the others waited for is the culprit. A cancel of a job that was training is still the stop."""

from __future__ import annotations

import pytest

from .fixtures import diagnose_files, generated_attempts, who

NODES = {"gpu-a034": (0, 1), "gpu-a035": (2, 3), "gpu-a036": (4, 5)}
TIMEOUT = ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=165, OpType=ALLREDUCE, NumelIn=195004416, "
           "NumelOut=195004416, Timeout(ms)=60000) ran for {ms} milliseconds before timing out.")


def _console(stalled: bool) -> str:
    # srun --label, one task per rank (the label is the rank)
    out = ["0: 2026-03-02 01:39:36,991 - INFO - train - SLURM_JOB_ID=989277 SLURM_RESTART_COUNT=2 "
           "SLURM_JOB_NODELIST=gpu-a[034-036]"]
    for r in range(6):   # each rank's node, as NCCL's init line names it
        host = next(h for h, ranks in NODES.items() if r in ranks)
        out.append(f"{r}: {host}:{7000 + r}:{7007 + r} [{r % 2}] NCCL INFO ncclCommInitRank comm 0x55d0c000{r}001 "
                   f"rank {r} nranks 6 cudaDev {r % 2} nvmlDev {r % 2} busId 18000 commId 0x1 - Init COMPLETE")
    for step in range(150, 165):
        out.append(f"0: 2026-03-02 01:{40 + (step - 150) // 10:02d}:{(step * 6) % 60:02d},100 - INFO - train - "
                   f"step {step} loss 3.0{step % 10}")
    if stalled:   # rank 3 never reached collective 165: the others time out on it, a minute later
        for r, at in ((2, "01:42:31"), (5, "01:42:41"), (4, "01:42:41"), (0, "01:42:50"), (1, "01:42:50")):
            out.append(f"{r}: [rank{r}]:[E302 {at}.786664648 ProcessGroupNCCL.cpp:632] [Rank {r}] "
                       + TIMEOUT.format(ms=60000 + 100 * r))
            out.append(f"{r}: [rank{r}]:[E302 {at}.789394758 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID "
                       f"0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: [Rank {r}] "
                       + TIMEOUT.format(ms=60000 + 100 * r))
        out += [f"srun: error: {h}: tasks {ranks[0]}-{ranks[1]}: Exited with exit code 250" for h, ranks in NODES.items()]
    out.append("slurmstepd: error: *** JOB 989277 ON gpu-a034 CANCELLED AT 2026-03-02T01:42:53 DUE TO JOB REQUEUE ***")
    return "\n".join(out) + "\n"


def test_a_requeue_after_the_ranks_timed_out_is_not_the_cause(tmp_path, monkeypatch, catalog):
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"slurm-989277.out": _console(stalled=True)})["verdict"]
    assert v["kind"] == "hang", v
    assert (v["rank"], v["host"]) == (3, "gpu-a035"), v


@pytest.mark.parametrize("stalled", [False])
def test_a_requeue_of_a_training_job_is_the_stop(tmp_path, monkeypatch, catalog, stalled):
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"slurm-989277.out": _console(stalled)})["verdict"]
    assert v["kind"] == "cancelled", v


def test_a_requeued_hang_on_three_clocks_names_the_rank_the_others_waited_for(tmp_path, catalog):
    # DeepSpeed under srun, three nodes minutes apart: the third attempt's requeue came a second after the
    # tasks exited; it was chosen over the rank missing from the timed-out collective (a tie, 0.22 each)
    truth, found = generated_attempts(tmp_path, "hang", 27, "deepspeed_srun", catalog)
    assert who(truth[2]["verdict"], "kind", "rank", "host") == ("hang", 3, "gpu-a035")
    assert who(found[2]["verdict"], "kind", "rank", "host") == ("hang", 3, "gpu-a035"), found[2]["verdict"]
