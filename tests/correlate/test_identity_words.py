"""The culprit in the words of its own cause line (issue 28, session 13; queries/data/verdict_naming.toml
[words], correlate/naming.py from_words).

Eight batches of public excerpts showed the same thing at first sight: the verdict found the cause line
and its kind, but the wording that named the culprit in it ('Worker 2 pid 1877305 died', 'rank=[1]',
'(IP: 10.0.0.7)', 'on node gw-2') was one no identity token had been written for yet, and a token
written for one emitter did not carry over to the next batch's. The generic words for a rank, pid,
host and PCI id are read from the verdict's own cause lines, for a column left empty, and the verdict
says so and stays under [words].cap. A symptom's words (a peer's address) are never read."""

from __future__ import annotations

import pytest

from ranktrace.correlate.naming import rules, words_named

from .fixtures import diagnose_files

ALL = ("rank", "pid", "host", "gpu")


@pytest.mark.parametrize("text,want", [
    # a logging format that writes its own key=value fields (structlog, a custom %(rank)s formatter)
    ("ERROR trainer: rank=2 pid=48213 torch.OutOfMemoryError: CUDA out of memory.", {"rank": "2", "pid": "48213"}),
    # vLLM / Ray's 'rank=[r]', Open MPI's 'process rank N with PID N on node X'
    ("RayWorkerProc rank=[1] died unexpectedly", {"rank": "1"}),
    ("process rank 3 with PID 2391 on node gw-node-2 exited on signal 11 (Segmentation fault).",
     {"rank": "3", "pid": "2391", "host": "gw-node-2"}),
    # an IPv4 address said to be a node's, and a PCI bus id with its domain
    ("Memory on the node (IP: 10.31.4.22, ID: 8f1c) where the task was running was 30.1GB / 31.2GB",
     {"host": "10.31.4.22"}),
    ("GPU 0000:3B:00.0 has fallen off the bus", {"gpu": "0000:3b:00.0"}),
])
def test_the_generic_words_name_the_culprit(text, want):
    assert words_named([text], ALL) == want


@pytest.mark.parametrize("text", [
    "[PG ID 2 PG GUID 3 Rank 1] torch.OutOfMemoryError: CUDA out of memory.",   # a process group's rank
    "nnodes=2, num_local_procs=4, node_rank=1, local_rank=3, nranks 8",         # other numbers
    "Abort(1) on node 3 (rank 3 in comm 0): fatal error",                        # MPICH's node is a rank
    "listening on host localhost port 29500 (pid 0)",                            # names nobody
    # a line that speaks of a peer or the remote end names another machine (NCCL net_ib.cc, Gloo)
    "NET/IB : Got completion from peer 10.1.2.3<40123> with status=12 node_ip=10.1.2.3",
    "Connection closed by remote on host gw-node-3",
])
def test_words_that_name_nobody_or_somebody_else_give_nothing(text):
    got = words_named([text], ALL)
    assert "host" not in got and "pid" not in got, got
    if "PG ID" in text or "node_rank" in text:
        assert "rank" not in got, got


def test_two_values_for_a_column_name_none():
    assert words_named(["worker pid 100 died", "worker pid 200 died"], ("pid",)) == {}


def _verdict(tmp_path, monkeypatch, catalog, files: dict[str, str]) -> dict:
    return diagnose_files(tmp_path, monkeypatch, catalog, files)


def test_a_cause_line_in_an_unknown_layout_names_its_rank_and_pid(tmp_path, monkeypatch, catalog):
    # a trainer's own logging format ('%(asctime)s %(levelname)s %(name)s: rank=%(rank)s pid=%(process)d
    # %(message)s'): no identity token knows it; the CUDA OOM is read, and now whose it was
    d = _verdict(tmp_path, monkeypatch, catalog, {"train.log": (
        "2024-06-03 11:20:41,118 INFO trainer: rank=2 pid=48213 step 100 loss 2.31\n"
        "2024-06-03 11:22:13,402 ERROR trainer: rank=2 pid=48213 torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n")})
    v = d["verdict"]
    assert (v["kind"], v["rank"], v["pid"]) == ("gpu_oom", 2, 48213), v
    assert v["confidence"] <= rules().words_cap
    assert any("read from the words of the cause line" in m for m in d["missing"]), d["missing"]
    assert "rank 2" in v["summary"], v["summary"]


def test_a_peers_address_in_a_transport_error_is_not_the_culprits(tmp_path, monkeypatch, catalog):
    # NCCL net_ib.cc 'Got completion from peer %s with status=%d': the peer is not the reporter, and a
    # network error is not a kind whose culprit the words name
    d = _verdict(tmp_path, monkeypatch, catalog, {"n.log": (
        "[2024-06-03 11:22:13] NCCL WARN NET/IB : Got completion from peer 10.1.2.3<40123> with status=12 "
        "opcode=0 len=0 vendor err 129 (Recv) hca mlx5_0 node_ip=10.1.2.3\n")})
    assert d["verdict"]["host"] != "10.1.2.3", d["verdict"]


def test_failure_like_lines_no_rule_reads_still_name_whom_their_words_name(tmp_path, monkeypatch, catalog):
    # a supervisor whose layout no format knows: the verdict stays unknown (no rule ties the line to a
    # kind) but says whom the line names (correlate/clean_end.py no_failure_verdict)
    d = _verdict(tmp_path, monkeypatch, catalog, {"sup.log": (
        "2024-06-03 11:20:41,118 INFO step 100 loss 2.31\n"
        "2024-06-03 11:22:13,402 ERROR supervisor: worker pid 48213 on host gpu-a07 was killed by signal 9 (SIGKILL)\n")})
    v = d["verdict"]
    assert (v["kind"], v["pid"], v["host"]) == ("unknown", 48213, "gpu-a07"), v
    assert v["confidence"] <= 0.3


def test_a_launchers_command_line_rank_is_not_read():
    # deepspeed/launcher/launch.py sigkill_handler prints the LAST spawned cmd, not the failed one's
    assert words_named(["cmd = ['/usr/bin/python', '-u', 'train.py', '--rank 3', '--local_rank=3']"], ALL) == {}


@pytest.mark.parametrize("text,want", [
    # a machine's name after its word (logfmt, Slurm's scontrol BatchHost=, torch elastic's 'host : X' table row)
    ("level=error host=gpu-a07 msg=\"worker exited\"", "gpu-a07"),
    ("JobState=FAILED Reason=NonZeroExitCode BatchHost=cn0012", "cn0012"),
    ("  host      : gpu-node-7.cluster.local", "gpu-node-7.cluster.local"),
    ("hostname=trainbox7.", "trainbox7"),
    # bash's default prompts before a command that runs here
    ("alice@gpu-node-3:~/work$ torchrun --nproc_per_node 8 train.py", "gpu-node-3"),
    ("root@3f2a9c1b7d4e:/workspace# python train.py", "3f2a9c1b7d4e"),
    ("(base) [alice@dgx07 run]$ python -m train", "dgx07"),
])
def test_a_machines_name_after_its_word_or_in_a_prompt(text, want):
    assert words_named([text], ("host",)) == {"host": want}


@pytest.mark.parametrize("text", [
    "node: 3",                                                            # an index, not a name
    "rdzv_endpoint host=gpu-7:29500",                                    # an endpoint (master, port)
    "HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded",   # a server
    "[alice@login01 run]$ sbatch train.sbatch",                           # a login node: the job runs elsewhere
    "alice@login01:~/run$ srun -N 2 python train.py",
    "mail alice@example.com: done",                                       # an address, no prompt
])
def test_names_that_are_not_the_failed_machine(text):
    assert "host" not in words_named([text], ("host",)), text


def test_the_one_machine_a_paste_names_is_the_culprits(tmp_path, monkeypatch, catalog):
    # a traceback pasted with the prompt it ran under: no line of a known format names a host, the
    # prompt does, and it is the only machine the text names (naming.text_names)
    d = _verdict(tmp_path, monkeypatch, catalog, {"paste.log": (
        "alice@gpu-a07:~/llm$ python train.py --config big.yaml\n"
        "Traceback (most recent call last):\n"
        "  File \"train.py\", line 88, in <module>\n"
        "    main()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
        "of 79.15 GiB of which 1.02 GiB is free.\n")})
    v = d["verdict"]
    assert (v["kind"], v["host"]) == ("gpu_oom", "gpu-a07"), v
    assert v["confidence"] <= rules().words_cap
    assert any("host gpu-a07 the only one the text names" in m for m in d["missing"]), d["missing"]


def test_two_machines_in_the_text_name_none(tmp_path, monkeypatch, catalog):
    d = _verdict(tmp_path, monkeypatch, catalog, {"paste.log": (
        "alice@gpu-a07:~/llm$ python train.py --config big.yaml\n"
        "level=info host=gpu-a08 msg=\"loader ready\"\n"
        "Traceback (most recent call last):\n"
        "  File \"train.py\", line 88, in <module>\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")})
    assert d["verdict"]["host"] is None, d["verdict"]

