"""A console of several nodes whose lines name no host but a rank (DeepSpeed under srun: its launcher's
`[Rank 0] step=...` lines, torch's `[rankN]:` lines, no srun label on them) holds each rank's lines on its own
node's clock. Cut by the job's one cut on the console's clock, a rank whose node runs minutes behind had its
first lines of the next attempt read as the last one's: the first attempt 'trained on' past its failure. The
cut of a rank's lines is its node's (attempts.write_class_cuts, rkey), as srun's tasks' are (test_task_clock_cuts)."""

from __future__ import annotations

from .fixtures import generated_attempts, who


def test_a_ranks_lines_are_cut_on_its_nodes_clock(tmp_path, catalog):
    truth, got = generated_attempts(tmp_path, "exception", 27, "deepspeed_srun", catalog)
    assert who(truth[0]["verdict"], "kind", "rank", "host") == ("exception", 2, "dgx-h100-025")
    assert [a["outcome"] for a in got] == ["failed", "failed"], got
    assert who(got[0]["verdict"], "kind", "rank", "host") == ("exception", 2, "dgx-h100-025"), got[0]["verdict"]
