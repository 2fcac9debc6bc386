"""An agent's exit barrier is no proof of a clean end (torch/distributed/elastic/agent/server/api.py).

`_exit_barrier` logs 'Local worker group finished (<state>)' and, once every agent arrived, 'Done waiting for
other agents'. torch 2.13 enters it only after its group SUCCEEDED; torch 1.9-2.0's `_invoke_run` also enters it
after its last restart FAILED (and formats the state as 'FAILED', the str-valued enum in an f-string). Read as a
clean end, that 'Done waiting' made a failed job `none` at 0.85."""

from __future__ import annotations

from .fixtures import diagnose_files

_AGENT = "INFO:torch.distributed.elastic.agent.server.api:"
_FAILED_RUN = (
    f"{_AGENT}[default] Starting worker group\n"
    "[rank0]:epoch 3 step 1200 loss 2.113\n"
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 4242) of binary: "
    "/usr/bin/python3\n"
    f"{_AGENT}Local worker group finished (FAILED). Waiting 300 seconds for other agents to finish\n"
    f"{_AGENT}Done waiting for other agents. Elapsed: 0.0006 seconds\n")


def test_an_old_agents_exit_barrier_after_a_failed_group_is_no_clean_end(tmp_path, monkeypatch, catalog):
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"node-a1.log": _FAILED_RUN})["verdict"]
    assert v["kind"] != "none", v
    assert (v["host"], v["local_rank"], v["pid"]) == ("node-a1", 0, 4242), v


def test_a_group_that_succeeded_before_its_exit_barrier_is_still_a_clean_end(tmp_path, monkeypatch, catalog):
    ok = (f"{_AGENT}[default] Starting worker group\n"
          "[rank0]:epoch 3 step 1200 loss 2.113\n"
          f"{_AGENT}[default] worker group successfully finished. Waiting 300 seconds for other agents to finish.\n"
          f"{_AGENT}Local worker group finished (SUCCEEDED). Waiting 300 seconds for other agents to finish\n"
          f"{_AGENT}Done waiting for other agents. Elapsed: 0.0006 seconds\n")
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"node-a1.log": ok})["verdict"]
    assert v["kind"] == "none", v
