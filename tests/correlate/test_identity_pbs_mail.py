"""A Torque/PBS job mail names the job and, when the job ran on one node, the node: torque src/server/svr_mail.c
send_the_mail's default body 'PBS Job Id: %i' / 'Job Name:   %j' / 'Exec host:  %h' (the exec_host attribute, every
slot: 'n1/0+n1/1+n2/0') / '%m' (the mail point's message) / '%d' (the details: the server's 'Job exceeded its walltime
limit. Job was aborted', Moab's 'MOAB_INFO:  job exceeded wallclock limit', 'job preempted (node failure)').
parsers/formats/pbs_mail.toml reads one mail as one event; verdict_naming.toml [words] reads its Exec host."""

from __future__ import annotations

import pytest

from .fixtures import diagnose_files


def _mail(exec_host: str, *details: str) -> str:
    return "\n".join(["PBS Job Id: 5120.sched-ib0", "Job Name:   train_lm", f"Exec host:  {exec_host}", *details]) + "\n"


_MOAB_WALLCLOCK = ("job deleted", "Job deleted at request of root@sched-ib0", "MOAB_INFO:  job exceeded wallclock limit")
_TORQUE_WALLTIME = ("Aborted by PBS Server ", "Job exceeded its walltime limit. Job was aborted",
                    "See Administrator for help", "Exit_status=-11", "resources_used.walltime=72:00:25")


@pytest.mark.parametrize("details", [_MOAB_WALLCLOCK, _TORQUE_WALLTIME])
@pytest.mark.parametrize("exec_host", ["gpu-r4n07/0", "gpu-r4n07/0+gpu-r4n07/1+gpu-r4n07/2+gpu-r4n07/3"])
def test_a_time_limit_on_one_node_names_it(tmp_path, monkeypatch, catalog, details, exec_host):
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"job.mail": _mail(exec_host, *details)})["verdict"]
    assert v["kind"] == "time_limit", v
    assert v["host"] == "gpu-r4n07", v


def test_a_time_limit_on_several_nodes_names_no_node(tmp_path, monkeypatch, catalog):
    v = diagnose_files(tmp_path, monkeypatch, catalog,
                       {"job.mail": _mail("gpu-1-12/2+gpu-2-10/17+gpu-1-8/17", *_TORQUE_WALLTIME)})["verdict"]
    assert v["kind"] == "time_limit", v
    assert v["host"] is None, v


def test_a_preemption_for_node_failure_names_the_node(tmp_path, monkeypatch, catalog):
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"job.mail": _mail(
        "gpu-2-17/5", "job deleted", "Job deleted at request of root@fe1.local", "job preempted (node failure)")})["verdict"]
    assert v["kind"] == "node_failure", v
    assert v["host"] == "gpu-2-17", v


def test_a_memory_limit_is_oom(tmp_path, monkeypatch, catalog):
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"job.mail": _mail(
        "c-2-7/0", "Aborted by PBS Server ", "Job exceeded a memory resource limit (vmem, pvmem, etc.). Job was aborted",
        "See Administrator for help")})["verdict"]
    assert v["kind"] == "oom", v
