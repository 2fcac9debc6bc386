"""PyTorch's lines: the ProcessGroupNCCL watchdog and c10d (C++, c10 glog header, '[rankN]:' log prefix),
the torchrun elastic agent (Python glog-style header), worker tracebacks and torchrun's failure summary.

Sources:
- torch 2.13.0 as installed in /opt/ranktrace-torch (torch/distributed/elastic/agent/server/api.py: the
  agent's messages and their line numbers 553/707/715/733/942/932/962/985/1000; multiprocessing/api.py
  1002/1028; errors/__init__.py: the ChildFailedError template and 'Signal %d (%s) received by PID %d');
  a real `torchrun --max-restarts=2` run on this machine (the restart sequence: 'failed (exitcode)',
  'Worker group FAILED. 2/2 attempts left; will restart worker group', 'Stopping worker group',
  'Rendezvous'ing worker group', 'Rendezvous complete ... restart_count=1', 'Starting worker group');
  sample_logs/torchrun_* (launch configs, RendezvousTimeoutError and ChildFailedError tracebacks).
- ProcessGroupNCCL.cpp texts from shared/real_log_shapes 020, 022, 108 and the catalog's samples
  (parsers/formats/torch_c10d.toml): 'Watchdog caught collective operation timeout: WorkNCCL(SeqNum=..)',
  'Exception (either an error or timeout) detected by watchdog at work: ..' (torch 2.3-2.4) and
  ' failure detected by watchdog at work sequence id: .. PG status: ..' (2.5+), 'Some NCCL operations
  have failed or timed out...', 'To avoid data inconsistency, we are taking the entire process down.',
  'Process group watchdog thread terminated with exception: ...', the async 'raised the following
  async exception: NCCL error: remote process exited or there was a network error'.
- c10d socket.cpp 'The client socket has failed to connect to [host]:29500 (errno: 111 - Connection
  refused).' (gen_noisy.py; torch/csrc/distributed/c10d/socket.cpp).
"""

from __future__ import annotations

import datetime as dt

from . import timefmt

SITE_PACKAGES = ("/opt/ranktrace-torch/lib/python3.11/site-packages", "/usr/local/lib/python3.10/dist-packages",
                 "/opt/conda/lib/python3.11/site-packages")


# --- C++ (c10 glog) lines of a worker -------------------------------------------------------------------

def c10(rank: int | None, level: str, t: dt.datetime, src: str, msg: str) -> str:
    pre = f"[rank{rank}]:" if rank is not None else ""
    return f"{pre}[{timefmt.c10(level, t)} {src}] {msg}"


def work(seq: int, op: str, numel: int, timeout_ms: int) -> str:
    return f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)={timeout_ms})"


# ProcessGroupNCCL.cpp line numbers and tags of two real torch generations (each set from one real log:
# 2.4 from shared/real_log_shapes 020 + 027, 2.6 from 029 + 031 + 013).
PG_PROFILES = {
    "2.4": {"timeout": 616, "detected": 1785, "someops": 621, "takedown": 627, "terminated": 1515, "async": 542,
            "stack": None},
    "2.6": {"timeout": 632, "detected": 2268, "someops": 684, "takedown": 695, "terminated": 1895, "async": 542,
            "stack": 670},
}


def pg_tag(rank: int, style: str, terminated: bool = False) -> str:
    if style == "2.4" and terminated:
        return f"[PG 0 (default_pg) Rank {rank}]"
    return f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"


def _abort_tail(rank: int, t: dt.datetime, style: str, exc: str) -> list[str]:
    p = PG_PROFILES[style]
    return [c10(rank, "E", t, f"ProcessGroupNCCL.cpp:{p['someops']}",
                f"[Rank {rank}] Some NCCL operations have failed or timed out. Due to the asynchronous nature "
                "of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data."),
            c10(rank, "E", t + dt.timedelta(microseconds=90), f"ProcessGroupNCCL.cpp:{p['takedown']}",
                f"[Rank {rank}] To avoid data inconsistency, we are taking the entire process down."),
            c10(rank, "E", t + dt.timedelta(milliseconds=2), f"ProcessGroupNCCL.cpp:{p['terminated']}",
                f"{pg_tag(rank, style, terminated=True)} Process group watchdog thread terminated with exception: "
                f"{exc}")]


def watchdog_timeout_lines(rank: int, t: dt.datetime, seq: int, last_enq: int, op: str, numel: int,
                           timeout_ms: int, ran_ms: int, style: str) -> list[str]:
    """What one rank's watchdog prints when its collective times out, then the abort (SIGABRT)."""
    p = PG_PROFILES[style]
    msg = (f"[Rank {rank}] Watchdog caught collective operation timeout: {work(seq, op, numel, timeout_ms)} ran for "
           f"{ran_ms} milliseconds before timing out.")
    out = [c10(rank, "E", t, f"ProcessGroupNCCL.cpp:{p['timeout']}", msg)]
    t1 = t + dt.timedelta(microseconds=420)
    if style == "2.4":
        out.append(c10(rank, "E", t1, f"ProcessGroupNCCL.cpp:{p['detected']}",
                       f"{pg_tag(rank, style)} Exception (either an error or timeout) detected by watchdog at work: "
                       f"{seq}, last enqueued NCCL work: {last_enq}, last completed NCCL work: {seq - 1}."))
    else:
        out.append(c10(rank, "E", t1, f"ProcessGroupNCCL.cpp:{p['detected']}",
                       f"{pg_tag(rank, style)}  failure detected by watchdog at work sequence id: {seq} PG status: "
                       f"last enqueued work: {last_enq}, last completed work: {seq - 1}"))
        out.append(c10(rank, "E", t1 + dt.timedelta(microseconds=150), f"ProcessGroupNCCL.cpp:{p['stack']}",
                       "Stack trace of the failed collective not found, potentially because FlightRecorder is "
                       "disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value."))
    return out + _abort_tail(rank, t1 + dt.timedelta(microseconds=310), style, msg)


def remote_error_lines(rank: int, t: dt.datetime, seq: int, op: str, numel: int, timeout_ms: int,
                       style: str, nccl_version: str = "2.21.5") -> list[str]:
    """A collective that failed because a peer process or link went away (NCCL remote error), then abort."""
    err = f"NCCL error: remote process exited or there was a network error, NCCL version {nccl_version}"
    return [c10(rank, "E", t, f"ProcessGroupNCCL.cpp:{PG_PROFILES[style]['async']}",
                f"[Rank {rank}] Collective {work(seq, op, numel, timeout_ms)} raised the following async exception: "
                f"{err}")] + _abort_tail(rank, t + dt.timedelta(milliseconds=1), style, err)


def watchdog_cuda_error(rank: int, t: dt.datetime, what: str, style: str) -> str:
    """The watchdog of the rank whose GPU failed: the CUDA error surfaces on its next query."""
    return c10(rank, "E", t, f"ProcessGroupNCCL.cpp:{PG_PROFILES[style]['terminated']}",
               f"{pg_tag(rank, style, terminated=True)} Process group watchdog thread terminated with exception: "
               f"CUDA error: {what}")


def pg_init_options(rank: int, t: dt.datetime, size: int, global_rank: int, pg: int = 0,
                    guid: str = "0(default_pg)") -> str:
    return c10(global_rank, "I", t, "ProcessGroupNCCL.cpp:1011",
               f"[PG ID {pg} PG GUID {guid} Rank {rank}] ProcessGroupNCCL initialization options: size: {size}, "
               f"global rank: {global_rank}")


def store_connect_retry(t: dt.datetime, master: str, port: int = 29500, header: str | None = None) -> str:
    return (f"[{header or timefmt.c10('W', t)} socket.cpp:755] [c10d] The client socket has failed to connect to "
            f"[{master}]:{port} (errno: 111 - Connection refused).")


def store_connected(t: dt.datetime, ip: str, port: int, fd: int, lport: int) -> str:
    return (f"[{timefmt.c10('I', t)} socket.cpp:955] [c10d] The client socket has connected to [::ffff:{ip}]:{port} "
            f"on SocketImpl(fd={fd}, addr=[::ffff:{ip}]:{lport}, remote=[::ffff:{ip}]:{port}).")


def uv_loop_close(t: dt.datetime) -> list[str]:
    return [f"[{timefmt.c10('I', t)} TCPStoreLibUvBackend.cpp:1354] [c10d] uv_loop_close failed with:-16 "
            "errn:EBUSY desc:resource busy or locked",
            f"[{timefmt.c10('I', t + dt.timedelta(microseconds=120))} TCPStoreLibUvBackend.cpp:1364] [c10d] "
            "uv_loop cleanup finished."]


# --- worker Python output --------------------------------------------------------------------------------

def traceback(rank: int | None, frames: list[tuple[str, int, str, str]], exc: str) -> list[str]:
    """A worker's uncaught exception as torch's excepthook prints it: every line prefixed '[rankN]: '."""
    pre = f"[rank{rank}]: " if rank is not None else ""
    out = [f"{pre}Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out.append(f'{pre}  File "{path}", line {line}, in {func}')
        out.append(f"{pre}    {code}")
    out.append(f"{pre}{exc}")
    return out


def faulthandler_segv(thread: int, frames: list[tuple[str, int, str]]) -> list[str]:
    """faulthandler's report of a SIGSEGV (sample_logs/torchrun_segfault)."""
    out = ["Fatal Python error: Segmentation fault", "", f"Current thread 0x{thread:016x} (most recent call first):"]
    out += [f'  File "{p}", line {n} in {f}' for p, n, f in frames]
    return out + [""]


def user_warning(t: dt.datetime, site: str) -> str:
    return (f"{timefmt.py(t)} - WARNING - py.warnings - {site}/torch/utils/data/dataloader.py:617: UserWarning: "
            "This DataLoader will create 12 worker processes in total.")


# --- the torchrun elastic agent (one per node; its own pid) ----------------------------------------------

AGENT = "torch/distributed/elastic/agent/server/api.py"
MP = "torch/distributed/elastic/multiprocessing/api.py"


def agent(level: str, t: dt.datetime, pid: int, src: str, msg: str) -> str:
    return f"{timefmt.torch_py_glog(level, t)} {pid} {src}] {msg}"


def launch_config(t: dt.datetime, pid: int, entry: str, nnodes: int, nproc: int, run_id: str, endpoint: str,
                  is_host: bool, join_timeout: int | None, max_restarts: int, log_dir: str) -> list[str]:
    conf = {"is_host": "1" if is_host else "0"}
    if join_timeout is not None:
        conf["join_timeout"] = str(join_timeout)
    confs = "{" + ", ".join(f"'{k}': '{v}'" for k, v in conf.items()) + ", 'timeout': 900}"
    items = [("entrypoint", entry), ("min_nodes", nnodes), ("max_nodes", nnodes), ("nproc_per_node", nproc),
             ("run_id", run_id), ("rdzv_backend", "c10d"), ("rdzv_endpoint", endpoint), ("rdzv_configs", confs),
             ("max_restarts", max_restarts), ("monitor_interval", "0.1"), ("log_dir", log_dir), ("metrics_cfg", "{}"),
             ("event_log_handler", "null"), ("numa_options", "None"),
             ("signals_to_handle", "SIGTERM,SIGINT,SIGHUP,SIGQUIT"), ("duplicate_stdout_filters", "[]"),
             ("duplicate_stderr_filters", "[]")]
    src = "torch/distributed/launcher/api.py:254"
    out = [agent("I", t, pid, "torch/distributed/run.py:747", f"Using nproc_per_node={nproc}."),
           agent("I", t, pid, src, "Starting elastic_operator with launch configs:")]
    out += [agent("I", t, pid, src, f"  {k:<25}: {v}") for k, v in items]
    out.append(agent("I", t, pid, src, ""))
    return out


def starting_workers(t, pid, exe="python3.11") -> str:
    return agent("I", t, pid, f"{AGENT}:912", f"[default] starting workers for entrypoint: {exe}")


def rendezvousing(t, pid) -> str:
    return agent("I", t, pid, f"{AGENT}:707", "[default] Rendezvous'ing worker group")


def rdzv_complete(t, pid, restart_count: int, master: str, port: int, group_rank: int, nnodes: int,
                  local_ranks: list[int], global_ranks: list[int], world: int) -> list[str]:
    src = f"{AGENT}:553"
    body = ["[default] Rendezvous complete for workers. Result:", f"  restart_count={restart_count}",
            f"  master_addr={master}", f"  master_port={port}", f"  group_rank={group_rank}",
            f"  group_world_size={nnodes}", f"  local_ranks={local_ranks}", f"  role_ranks={global_ranks}",
            f"  global_ranks={global_ranks}", f"  role_world_sizes={[world] * len(local_ranks)}",
            f"  global_world_sizes={[world] * len(local_ranks)}", "  event_log_handler=null", ""]
    return [agent("I", t, pid, src, b) for b in body]


def starting_worker_group(t, pid) -> list[str]:
    return [agent("I", t, pid, f"{AGENT}:715", "[default] Starting worker group"),
            agent("I", t, pid, "torch/distributed/elastic/agent/server/local_elastic_agent.py:406",
                  "use_agent_store: True")]


def failed_exitcode(t, pid, exitcode: int, local_rank: int, wpid: int, binary: str) -> str:
    return agent("E", t, pid, f"{MP}:1002",
                 f"failed (exitcode: {exitcode}) local_rank: {local_rank} (pid: {wpid}) of binary: {binary}")


def sigterm(t, pid, wpid: int, sig: str = "SIGTERM") -> str:
    return agent("W", t, pid, f"{MP}:1028", f"Sending process {wpid} closing signal {sig}")


def group_failed_restart(t, pid, left: int, max_restarts: int) -> str:
    return agent("I", t, pid, f"{AGENT}:942",
                 f"[default] Worker group FAILED. {left}/{max_restarts} attempts left; will restart worker group")


def stopping(t, pid) -> str:
    return agent("I", t, pid, f"{AGENT}:733", "[default] Stopping worker group")


def new_nodes_restart(t, pid, n: int, group_rank: int) -> str:
    return agent("I", t, pid, f"{AGENT}:962",
                 f"[default] Detected {n} new nodes from group_rank={group_rank}; will restart worker group")


def succeeded(t, pid) -> list[str]:
    return [agent("I", t, pid, f"{AGENT}:932",
                  "[default] worker group successfully finished. Waiting 300 seconds for other agents to finish."),
            agent("I", t, pid, f"{AGENT}:985", "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 "
                                              "seconds for other agents to finish"),
            agent("I", t + dt.timedelta(milliseconds=90), pid, f"{AGENT}:1000",
                  "Done waiting for other agents. Elapsed: 0.0893421173095703 seconds")]


def no_error_file(t, pid, global_rank: int) -> str:
    return agent("I", t, pid, "torch/distributed/elastic/multiprocessing/errors/__init__.py:380",
                 "('local_rank %s FAILED with no error file. Decorate your entrypoint fn with @record for traceback "
                 f"info. See: https://pytorch.org/docs/stable/elastic/errors.html', {global_rank})")


def _launcher_frames(site: str, exe: str) -> list[str]:
    return ["Traceback (most recent call last):", f'  File "{exe}", line 8, in <module>', "    sys.exit(main())",
            "             ^^^^^^",
            f'  File "{site}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 367, in wrapper',
            "    return f(*args, **kwargs)", "           ^^^^^^^^^^^^^^^^^^",
            f'  File "{site}/torch/distributed/run.py", line 1028, in main', "    run(args)",
            f'  File "{site}/torch/distributed/run.py", line 1019, in run', "    elastic_launch(",
            f'  File "{site}/torch/distributed/launcher/api.py", line 194, in __call__', "    return launch_agent(",
            "           ^^^^^^^^^^^^^"]


def child_failed(site: str, exe: str, entry: str, host: str, failures: list[dict]) -> list[str]:
    """torchrun's exit report: the ChildFailedError traceback and its Failures / Root Cause block.
    failures: dicts with time (datetime, host clock), rank, local_rank, exitcode, pid, error_file, message;
    the first is the root cause (earliest), the others are listed under Failures."""
    out = _launcher_frames(site, exe) + [
        f'  File "{site}/torch/distributed/launcher/api.py", line 383, in launch_agent',
        "    raise ChildFailedError(", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "]
    title = f"{entry} FAILED"

    def fmt(idx, f):
        sig = {-6: "SIGABRT", -9: "SIGKILL", -11: "SIGSEGV", -15: "SIGTERM", -7: "SIGBUS"}.get(f["exitcode"])
        msg = f["message"] if f.get("message") else (
            f"Signal {-f['exitcode']} ({sig}) received by PID {f['pid']}" if sig else
            "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
        lines = [f"[{idx}]:", f"  time      : {timefmt.torchrun_failure_time(f['time'])}", f"  host      : {host}",
                 f"  rank      : {f['rank']} (local_rank: {f['local_rank']})",
                 f"  exitcode  : {f['exitcode']} (pid: {f['pid']}) " + (f" ({sig})" if sig else ""),
                 f"  error_file: {f.get('error_file') or '<N/A>'}"]
        msg_lines = msg.split("\n")
        lines.append(f"  traceback : {msg_lines[0]}")
        lines += ["  " + m for m in msg_lines[1:]]
        return lines
    body = [fmt(i, f) for i, f in enumerate(failures)]
    width = min(60, max([len(title)] + [len(x) for b in body for x in b]))
    out += ["=" * width, title, "-" * width, "Failures:"]
    others = body[1:]
    if others:
        for b in others:
            out += b
    else:
        out.append("  <NO_OTHER_FAILURES>")
    out += ["-" * width, "Root Cause (first observed failure):"] + body[0] + ["=" * width]
    return out


def rendezvous_timeout_traceback(site: str, exe: str, restart: bool,
                                 error: str = "RendezvousTimeoutError") -> list[str]:
    """The agent's exit when the rendezvous does not complete within join_timeout (sample_logs/
    torchrun_rdzv_missing_node; for a restart the call comes from _restart_workers, api.py:952/736).
    error='RendezvousClosedError': the rendezvous was closed by an agent that exited (line 677)."""
    a = f"{site}/torch/distributed/elastic/agent/server/api.py"
    m = f"{site}/torch/distributed/elastic/metrics/api.py"
    wrap = [f'  File "{m}", line 134, in wrapper', "    result = f(*args, **kwargs)", "             ^^^^^^^^^^^^^^^^^^"]
    out = _launcher_frames(site, exe) + [
        f'  File "{site}/torch/distributed/launcher/api.py", line 374, in launch_agent', "    result = agent.run()",
        "             ^^^^^^^^^^^"] + wrap + [
        f'  File "{a}", line 745, in run', "    result = self._invoke_run(role)", "             ^^^^^^^^^^^^^^^^^^^^^^"]
    if restart:
        out += [f'  File "{a}", line 952, in _invoke_run', "    self._restart_workers(self._worker_group)"] + wrap + [
            f'  File "{a}", line 736, in _restart_workers', "    self._initialize_workers(worker_group)"]
    else:
        out += [f'  File "{a}", line 916, in _invoke_run', "    self._initialize_workers(self._worker_group)"]
    out += wrap + [f'  File "{a}", line 713, in _initialize_workers', "    self._rendezvous(worker_group)"] + wrap + [
        f'  File "{a}", line 528, in _rendezvous', "    rdzv_info = spec.rdzv_handler.next_rendezvous()",
        "                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{site}/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py", line 1171, in next_rendezvous',
        "    self._op_executor.run(join_op, deadline, self._get_deadline)",
        f'  File "{site}/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py", '
        f'line {677 if error == "RendezvousClosedError" else 680}, in run',
        f"    raise {error}", f"torch.distributed.elastic.rendezvous.api.{error}"]
    return out


def agent_sigterm(t: dt.datetime, pid: int) -> str:
    return agent("W", t, pid, f"{AGENT}:753", "Received 15 death signal, shutting down workers")


def agent_signal_traceback(site: str, exe: str, pid: int) -> list[str]:
    """The agent's exit after SIGTERM (tests/formats/data/torch/11_agent_sigterm, a real torch 2.13 run)."""
    a = f"{site}/torch/distributed/elastic/agent/server/api.py"
    return _launcher_frames(site, exe) + [
        f'  File "{site}/torch/distributed/launcher/api.py", line 374, in launch_agent', "    result = agent.run()",
        "             ^^^^^^^^^^^", f'  File "{site}/torch/distributed/elastic/metrics/api.py", line 134, in wrapper',
        "    result = f(*args, **kwargs)", "             ^^^^^^^^^^^^^^^^^^",
        f'  File "{a}", line 745, in run', "    result = self._invoke_run(role)", "             ^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{a}", line 923, in _invoke_run', "    time.sleep(monitor_interval)",
        f'  File "{site}/torch/distributed/elastic/multiprocessing/api.py", line 86, in _terminate_process_handler',
        '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)',
        f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {pid} got signal: 15"]


def terminate_block(what: str, site: str, line: int, where: str = "checkTimeout") -> list[str]:
    """std::terminate's report of the watchdog's exception (no log prefix: written by the C++ runtime), as in
    shared/real_log_shapes 031/019: the header, what(), where it was raised and the first two frames."""
    return ["terminate called after throwing an instance of 'c10::DistBackendError'", f"  what():  {what}",
            f"Exception raised from {where} at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:{line} (most "
            "recent call first):",
            "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7ff28936c1b6 in "
            f"{site}/torch/lib/libc10.so)",
            "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
            f"std::ratio<1l, 1000l> > >) + 0x2b4 (0x7ff2898a0d44 in {site}/torch/lib/libtorch_cuda.so)"]
