"""The kernel's OOM report names its victim in some lines only (mm/oom_kill.c).

dump_header's '<comm> invoked oom-killer' names the task that asked for memory (by name, no pid) and comes
first; dump_oom_summary's 'oom-kill:...,pid=N' and __oom_kill_process's 'Killed process N (comm)' name the
victim. In a generated mpirun run (gen_longrun.py mpirun_slurm, seed 2) the third attempt's victim is rank 7 on
cn0037, whose pid its NCCL lines tie to rank 7; the verdict named the node only, from the report's first line,
while rank 7's own hypothesis lost (its last progress line is stamped after the kill)."""

from __future__ import annotations

from .fixtures import generated_attempts, who


def test_the_reports_first_line_names_the_victim_its_kill_line_names(tmp_path, catalog):
    truth, found = generated_attempts(tmp_path, "host_oom", 2, "mpirun_slurm", catalog)
    want = truth[2]["verdict"]
    assert who(want, "kind", "rank", "host") == ("oom", 7, "cn0037")
    v = found[2]["verdict"]
    assert who(v, "kind", "rank", "host", "pid") == ("oom", 7, "cn0037", want["pid"]), v
