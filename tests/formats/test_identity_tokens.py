"""Identity tokens (parsers/identity.toml), measured by shape rather than by sample.

Every token sample that names an identity is put behind every prefix the catalogue knows (none, a
log timestamp, a glog header, the launchers' and collectors' prefixes: pdsh, srun --label, Open MPI
--tag-output, Ray, kubectl --prefix, CRI, journald, a quoted paste) and parsed as a file of its own,
as ingest parses one; the values the token names must come out on the line, except where the
prefix itself names that column (the envelope speaks for the line first). Then the stream: a rank
file's host, named on its NCCL lines only, reaches every line of the stream, the head's lines before
the first NCCL line included, however the file is chunked; a console of two hosts carries none."""

from __future__ import annotations

import re

import pytest

from ranktrace.formats import FOUND_TABLE, load_catalog
from ranktrace.ingest import core
from ranktrace.samples import run_text

CAT = load_catalog(check_samples=False)

# (name, prefix, the columns the prefix itself names: {column: value}, whether it is an envelope:
# peeled, so that the line's body starts after it; a text prefix names its columns only when its
# own format claims the line, so they are not checked). srun's task is a weak rank: a token's
# rank replaces it. (A bare ISO time before 'Word Word: ...' was read as a syslog line by envelope
# syslog_rfc3339, host 'Initializing' of Lightning's 'Initializing distributed: ...': its host now
# starts in lower case; context kubectl_timestamps holds it.)
CONTEXTS = [
    ("bare", "", {}, True),
    ("python_logging", "2026-03-02 03:17:41,200 - root - ERROR - ", {}, False),
    ("glog", "E0302 03:17:41.200000 4242 site-packages/x.py:10] ", {"pid": "4242"}, False),
    ("timestamp_brackets", "[2026-03-02 03:17:41] ", {}, False),
    ("pdsh_host", "gpu-a07: ", {"host": "gpu-a07"}, True),
    ("pdsh_ip", "10.0.3.6: ", {"host": "10.0.3.6"}, True),
    ("srun_label", "  3: ", {"task": "3"}, True),
    ("mpirun_tag", "[1,6]<stderr>:", {"rank": "6"}, True),
    # horovodrun's Gloo launcher (safe_shell_exec.py forward_stream '{time}[{rank}]<{prefix}>:'), Determined's
    # wrap_rank.py ('[rank={rank}] ')
    ("horovod_tag", "[6]<stderr>:", {"rank": "6"}, True),
    ("horovod_tag_asctime", "Sat Sep  5 06:02:11 2020[6]<stdout>:", {"rank": "6"}, True),
    ("determined_rank", "[rank=6] ", {"rank": "6"}, True),
    ("ray_actor", "(RayTrainWorker pid=4242, ip=10.1.2.3) ", {"pid": "4242", "host": "10.1.2.3"}, True),
    ("kubectl_prefix", "[pod/trainer-0/pytorch] ", {"pod": "trainer-0", "container": "pytorch"}, True),
    ("cri", "2026-03-02T03:17:41.123456789Z stderr F ", {}, True),
    ("journald", "Mar 02 03:17:41 gpu-a07 python[4242]: ", {"host": "gpu-a07", "pid": "4242"}, True),
    ("quoted", "> ", {}, True),
    # torchrun's own prefixes (rank_prefix, elastic_prefix_template): the envelope's rank speaks first
    ("torch_rank", "[rank5]:", {"rank": "5"}, True),
    ("torch_role", "[default5]:", {"local_rank": "5"}, True),
    ("elastic_template", "[5]:", {"rank": "5"}, True),
    # nested launcher prefixes: a node's prefix around a rank's (pdsh/DeepSpeed, srun --label torchrun)
    ("pdsh_ip_torch_role", "10.0.3.6: [default5]:", {"host": "10.0.3.6", "local_rank": "5"}, True),
    ("srun_torch_rank", "  3: [rank11]:", {"task": "3", "rank": "11"}, True),
    ("cri_torch_rank", "2026-03-02T03:17:41.123456789Z stderr F [rank5]:", {"rank": "5"}, True),
    # a collector's timestamp, then torchrun's rank prefix (shared/real_log_shapes 111)
    ("minute_ts_torch_rank", " 2025-07-08 02:53 [rank5]:", {"rank": "5"}, True),
    ("ts_torch_rank", "2026-03-02 03:17:41,200 [rank5]: ", {"rank": "5"}, True),
    # Ray's driver / vLLM's workers (ray worker.py print_worker_logs; vllm _add_prefix '({name} pid={pid}) ',
    # cyan when a terminal: '\x1b[1;36m...\x1b[0m', pasted as '^[[1;36m')
    ("ray_pid_only", "(pid=4242) ", {"pid": "4242"}, True),
    ("vllm_worker_process", "(VllmWorkerProcess pid=4242) ", {"pid": "4242"}, True),
    ("vllm_worker_rank", "(VllmWorker rank=5 pid=4242) ", {"pid": "4242", "rank": "5"}, True),
    ("ray_actor_colour", "\x1b[36m(RayWorkerWrapper pid=4242, ip=10.1.2.3)\x1b[0m ", {"pid": "4242", "host": "10.1.2.3"}, True),
    ("ray_actor_caret", "^[[36m(RayWorkerWrapper pid=4242, ip=10.1.2.3)^[[0m ", {"pid": "4242", "host": "10.1.2.3"}, True),
    # Open MPI --tag-output --timestamp-output; kubectl logs --timestamps; rsyslog; the kernel's ring buffer
    ("mpirun_tag_ts", "2020-03-24T14:09:46.884Z: [1,6]<stdout>:", {"rank": "6"}, True),
    # ORTE's --timestamp-output with --tag-output: ctime() glued to the tag (iof_base_output.c '%s[%s,%s]<%s>:')
    ("mpirun_tag_ctime", "Fri Sep 25 16:52:57 2020[1,6]<stderr>:", {"rank": "6"}, True),
    ("kubectl_timestamps", "2026-03-02T03:17:41.123456789Z ", {}, True),
    ("syslog_rfc3339", "2026-03-02T03:17:41.201611+01:00 gpu-a07 kernel: ", {"host": "gpu-a07"}, True),
    ("dmesg", "[ 1234.567890] ", {}, False),
    ("dmesg_T", "[Mon Mar  2 03:17:41 2026] ", {}, False),
    # 'pdsh -w gpu[01-08] dmesg -T': the node's prefix peeled, the kernel's time left in the body
    ("pdsh_dmesg_T", "gpu-a07: [Mon Mar  2 03:17:41 2026] ", {"host": "gpu-a07"}, True, False),
    # session 26 (issue 28 point 4): the nestings the catalogue's envelopes allow and pastes show, each a pair
    # tried above alone: a collector's RFC3339 time or a node's pdsh prefix around torchrun's '[rankN]:' (kubectl
    # logs --timestamps of a torchrun pod; pdsh over torchrun), Open MPI's tag around it (mpirun over a
    # torch.distributed launcher); a BSD syslog line (rsyslog's default template: 'Mmm dd hh:mm:ss host tag[pid]: ')
    ("kubectl_timestamps_torch_rank", "2026-03-02T03:17:41.123456789Z [rank5]:", {"rank": "5"}, True),
    ("pdsh_host_torch_rank", "gpu-a07: [rank5]:", {"host": "gpu-a07", "rank": "5"}, True),
    ("mpirun_tag_torch_rank", "[1,6]<stderr>:[rank6]:", {"rank": "6"}, True),
    ("syslog_bsd", "Mar  2 03:17:41 gpu-a07 python[4242]: ", {"host": "gpu-a07", "pid": "4242"}, True),
    # a paste's own decorations, not envelopes (text is left before the token: a token anchored at the line's
    # start is not expected there): a Markdown indented code block (CommonMark: four spaces), a CI step prefix
    # (Cloud Build's 'Step #N: '), a viewer's line number ('[1763] ', identity excerpts batch 21's sources)
    ("md_code_indent", "    ", {}, False),
    ("ci_step", "Step #4: ", {}, False),
    ("line_number", "[1763] ", {}, False),
]

REJECTS = [(c, re.compile(r)) for c, r in CAT.rejects]


def _expected(expect: dict, ctx: tuple) -> dict:
    """What the line must carry: the token's values, but where the prefix names the column (it
    speaks first) and where the value names nobody (a reject)."""
    given, envelope = ctx[2], ctx[3]
    out = {}
    for c, v in expect.items():
        if c in given:
            if envelope:
                out[c] = given[c]
        elif not any(c == rc and rx.search(v) for rc, rx in REJECTS):
            out[c] = v
    return {**(given if envelope else {}), **out}




def _fits(token, text: str, ctx: tuple) -> bool:
    """A token anchored at the line's start ('^(pid=N)': Ray's prefix) is met only right behind
    envelopes (a context's optional 5th item: False when text is left between them and the token);
    torchrun's '[N]:' template prefix is followed by its payload, never by blanks (its failure
    summary's bare '[1]:' entry headers are not a prefix)."""
    bare_body = ctx[4] if len(ctx) > 4 else ctx[3]
    if token.regex.startswith("^") and not bare_body:
        return False
    return not (ctx[0] == "elastic_template" and text[:1].isspace())


CASES = [(t.id, text, expect, ctx) for t in CAT.tokens for text, expect in t.samples if expect
         for ctx in CONTEXTS if _fits(t, text, ctx)]
TOKENS = {t.id: t for t in CAT.tokens}


def _first(text: str) -> dict:
    ev = run_text(CAT, text).events.to_dicts()
    assert ev, text
    return ev[0]


@pytest.mark.parametrize("token,text,expect,ctx", CASES, ids=[f"{c[0]}-{c[3][0]}" for c in CASES])
def test_token_value_comes_out_behind_every_prefix(token, text, expect, ctx):
    """The token's values come out on the line; a link (a column of another machine than the
    line's) comes out in the token's identity_found row instead, beside what it links."""
    name, prefix = ctx[:2]
    res = run_text(CAT, prefix + text)
    e = res.events.to_dicts()[0]
    links = {c: v for c, v in expect.items() if c in TOKENS[token].links}
    want = _expected({c: v for c, v in expect.items() if c not in links}, ctx)
    got = {c: (None if e.get(c) is None else str(e[c])) for c in want}
    assert got == want, f"{token} behind {name}: {prefix + text!r} ({e['format']}, envelopes {e['envelopes']})"
    if links:
        rows = [r for r in res.facts[FOUND_TABLE].to_dicts() if r["token"] == token]
        assert [{c: str(r[c]) for c in links} for r in rows] == [links], rows


def test_every_context_and_token_is_exercised():
    """The table above is not vacuous: every token with a positive sample is in it, and at least one
    case per context fills a column from a token (the identity_found row says so)."""
    with_values = {t.id for t in CAT.tokens if any(e for _, e in t.samples)}
    assert with_values == {c[0] for c in CASES}
    for name, prefix, *_ in CONTEXTS:
        rows = 0
        for t in CAT.tokens:
            for text, expect in t.samples:
                if expect:
                    res = run_text(CAT, prefix + text)
                    rows += len(res.facts.get(FOUND_TABLE, []))
        assert rows > 0, name


def test_a_token_fills_only_what_the_line_left_empty():
    """The line's own pattern speaks first: an NCCL line's host is its prefix's, not a Ray
    worker IP later in its message; the basis row names only what the token filled."""
    res = run_text(CAT, "gpu-b07:4412:4490 [1] NCCL INFO connected to (RayTrainWorker pid=99, ip=10.9.9.9)")
    e = res.events.to_dicts()[0]
    assert (e["host"], e["pid"]) == ("gpu-b07", 4412)
    rows = res.facts[FOUND_TABLE].to_dicts()
    assert [r["token"] for r in rows] == ["stream:nccl.line"], "no token filled anything; the line names its stream"


def test_a_process_group_rank_is_not_the_global_rank():
    """'[PG ID 2 ... Rank 0]' blocks the bare '[Rank 0]' after it; the default group's does not."""
    e = _first("[E1108 10:52:31.5 ProcessGroupNCCL.cpp:616] [PG ID 2 PG GUID 3 Rank 0] [Rank 0] Watchdog caught "
               "collective operation timeout: WorkNCCL(SeqNum=4, OpType=ALLREDUCE)")
    assert e["rank"] is None
    e = _first("[E1108 10:52:31.5 ProcessGroupNCCL.cpp:616] [PG ID 0 PG GUID 0(default_pg) Rank 5] Exception "
               "(either an error or timeout) detected by watchdog at work: 808")
    assert e["rank"] == 5


def test_a_link_is_not_put_on_the_line():
    """srun writes 'srun: error: NODE: task N' where srun runs, not on NODE: the line's host (its
    clock) stays unnamed, the node is a link of the task in identity_found."""
    res = run_text(CAT, "srun: error: nid001277: tasks 1-3: Out Of Memory")
    e = res.events.to_dicts()[0]
    assert (e["host"], e["task"]) == (None, 1)
    assert [(r["token"], r["host"], r["task"]) for r in res.facts[FOUND_TABLE].to_dicts()] == \
        [("srun_task_error", "nid001277", 1)]


def test_a_value_that_names_nobody_is_left_out():
    e = _first("NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus.")
    assert (e["gpu"], e["pid"]) == ("0000:09:00", None)


def test_the_basis_row_names_the_token():
    res = run_text(CAT, "launching: MASTER_ADDR=gpu-a01 MASTER_PORT=29500 RANK=12 LOCAL_RANK=4 WORLD_SIZE=16")
    rows = res.facts[FOUND_TABLE].to_dicts()
    assert [(r["token"], r["rank"], r["local_rank"], r["stream"]) for r in rows] == \
        [("env_rank", 12, None, None), ("env_local_rank", None, 4, None)]


def test_a_rank_prefix_behind_a_time_is_peeled_and_its_line_parsed():
    """'<time> [rank3]: ...' (envelope ts_rank_prefix): the time and the rank are the line's, and the payload
    is parsed as if the prefixes were not there (a CUDA OOM, not a raw line with a rank)."""
    e = _first("2024-05-01 10:00:00,123 [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert (e["rank"], e["kind"], e["envelopes"]) == (3, "gpu_oom", "ts_rank_prefix>rank_prefix")
    assert str(e["ts"]).startswith("2024-05-01 10:00:00.123")


# ---------------------------------------------------------------- stream

RANK_FILE = "\n".join([
    "[rank3]:W0302 03:00:00.100000 4242 torch/distributed/run.py:792] Setting OMP_NUM_THREADS",
    "[rank3]:step 0 loss 1.4142 lr 3.0e-04",
    "[rank3]:trn-node02:40003:40103 [3] NCCL INFO Channel 02/0 : 3 -> 4 via P2P/IPC/read",
    "[rank3]:trn-node02:40003:40107 [3] NCCL INFO comm 0x55d0003 rank 3 nranks 64 cudaDev 3 busId 4000 "
    "commId 0x9f3c2e11a0b4 - Init COMPLETE",
    *[f"[rank3]:step {i} loss 1.{i:04d} lr 3.0e-04" for i in range(1, 400)],
    "[rank3]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
])


def _parse(text: str, chunk: int | None = None):
    parser = core.file_parser(CAT, 1, "attempt_0/3/stderr.log", {})
    data = text.encode()
    step = chunk or len(data)
    for i in range(0, len(data), step):
        parser.feed(data[i:i + step], i + step >= len(data))
    ev, classes, facts = core.whole(core.batches(parser))
    return core.widen(ev, classes).to_pylist(), facts


@pytest.mark.parametrize("chunk", [None, 37, 4096])
def test_a_rank_files_host_reaches_every_line(chunk):
    rows, facts = _parse(RANK_FILE, chunk)
    assert {r["host"] for r in rows} == {"trn-node02"}, "the head's lines before the NCCL line too"
    assert {r["rank"] for r in rows} == {3}
    basis = [r for b in facts[FOUND_TABLE] for r in b.to_pylist()]
    assert [(r["token"], r["stream"], r["host"], r["rank"]) for r in basis] == \
        [("stream:nccl.line", "envelope", "trn-node02", 3)]


def test_a_console_of_two_hosts_carries_neither():
    """Interleaved lines of two processes without a prefix that tells them apart: the first host must
    not be put on the other's lines (the stream stops carrying once it names two values)."""
    text = "\n".join([
        "gpu-a01:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "gpu-a02:200:200 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>",
        *[f"step {i} loss 1.0" for i in range(50)],
    ])
    rows, _ = _parse(text)
    assert [r["host"] for r in rows[:2]] == ["gpu-a01", "gpu-a02"]
    assert {r["host"] for r in rows[2:]} == {None}


def test_each_envelope_stream_keeps_its_own_host():
    text = "\n".join(f"[rank{r}]:{h}:{40000 + r}:{40100 + r} [0] NCCL INFO Channel 00/0 : 0 -> 1\n[rank{r}]:step 1 loss 1.0"
                     for r, h in ((0, "n1"), (8, "n2"), (1, "n1"), (9, "n2")))
    rows, _ = _parse(text)
    assert {(r["rank"], r["host"]) for r in rows} == {(0, "n1"), (8, "n2"), (1, "n1"), (9, "n2")}
