"""Whom the text names (issue 28, session 20).

The dev excerpts' misses at the start of session 20, each covered as the family of forms its emitter prints
(written from the emitter's source, not from the excerpt): Flux's job-exec exceptions that name the node of the
job shell that failed ('... on broker H (rank N)', '... on H (shell rank N)': the rank is Flux's, one per node)."""

from __future__ import annotations

import pytest

from .fixtures import diagnose_files


@pytest.mark.parametrize("line, host", [
    # flux-core src/cmd/job/attach.c prints the job's exceptions: '%.3fs: job.exception type=%s severity=%d %s'; the
    # note of job-exec's fatal error (src/modules/job-exec/bulkexec.c): '%s on broker %s (rank %d): %s'
    ("0.731s: job.exception type=exec severity=0 job shell exec error on broker lassen12 (rank 5): "
     "No such file or directory", "lassen12"),
    # the same module when the command could not even be built (exec.c): 'job shell exec error on %s (rank %d)'
    ("0.219s: job.exception type=exec severity=0 job shell exec error on lassen7 (rank 1)", "lassen7"),
])
def test_a_flux_job_shell_exec_error_names_the_brokers_node_not_a_rank(tmp_path, monkeypatch, catalog, line, host):
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"flux_run.out": (
        "$ flux run -N8 -n32 python train.py\n"
        f"{line}\n"
        "flux-job: task(s) exited with exit code 1\n")})
    v = d["verdict"]
    assert v["kind"] == "exception", v
    assert v["host"] == host, v
    assert v["rank"] is None, v   # (rank N) is the broker's, not a training rank


def test_flux_dmesg_job_exception_is_the_jobs_failure_on_the_named_node(tmp_path, monkeypatch, catalog):
    # `flux dmesg -H`: the job-exec module's log of the same exception ('job-exec[%d]: job-exception: id=%ju: %s')
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"dmesg.txt": (
        "[Mar11 09:02] sched-simple[0]: alloc: 48210391023616: rank6/core[0-3]\n"
        "[  +0.402118] job-exec[0]: job-exception: id=48210391023616: job shell exec error on broker lassen40 "
        "(rank 6): Protocol error\n"
        "[  +0.917334] sched-simple[0]: free: rank6/core[0-3]\n")})
    v = d["verdict"]
    assert v["kind"] == "exception", v
    assert v["host"] == "lassen40", v
    assert v["rank"] is None, v


def test_a_get_pods_row_in_backticks_cut_after_its_status_names_the_pod(tmp_path, monkeypatch, catalog):
    # 'kubectl get pods -A' (printPod: NAMESPACE NAME READY STATUS RESTARTS AGE) pasted as Markdown inline code and
    # cut after STATUS
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"paste.txt": (
        "`ml-jobs          bert-pretrain-worker-3                                    0/1     OOMKilled`\n")})
    v = d["verdict"]
    assert v["kind"] == "oom", v
    assert v["pod"] == "bert-pretrain-worker-3", v


def test_a_get_pods_watch_row_beside_a_split_terminals_pane_names_the_pod(tmp_path, monkeypatch, catalog):
    # 'kubectl get pods -w' in one pane of a split terminal, the pod's log in the other: every row ends at the border
    pane = " " * 30 + "│"
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"panes.txt": (
        "$ kubectl get pods -w\n"
        f"infer-worker-6c9d7b5f48-x2kq9   1/1     Running   0             12m{pane}INFO: 2025-03-02 10:41:07 worker - batch 412 done in 0.8 s\n"
        f"infer-worker-6c9d7b5f48-x2kq9   0/1     Evicted   0             13m{pane}INFO: 2025-03-02 10:41:08 worker - batch 413 done in 0.9 s\n"
        f"infer-worker-6c9d7b5f48-b7mtn   0/1     Pending   0             0s {pane}WARNING: 2025-03-02 10:41:09 worker - lost the lease, retrying\n")})
    v = d["verdict"]
    assert v["kind"] in ("cancelled", "oom"), v
    assert v["pod"] == "infer-worker-6c9d7b5f48-x2kq9", v
    assert v["host"] is None, v   # the pane's words are no node


def test_a_progress_line_is_no_pod_row(catalog):
    # the cut form needs a failure's status: 'epoch 1/10 Loss' is a progress line, not 'NAME READY STATUS'
    from ranktrace.samples import run_text
    ev = run_text(catalog, "epoch 1/10 Loss 0.318").events
    assert "kubectl_get.pod_row" not in ev["pattern"].to_list()


def _ds_report(kills: list[int], local_rank: int, code: int = 1) -> str:
    # deepspeed/launcher/launch.py main(): 'for local_proc in range(0, num_local_procs): cmd = [..., f"--local_rank=
    # {local_proc}", ...]'; sigkill_handler logs 'Killing subprocess {pid}' for every process, then
    # logger.error(f"{cmd} exits with return code = {last_return_code}"): `cmd` is the loop's last, not the failed one's
    lines = [f"[2024-05-02 11:20:0{i},114] [INFO] [launch.py:315:sigkill_handler] Killing subprocess {p}"
             for i, p in enumerate(kills)]
    lines.append(f"[2024-05-02 11:20:09,361] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', "
                 f"'train.py', '--local_rank={local_rank}', '--deepspeed', 'ds.json'] exits with return code = {code}")
    return "\n".join(lines) + "\n"


def test_a_deepspeed_report_showing_one_kill_of_several_processes_names_no_local_rank(tmp_path, monkeypatch, catalog):
    # '--local_rank=3' says four processes were spawned; a paste showing one kill lost the others: the killed pid
    # shown and the last-spawned command are not the failed process
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"ds.log": _ds_report([48217], 3)})
    v = d["verdict"]
    assert v["kind"] == "exception", v
    assert v["local_rank"] is None and v["pid"] is None, v


def test_a_deepspeed_report_of_its_only_process_names_it(tmp_path, monkeypatch, catalog):
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"ds.log": _ds_report([48217], 0, code=-9)})
    v = d["verdict"]
    assert (v["local_rank"], v["pid"]) == (0, 48217), v


def test_torch_c10d_lines_in_plain_glog_form_are_read_with_their_rank_and_time(tmp_path, monkeypatch, catalog):
    # torch logging through glog (c10/util/Logging.cpp with C10_USE_GLOG; ROCm builds): glog's own header
    # 'Lmmdd hh:mm:ss.uuuuuu threadid file:line] ' (src/logging.cc), no brackets, before ProcessGroupNCCL's messages
    # (createLogPrefix '[PG 0 (default_pg) Rank 2] ', checkTimeout '[Rank 1] Watchdog caught ...')
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"train.log": (
        "I0714 09:12:03.118204 30211 ProcessGroupNCCL.cpp:869] [PG 0 Rank 2] ProcessGroupNCCL initialization options: "
        "size: 4, global rank: 2, TIMEOUT(ms): 600000\n"
        "E0714 09:31:47.552310 30290 ProcessGroupNCCL.cpp:1595] [PG 0 (default_pg) Rank 2] Process group watchdog thread "
        "terminated with exception: CUDA error: an illegal memory access was encountered\n"
        "E0714 09:41:48.001233  4288 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=5120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600049 milliseconds "
        "before timing out.\n")})
    v = d["verdict"]
    assert v["kind"] == "cuda_error", v
    assert v["rank"] == 2, v
    assert v["time"] is not None and v["time"][5:19] == "07-14T09:31:47", v


def test_an_nccl_connect_failure_names_the_process_that_could_not_connect(tmp_path, monkeypatch, catalog):
    # src/misc/socket.cc: the process whose connect failed WARNs 'socketStartConnect: Connect to %s failed : %s' (any
    # errno: here ECONNABORTED), the others of its node only unwind ('NCCL INFO <file>:<line> -> 2')
    d = diagnose_files(tmp_path, monkeypatch, catalog, {"nccl.log": (
        "gx-b3:7730:7801 [2] NCCL INFO bootstrap.cc:270 -> 2\n"
        "gx-b3:7730:7801 [2] NCCL INFO init.cc:1350 -> 2\n"
        "gx-b3:7728:7799 [0] NCCL INFO bootstrap.cc:270 -> 2\n"
        "\n"
        "gx-b3:7731:7803 [3] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.8.1.4<40319> failed : "
        "Software caused connection abort\n"
        "gx-b3:7731:7803 [3] NCCL INFO misc/socket.cc:564 -> 2\n")})
    v = d["verdict"]
    assert v["kind"] == "network_error", v
    assert (v["host"], v["pid"]) == ("gx-b3", 7731), v
