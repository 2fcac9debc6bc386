"""A DeepSpeed run launched over pdsh (DeepSpeed's default multi-node launcher): one console on the
launching node where every remote line carries pdsh's 'host: ' prefix, resubmitted by hand after a
failure (the console appended), and the nodes' kernel logs from journalctl -k. The lines are written
from the emitters' source: deepspeed/launcher/runner.py and launch.py (the 'cmd = pdsh ...' line, each
node's WORLD INFO / nnodes / global_rank_mapping lines, sigkill_handler's 'Killing subprocess' and
'... exits with return code = N', 'Process N exits successfully.'), deepspeed/utils/logging.py log_dist
('[Rank 0] step=...': rank 0 alone reports steps), pdsh's src/common/pipecmd.c ('pdsh@launcher: host:
ssh exited with exit code N'), NCCL's init line and torch's watchdog as in shared/real_log_shapes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from ranktrace.correlate import diagnose

HOSTS = {"worker-0": [0, 1, 2, 3], "worker-1": [4, 5, 6, 7]}
BUS = ["1b000", "3b000", "86000", "af000"]
DAY = dt.datetime(2024, 5, 2)


def _ds(t: dt.datetime, src: str, msg: str, level: str = "INFO") -> str:
    return f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}] [{level}] [{src}] {msg}"


def _launch(t: dt.datetime, pid0: dict[str, int]) -> list[str]:
    out = [_ds(t, "runner.py:568:main", "cmd = pdsh -S -f 1024 -w worker-0,worker-1 export PYTHONPATH=/home/u/proj; "
               "cd /home/u/proj; /usr/bin/python3 -u -m deepspeed.launcher.launch --world_info=eyJ3b3JrZXItMCI6IFswXX0= "
               "--node_rank=%n --master_addr=10.0.0.5 --master_port=29500 train.py --deepspeed --deepspeed_config ds.json")]
    mapping = ", ".join(f"'{h}': {r}" for h, r in HOSTS.items())
    for i, (h, ranks) in enumerate(HOSTS.items()):
        u = t + dt.timedelta(seconds=2 + i)
        out += [f"{h}: " + _ds(u, "launch.py:146:main", "WORLD INFO DICT: {'worker-0': [0, 1, 2, 3], 'worker-1': [0, 1, 2, 3]}"),
                f"{h}: " + _ds(u, "launch.py:152:main", f"nnodes=2, num_local_procs=4, node_rank={i}"),
                f"{h}: " + _ds(u, "launch.py:163:main", f"global_rank_mapping=defaultdict(<class 'list'>, {{{mapping}}})"),
                f"{h}: " + _ds(u, "launch.py:164:main", "dist_world_size=8")]
    for h, ranks in HOSTS.items():
        for lr, r in enumerate(ranks):
            p = pid0[h] + lr
            out.append(f"{h}: {h}:{p}:{p} [{lr}] NCCL INFO comm 0x55d0{r} rank {r} nranks 8 cudaDev {lr} "
                       f"busId {BUS[lr]} commId 0x9f3c - Init COMPLETE")
    return out


def _steps(t: dt.datetime, first: int, n: int) -> list[str]:
    return [_ds(t + dt.timedelta(seconds=10 * i), "logging.py:96:log_dist",
                f"[Rank 0] step={first + i}, skipped=0, lr=[0.0003], mom=[(0.9, 0.95)]") for i in range(n)]


def _bundle(root: Path) -> Path:
    """Job 1 trains to step 130, then worker-1's GPU 1 (rank 5) falls off the bus: rank 5's CUDA error,
    the others' watchdogs, both launchers' teardown, pdsh's exits. Job 2, resubmitted, resumes from
    step 100 and ends normally."""
    t1 = DAY.replace(hour=10)
    lines = _launch(t1, {"worker-0": 3300, "worker-1": 4100})
    lines += ["worker-0: " + s for s in _steps(t1 + dt.timedelta(seconds=30), 1, 130)]
    fail = t1 + dt.timedelta(seconds=30 + 1300 + 4)
    lines += ["worker-1: Traceback (most recent call last):",
              'worker-1:   File "/home/u/proj/train.py", line 211, in <module>',
              "worker-1:     loss.backward()",
              "worker-1: RuntimeError: CUDA error: unspecified launch failure"]
    wd = fail + dt.timedelta(seconds=60)
    for h, ranks in HOSTS.items():
        for r in ranks:
            if r != 5:
                lines.append(f"{h}: [rank{r}]:[E502 {wd:%H:%M:%S}.{r}00000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog "
                             "caught collective operation timeout: WorkNCCL(SeqNum=2611, OpType=ALLREDUCE, NumelIn=9801523, "
                             "NumelOut=9801523, Timeout(ms)=60000) ran for 60031 milliseconds before timing out.")
    k = fail + dt.timedelta(seconds=1)
    lines += [f"worker-1: " + _ds(k, "launch.py:315:sigkill_handler", f"Killing subprocess {4100 + i}") for i in range(4)]
    lines += ["worker-1: " + _ds(k, "launch.py:321:sigkill_handler", "['/usr/bin/python3', '-u', 'train.py', '--local_rank=3', "
                                 "'--deepspeed', '--deepspeed_config', 'ds.json'] exits with return code = 1", "ERROR"),
              "pdsh@worker-0: worker-1: ssh exited with exit code 1"]
    k = wd + dt.timedelta(seconds=2)
    lines += [f"worker-0: " + _ds(k, "launch.py:315:sigkill_handler", f"Killing subprocess {3300 + i}") for i in range(4)]
    lines += ["worker-0: " + _ds(k, "launch.py:321:sigkill_handler", "['/usr/bin/python3', '-u', 'train.py', '--local_rank=3', "
                                 "'--deepspeed', '--deepspeed_config', 'ds.json'] exits with return code = -6", "ERROR"),
              "pdsh@worker-0: worker-0: ssh exited with exit code 250"]
    t2 = DAY.replace(hour=10, minute=40)
    lines += _launch(t2, {"worker-0": 5300, "worker-1": 6100})
    lines += ["worker-0: " + s for s in _steps(t2 + dt.timedelta(seconds=30), 101, 120)]
    end = t2 + dt.timedelta(seconds=30 + 1200 + 5)
    for h in HOSTS:
        base = 5300 if h == "worker-0" else 6100
        lines += [f"{h}: " + _ds(end, "launch.py:347:main", f"Process {base + i} exits successfully.") for i in range(4)]
    kern = {h: [f"May 02 09:58:{10 + i:02d} {h} kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05"]
            for i, h in enumerate(HOSTS)}
    kern["worker-1"].append(f"May 02 {fail - dt.timedelta(seconds=1):%H:%M:%S} worker-1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, "
                            "pid=4101, name=python3, GPU has fallen off the bus.")
    b = root / "ds_run"
    (b / "nodes").mkdir(parents=True)
    (b / "train.log").write_text("\n".join(lines) + "\n")
    for h, ls in kern.items():
        (b / "nodes" / f"{h}.kern.log").write_text("\n".join(ls) + "\n")
    return Path("ds_run")


def test_console_lines_are_claimed_with_their_host(tmp_path, ingest_to, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, con = ingest_to([_bundle(tmp_path)])
    raw = con.execute("SELECT count(*) FROM events WHERE file LIKE '%train.log' AND format = 'raw'").fetchone()[0]
    assert raw == 0
    # pdsh's own report is about the host it names (the remote end), not the launching node
    got = con.execute("SELECT host, kind FROM events WHERE format = 'pdsh' ORDER BY line").fetchall()
    assert got == [("worker-1", "worker_failed"), ("worker-0", "worker_failed")]
    starts = con.execute("SELECT count(*) FROM events WHERE kind = 'worker_start' AND format = 'deepspeed'").fetchone()[0]
    assert starts == 6, "the runner's cmd line and each node's launch.py, for both jobs"


def test_two_jobs_in_one_console_are_two_attempts(tmp_path, ingest_to, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, con = ingest_to([_bundle(tmp_path)])
    attempts = diagnose(con)["attempts"]
    assert [a["outcome"] for a in attempts] == ["failed", "completed"], attempts
    first = attempts[0]["verdict"]
    assert (first["kind"], first["host"]) == ("gpu_fault", "worker-1"), first
    assert first["rank"] == 5, first
