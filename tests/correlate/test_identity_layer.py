"""The identity layer on a whole bundle (issue 28): rank files whose host is named only on their
NCCL lines, and node kernel logs whose Xid and OOM lines name a GPU's PCI id and a pid. After a real
ingest every line of a rank has its host (in `events`, `events_aligned` and the lanes), and the
identity table joins the kernel's lines to the ranks: pid -> rank on the host that logged them, the
Xid's PCI id -> NCCL's busId of the same host -> rank, each link saying where it came from."""

from __future__ import annotations

from pathlib import Path

from ranktrace.correlate.identity import build_identity, identity_table, lookup

RANK0 = """[rank0]:step 1 loss 1.0000 lr 3.0e-04
[rank0]:gpu-a01:4100:4150 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 3b000 commId 0x9f3c - Init COMPLETE
[rank0]:step 2 loss 0.9000 lr 3.0e-04
[rank0]:step 3 loss 0.8000 lr 3.0e-04
"""
RANK1 = """[rank1]:step 1 loss 1.0000 lr 3.0e-04
[rank1]:gpu-a02:4200:4250 [0] NCCL INFO comm 0x55d1 rank 1 nranks 2 cudaDev 0 busId 86000 commId 0x9f3c - Init COMPLETE
[rank1]:step 2 loss 0.9000 lr 3.0e-04
"""
DMESG_A01 = ("[ 1300.000000] Out of memory: Killed process 4100 (python) total-vm:53312244kB, anon-rss:31451456kB\n"
             "[ 1301.000000] nvidia 0000:3b:00.0: AER: can't recover (no error_detected callback)\n")
DMESG_A02 = "[ 1234.500000] NVRM: Xid (PCI:0000:86:00): 79, pid=0, GPU has fallen off the bus.\n"


def _bundle(tmp_path):
    """The bundle's files, given as the relative path 'bundle' (the test's own directories must not
    reach the path hints as host names)."""
    files = {"logs/worker-a.log": RANK0, "logs/worker-b.log": RANK1,
             "nodes/gpu-a01/dmesg.txt": DMESG_A01, "nodes/gpu-a02/dmesg.txt": DMESG_A02}
    for rel, text in files.items():
        p = tmp_path / "bundle" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return Path("bundle")


def test_every_rank_line_has_its_host(tmp_path, ingest_to, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, con = ingest_to([_bundle(tmp_path)])
    got = con.execute("SELECT rank, host, count(*) FROM events WHERE rank IS NOT NULL GROUP BY ALL ORDER BY 1").fetchall()
    assert got == [(0, "gpu-a01", 4), (1, "gpu-a02", 3)], "the step line before the NCCL line included"
    # the README's query: last progress per rank, on the aligned clock
    last = con.execute("SELECT host, rank, max(ats) FROM events_aligned WHERE kind = 'progress' AND rank IS NOT NULL "
                       "GROUP BY host, rank ORDER BY rank").fetchall()
    assert [(h, r) for h, r, _ in last] == [("gpu-a01", 0), ("gpu-a02", 1)]
    lanes = con.execute("SELECT host, rank FROM lanes WHERE rank IS NOT NULL ORDER BY rank").fetchall()
    assert lanes == [("gpu-a01", 0), ("gpu-a02", 1)]
    basis = con.execute("SELECT token, stream, host, rank FROM identity_found WHERE token LIKE 'stream:%' "
                        "ORDER BY rank").fetchall()
    assert basis == [("stream:nccl.line", "envelope", "gpu-a01", 0), ("stream:nccl.line", "envelope", "gpu-a02", 1)]


def test_kernel_lines_join_the_ranks(tmp_path, ingest_to, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, con = ingest_to([_bundle(tmp_path)])
    build_identity(con)
    rows = {r[0]: r[1:] for r in con.execute(
        "SELECT kind, host, rank, pid, gpu, id_inferred FROM events_id WHERE file LIKE '%dmesg%' AND message NOT LIKE '%AER%'").fetchall()}
    # the OOM killer's pid on gpu-a01 is rank 0's (its NCCL line named that pid there)
    oom = next(v for k, v in rows.items() if "oom" in (k or ""))
    assert oom[:3] == ("gpu-a01", 0, 4100) and "rank" in oom[4]
    # the Xid names no pid (pid=0 names nobody) but a PCI id: NCCL's busId 86000 of gpu-a02 is rank 1's GPU
    xid = next(v for k, v in rows.items() if "xid" in (k or ""))
    assert xid[:4] == ("gpu-a02", 1, None, "0000:86:00") and "rank" in xid[4]
    assert lookup(con, host="gpu-a02", gpu="0000:86:00.0")["rank"] == 1
    # dev_printk writes the PCI id with its function ('0000:3b:00.0'): NCCL's busId 3b000 of gpu-a01 is rank 0's
    aer = con.execute("SELECT host, rank, gpu FROM events_id WHERE message LIKE '%AER%'").fetchall()
    assert aer == [("gpu-a01", 0, "0000:3b:00.0")]
    assert lookup(con, host="gpu-a01", gpu="0000:86:00")["rank"] is None   # another host's GPU
    # the identity table says where each link came from
    sources = {s for r in identity_table(con) for s in r["sources"].split(",")}
    assert {"nccl_busid", "stream:nccl.line", "token:nvrm_xid"} <= sources


def test_a_link_names_a_machine_the_line_was_not_written_on(tmp_path, ingest_to, monkeypatch):
    """Ray's driver reports a dead worker's PID and its node's IP: the line's host stays the driver's
    (unknown here), the worker's pid -> host link is in the identity table."""
    monkeypatch.chdir(tmp_path)   # a relative path: no directory name of the test's reaches the path hints
    p = Path("driver.log")
    p.write_text("2023-09-20 11:38:09,990\tWARNING worker.py:2058 -- A worker died or was killed while executing a "
                 "task by an unexpected system error. Worker IP address: 10.62.7.19 Worker port: 37523 Worker PID: 6218 "
                 "Worker exit type: SYSTEM_ERROR\n")
    _, con = ingest_to([p])
    assert con.execute("SELECT host, pid FROM events").fetchall() == [(None, 6218)]
    build_identity(con)
    assert lookup(con, pid=6218)["host"] == "10.62.7.19"


# ---------------------------------------------------------------- torchrun --log-dir

def _logdir_bundle(tmp_path, console: bool = False) -> Path:
    """torchrun --log-dir on two nodes of two local ranks each: <dir>/<run>/attempt_0/<local_rank>/
    stderr.log, whose lines never say the rank (the files are the processes' own output, no
    `[rankN]:`); each process's NCCL lines name its host and, in the world communicator (nranks 4),
    its global rank; a sub-group communicator (nranks 2) gives its place in that group. `console`:
    two more files where processes' lines are interleaved (no rank may be implied for them)."""
    for n, host in ((1, "gpu-a01"), (2, "gpu-a02")):
        for lr in (0, 1):
            r, pid = 2 * (n - 1) + lr, 4100 + 2 * (n - 1) + lr
            p = tmp_path / "bundle" / f"node{n}" / "none_x1y2" / "attempt_0" / str(lr) / "stderr.log"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f"step 1 loss 1.0000 lr 3.0e-04\n"
                         f"{host}:{pid}:{pid + 50} [{lr}] NCCL INFO comm 0x55d{r} rank {lr} nranks 2 cudaDev {lr} "
                         f"busId 3b000 commId 0x7777 - Init COMPLETE\n"
                         f"{host}:{pid}:{pid + 51} [{lr}] NCCL INFO comm 0x66d{r} rank {r} nranks 4 cudaDev {lr} "
                         f"busId 3b000 commId 0x9f3c - Init COMPLETE\n"
                         f"step 2 loss 0.9000 lr 3.0e-04\nstep 3 loss 0.8000 lr 3.0e-04\n")
    if console:
        (tmp_path / "bundle" / "console.log").write_text(
            "gpu-b01:500:550 [0] NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 busId 3b000 commId 0x1 - Init COMPLETE\n"
            "gpu-b01:501:551 [1] NCCL INFO comm 0x2 rank 1 nranks 8 cudaDev 1 busId 86000 commId 0x1 - Init COMPLETE\n"
            "step 1 loss 1.0\n")
        # one communicator line among the lines of other processes (shared/real_log_shapes 013)
        (tmp_path / "bundle" / "mixed.log").write_text(
            "gpu-b02:600:650 [0] NCCL INFO misc/socket.cc:47 -> 3\n"
            "gpu-b02:601:651 [1] NCCL INFO comm 0x3 rank 9 nranks 8 cudaDev 1 busId 86000 - Abort COMPLETE\n"
            "step 1 loss 1.0\n")
    return Path("bundle")


def test_a_torchrun_logdir_files_rank_reaches_events_and_lanes(tmp_path, ingest_to, monkeypatch):
    """Each per-rank file of a --log-dir run gets its process's global rank (the world
    communicator's, not the sub-group's) on every line: in events, events_aligned, the lanes table
    and the TUI's lanes; table implied_ranks says which line it rests on."""
    from ranktrace.tui.data import StoreData

    monkeypatch.chdir(tmp_path)
    _, con = ingest_to([_logdir_bundle(tmp_path)])
    want = [("gpu-a01", 0, 0, 5), ("gpu-a01", 1, 1, 5), ("gpu-a02", 2, 0, 5), ("gpu-a02", 3, 1, 5)]
    assert con.execute("SELECT host, rank, local_rank, count(*) FROM events GROUP BY ALL ORDER BY 2").fetchall() == want
    assert con.execute("SELECT host, rank, count(*) FROM events_aligned GROUP BY ALL ORDER BY 2").fetchall() == \
        [(h, r, n) for h, r, _, n in want]
    assert con.execute("SELECT host, rank, source FROM lanes ORDER BY rank").fetchall() == \
        [(h, r, None) for h, r, _, _ in want]
    basis = con.execute("SELECT i.rank, i.basis, e.message FROM implied_ranks i JOIN events e USING (event_id) "
                        "ORDER BY i.rank").fetchall()
    assert [(r, b) for r, b, _ in basis] == [(r, "nccl world communicator (nranks 4)") for r in range(4)]
    assert all(f"rank {r} nranks 4" in m for r, _, m in basis)
    con.close()
    lanes = StoreData(tmp_path / "store.duckdb").lanes()
    assert [(ln.host, ln.rank) for ln in lanes] == [(h, r) for h, r, _, _ in want]


def test_no_rank_is_implied_for_a_file_of_two_processes(tmp_path, ingest_to, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, con = ingest_to([_logdir_bundle(tmp_path, console=True)])
    assert con.execute("SELECT count(*) FROM implied_ranks").fetchone()[0] == 4
    for f in ("bundle/console.log", "bundle/mixed.log"):
        assert con.execute("SELECT DISTINCT rank FROM events WHERE file = ? AND message LIKE 'step%'", [f]
                           ).fetchall() == [(None,)], f
