from ranktrace.correlate.identity import build_identity, lookup

from .fixtures import ev, store


def test_rank_inherited_from_host_pid_and_never_from_shared_pid():
    con = store([
        ev(1, "worker started", host="n1", rank=3, local_rank=1, pid=100),
        ev(1, "worker started", host="n2", rank=5, local_rank=1, pid=100),   # same pid on another host
        ev(2, "NCCL WARN socket error", host="n1", pid=100),                  # gets rank 3
        ev(2, "NCCL WARN socket error", host="n2", pid=100),                  # gets rank 5
        ev(2, "orphan line", pid=100),                                        # pid alone: two hosts share it
    ])
    build_identity(con)
    got = con.execute("SELECT host, rank, id_inferred FROM events_id WHERE message <> 'worker started' "
                      "ORDER BY event_id").fetchall()
    assert got[0][:2] == ("n1", 3) and "rank" in got[0][2]
    assert got[1][:2] == ("n2", 5)
    assert got[2][:2] == (None, None)


def test_a_ranks_host_is_the_one_its_own_file_names_when_a_requeue_moved_it():
    """A job requeued onto other nodes: rank 0 was on a1 in the first console and is on b1 in the second.
    The store's links name both hosts for rank 0 (none of them, then); each console names one."""
    def console(f, host):
        return [ev(1, f"{host}:100:101 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - Init COMPLETE", host=host,
                   rank=0, file=f),
                ev(5, "[rank0]: RuntimeError: boom", rank=0, file=f)]
    con = store(console("slurm-7_0.out", "a1") + console("slurm-7_1.out", "b1") + [ev(9, "[rank0]: elsewhere", rank=0)])
    build_identity(con)
    got = con.execute("SELECT file, host FROM events_id WHERE message LIKE '[rank0]%' ORDER BY file").fetchall()
    assert got == [("job.log", None), ("slurm-7_0.out", "a1"), ("slurm-7_1.out", "b1")]


def test_agent_line_and_rendezvous_result_link_pid_to_rank():
    con = store([
        ev(1, "local_ranks=[0, 1]", host="gpu-b02", file="gpu-b02.log", line=10),
        ev(1, "global_ranks=[2, 3]", host="gpu-b02", file="gpu-b02.log", line=12),
        ev(9, "failed (exitcode: -9) local_rank: 1 (pid: 7451) of binary: python", host="gpu-b02",
           kind="worker_failed"),
    ])
    build_identity(con)
    got = lookup(con, host="gpu-b02", pid=7451)
    assert got["rank"] == 3 and got["local_rank"] == 1
    assert lookup(con, host="gpu-b03", pid=7451)["rank"] is None   # other host: unknown stays unknown


def test_root_cause_block_and_nccl_comm_facts():
    block = ("Root Cause (first observed failure):\n[0]:\n  time      : 2026-03-02_03:17:41\n"
             "  host      : trn-node07\n  rank      : 13 (local_rank: 5)\n  exitcode  : 1 (pid: 48213)\n")
    e_nccl = ev(1, "NCCL INFO comm 0x1 rank 6 nranks 8 cudaDev 2 busId 41000", host="trn-node07", pid=48300)
    con = store([ev(5, "Root Cause", kind="failure_summary", host="trn-node07", raw=block), e_nccl],
                facts={"nccl_comm": [{"event_id": e_nccl["event_id"], "rank": 6, "nranks": 8, "cuda_dev": 2,
                                      "bus_id": "41000"}]})
    build_identity(con)
    assert lookup(con, host="trn-node07", pid=48213)["rank"] == 13
    got = lookup(con, host="trn-node07", pid=48300)
    assert got["rank"] == 6 and got["gpu"] == "2"
