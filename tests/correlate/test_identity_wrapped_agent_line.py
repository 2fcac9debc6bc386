"""torchrun's agent line 'failed (exitcode: %d) local_rank: %s (pid: %d) of binary: %s' (torch/distributed/elastic/
multiprocessing/api.py) hard-wrapped by a terminal after the exit code still names the worker: torch_elastic.toml's
failed_wrapped block keeps the two pieces one event, worker_exits.sql reads its raw text."""

from __future__ import annotations

import pytest

from .fixtures import diagnose_files

_HEADS = {
    "bracket": "[2025-08-02 21:36:19,442] torch.distributed.elastic.multiprocessing.api: [ERROR] ",
    "glog": "E0802 21:36:19.442000 139 torch/distributed/elastic/multiprocessing/api.py:869] ",
    "logging": "ERROR:torch.distributed.elastic.multiprocessing.api:",
}


@pytest.mark.parametrize("head", sorted(_HEADS))
def test_a_wrapped_agent_line_names_the_worker(tmp_path, monkeypatch, catalog, head):
    text = (_HEADS[head] + "failed (exitcode: 1)\n local_rank: 3 (pid: 4417) of binary: /usr/bin/python3\n"
            "Traceback (most recent call last):\n  File \"/usr/local/bin/torchrun\", line 8, in <module>\n"
            "    sys.exit(main())\n")
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"agent.log": text})["verdict"]
    assert (v["local_rank"], v["pid"]) == (3, 4417), v


# A terminal cuts at its width, wherever that falls after the exit code: inside the pid field (a 137-column paste),
# inside 'local_rank'.
@pytest.mark.parametrize("cut", [" local_rank: 3 (pid", " local_r", " local_rank: 3 (pid: 44"])
def test_a_line_wrapped_anywhere_after_the_exit_code_names_the_worker(tmp_path, monkeypatch, catalog, cut):
    whole = "failed (exitcode: -6) local_rank: 3 (pid: 4417) of binary: /usr/bin/python3"
    head = "failed (exitcode: -6)" + cut
    text = (_HEADS["glog"] + head + "\n" + whole[len(head):] + "\n"
            "Traceback (most recent call last):\n  File \"/usr/local/bin/torchrun\", line 8, in <module>\n"
            "    sys.exit(main())\n")
    v = diagnose_files(tmp_path, monkeypatch, catalog, {"agent.log": text})["verdict"]
    assert (v["local_rank"], v["pid"]) == (3, 4417), v
