"""Watchdog reports read per process group: a collective's SeqNum counts within its group, so the reports
of two groups are never compared (ProcessGroupNCCL's log prefix names the group: its GUID, its name in
torch 2.3-2.4, its uid before); and a rank that says a peer's collective timed out (the flight recorder's
dump signal 'from rank N') is a witness, not the silent rank a hang is blamed on."""

from __future__ import annotations

from ranktrace.correlate import diagnose
from ranktrace.correlate.clock import align
from ranktrace.correlate.detectors.absence import watchdog
from ranktrace.ingest.pipeline import ingest
from ranktrace.store import connect as store_connect


def _store(tmp_path, catalog, text: str):
    (tmp_path / "excerpt.log").write_text(text)
    db = str(tmp_path / "db")
    ingest([str(tmp_path / "excerpt.log")], db, catalog)
    return store_connect(db, read_only=True)


def _timeout(rank: int, t: str, local: int, local_id: int, guid: str, seq: int, done: int, op: str) -> str:
    return (f"[rank{rank}]:[E611 {t}1 ProcessGroupNCCL.cpp:632] [Rank {local}] Watchdog caught collective operation "
            f"timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=64, NumelOut=64, Timeout(ms)=600000) ran for "
            f"600031 milliseconds before timing out.\n"
            f"[rank{rank}]:[E611 {t}2 ProcessGroupNCCL.cpp:1804] [PG ID {local_id} PG GUID {guid} Rank {local}] "
            f"Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: "
            f"{seq + 3}, last completed NCCL work: {done}.\n")


def test_two_groups_timeouts_are_not_compared(tmp_path, catalog):
    # ranks 21 and 23 time out in two different groups that share a local id (each process's 7th group):
    # 301 and 88 are counts of two different groups, neither rank is behind the other
    text = (_timeout(21, "04:12:09.40432", 1, 7, "204", 301, 300, "ALLTOALL_BASE")
            + _timeout(23, "04:12:09.41177", 0, 7, "198", 88, 87, "ALLREDUCE"))
    con = _store(tmp_path, catalog, text)
    align(con)
    found = watchdog(con)
    assert not [f for f in found if f.kind == "hang"], [f.why for f in found]
    assert diagnose(con)["verdict"]["rank"] == 21   # the first to report


def test_one_groups_rank_behind_is_still_found(tmp_path, catalog):
    # the same two reports in ONE group (GUID 204): rank 23 completed 87 where rank 21 completed 300
    text = (_timeout(21, "04:12:09.40432", 1, 7, "204", 301, 300, "ALLTOALL_BASE")
            + _timeout(23, "04:12:09.41177", 0, 9, "204", 88, 87, "ALLTOALL_BASE"))
    con = _store(tmp_path, catalog, text)
    align(con)
    behind = [f for f in watchdog(con) if f.kind == "hang"]
    assert [(f.rank, f.extra["pg"]) for f in behind] == [(23, "204")]


def test_a_rank_told_of_a_peers_timeout_is_a_witness_not_the_silent_one(tmp_path, catalog):
    # rank 0 (default group) is told by the flight recorder that rank 5's collective timed out; rank 5
    # reports the timeout in its group: rank 5 is named, rank 0 is not taken for a rank that said nothing
    text = ("[rank0]:[E302 11:40:51.226113402 ProcessGroupNCCL.cpp:1849] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
            "Observed flight recorder dump signal from another rank via TCPStore.\n"
            "[rank0]:[E302 11:40:51.227008117 ProcessGroupNCCL.cpp:1914] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
            "Received a dump signal due to a collective timeout from  rank 5 and we will try our best to dump the "
            "debug info. Last enqueued NCCL work: 880, last completed NCCL work: 878.This is most likely caused by "
            "incorrect usages of collectives, e.g., wrong sizes used across ranks, the order of collectives is not "
            "same for all ranks or the scheduled collective, for some reason, didn't run. Additionally, this can be "
            "caused by GIL deadlock or other reasons such as network errors or bugs in the communications library "
            "(e.g. NCCL), etc.\n"
            "[rank5]:[E302 11:40:50.914402215 ProcessGroupNCCL.cpp:689] [Rank 1] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=1207, OpType=ALLTOALL_BASE, NumelIn=4096, NumelOut=4096, "
            "Timeout(ms)=600000) ran for 600094 milliseconds before timing out.\n"
            "[rank5]:[E302 11:40:50.915210330 ProcessGroupNCCL.cpp:2303] [PG ID 2 PG GUID 5 Rank 1]  failure "
            "detected by watchdog at work sequence id: 1207 PG status: last enqueued work: 1209, last completed "
            "work: 1206\n")
    con = _store(tmp_path, catalog, text)
    v = diagnose(con)["verdict"]
    assert v["rank"] == 5, v["summary"]
    assert "wrote no error" not in v["summary"]


def test_a_report_whose_group_line_is_cut_off_joins_the_group_of_its_collective(tmp_path, catalog):
    # three ranks report collective 412 of group 9; rank 6's line naming the group was cut off the excerpt:
    # it reported the timeout like the others, it is not the rank missing from their reports
    text = (_timeout(2, "07:30:41.11020", 0, 3, "9", 412, 411, "ALLGATHER")
            + _timeout(4, "07:30:41.15361", 1, 3, "9", 412, 411, "ALLGATHER")
            + _timeout(6, "07:30:41.60254", 2, 3, "9", 412, 411, "ALLGATHER").split("\n")[0] + "\n")
    con = _store(tmp_path, catalog, text)
    align(con)
    found = watchdog(con)
    assert not [f for f in found if f.rank == 6], [f.why for f in found]
    assert diagnose(con)["verdict"]["rank"] == 2   # the first to report
