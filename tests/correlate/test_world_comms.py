"""identity.world_comms keeps, per host, the rows of fact table nccl_comm whose nranks is the host's
largest (its world communicator): from an aggregate joined back since session 16, where a window over
every row (PARTITION BY host) carried every column through its sort; and since session 18 with the
communicator's line read from the columns the engine writes beside the fact (store.LINE_FACTS), where
it joined every line of the store. The same rows and columns as the window over that join, including
hosts of NULL name (one group, as PARTITION BY makes it), rows without nranks, a line whose rank its
file implies and srun's `[rankN]:` lines; and the engine's line columns are those SQL reads from the
lines (store.fill_line_facts)."""

from __future__ import annotations

import duckdb
import pytest

from ranktrace import store
from ranktrace.correlate import identity

# the statement as it was (a window), the reference
WINDOW = """
    SELECT f.*{lines} FROM nccl_comm f JOIN (SELECT * FROM event_rows_keyed e WHERE e.nranks IS NOT NULL) e
        USING (event_id) JOIN event_classes c USING (class_id)
    QUALIFY f.nranks IS NOT DISTINCT FROM max(f.nranks) OVER (PARTITION BY c.host)
"""

ROWS = [  # event_id, class_id, comm rank, nranks (the comm's and the line's), line rank
    (1, 10, 0, 8, 0), (2, 10, 1, 8, 1), (3, 10, 0, 2, 0),   # host a: the world of 8, not the sub-group of 2
    (4, 20, 0, None, 4), (5, 20, 1, None, 5),               # host b: no nranks said (NULL = NULL: kept)
    (6, 30, 3, 4, 3), (7, 30, 0, 1, 3), (8, 31, 2, 4, 2),   # no host (two classes, one group): the 4s
    (9, 40, 0, 16, 0), (10, 40, 5, 16, 5),                  # host c: a tie, both kept
    (11, 50, 1, 8, None),                                   # a line of no class row: joined away
    (12, 60, 0, 2, None),                                   # host d: a line of no rank, its file implies 9
]
IMPLIED = (7, 9)   # (file_id, rank): the file of event 12


def _store(agents: bool = False) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    cols = ", ".join(f"{c} {t}" for c, t in store.LINE_FACTS["nccl_comm"])
    con.execute(f"CREATE TABLE nccl_comm (event_id BIGINT, file_id BIGINT, comm VARCHAR, rank INTEGER, nranks INTEGER, {cols})")
    con.execute("CREATE TABLE event_classes (class_id BIGINT, host VARCHAR, envelopes VARCHAR)")
    con.execute("INSERT INTO event_classes VALUES (10, 'a', NULL), (20, 'b', NULL), (30, NULL, 'srun_label'), "
                "(31, NULL, NULL), (40, 'c', 'srun_label>x'), (60, 'd', NULL)")
    con.execute("CREATE TABLE event_rows (event_id BIGINT, class_id BIGINT, nranks INTEGER)")
    cols = ", ".join(f"{c} {'BIGINT' if c == 'pid' else 'INTEGER'}" for c in identity.WORLD_LINE_COLS[1:]
                     if c != "srun_lbl")
    con.execute(f"CREATE TABLE event_rows_keyed (event_id BIGINT, class_id BIGINT, nranks INTEGER, srun_lbl BOOLEAN, {cols})")
    con.execute("CREATE TABLE id_mode AS SELECT ? AS agents, true AS has_task", [agents])
    con.execute("CREATE TABLE implied_ranks (file_id BIGINT, rank INTEGER)")
    con.execute("INSERT INTO implied_ranks VALUES (?, ?)", list(IMPLIED))
    for eid, cls, rank, nranks, line_rank in ROWS:
        fid = IMPLIED[0] if line_rank is None and cls == 60 else eid + 100
        # (a line with no nranks of its own still has its fact's: the engine's column says whether it said one)
        said = nranks if nranks is not None else (0 if cls == 20 else None)
        srun_rank = eid % 3 if cls in (30, 40) else None   # an srun `[rankN]:` line
        local_rank, pid, task = eid % 2, 1000 + eid, eid % 4
        con.execute("INSERT INTO nccl_comm VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [eid, fid, f"0x{eid:x}", rank, nranks, line_rank, local_rank, pid, task, said, srun_rank, cls])
        con.execute("INSERT INTO event_rows VALUES (?, ?, ?)", [eid, cls, said])
        envelopes = con.execute("SELECT envelopes FROM event_classes WHERE class_id = ?", [cls]).fetchone()
        con.execute("INSERT INTO event_rows_keyed (event_id, class_id, nranks, srun_lbl, rank, local_rank, pid, task, "
                    "srun_rank) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [eid, cls, said, (None if not envelopes or envelopes[0] is None
                                      else envelopes[0].startswith("srun_label")) if agents else None, IMPLIED[1] if fid == IMPLIED[0] else line_rank, local_rank, pid, task,
                     srun_rank if agents else None])
    return con


@pytest.mark.parametrize("agents", [False, True])
def test_world_comms_keeps_each_hosts_largest_communicator_as_the_window_over_the_lines_did(agents):
    con = _store(agents)
    assert identity.world_comms(con)
    lines = "".join(f", e.{c} AS line_{c}" for c in identity.WORLD_LINE_COLS)
    facts = ", ".join(f"f.{c}" for c in ("event_id", "file_id", "comm", "rank", "nranks"))
    want_sql = WINDOW.replace("f.*", facts).format(lines=lines)
    want = con.execute(want_sql).fetchall()
    got = con.execute("FROM nccl_world").fetchall()
    assert sorted(got, key=repr) == sorted(want, key=repr)
    assert con.execute("DESCRIBE nccl_world").fetchall() == con.execute(f"DESCRIBE ({want_sql})").fetchall()
    assert sorted(r[0] for r in got) == [1, 2, 4, 5, 6, 8, 9, 10, 12]
    assert con.execute("SELECT line_rank FROM nccl_world WHERE event_id = 12").fetchone()[0] == IMPLIED[1]
    srun = con.execute("SELECT count(line_srun_rank), count(line_srun_lbl) FROM nccl_world").fetchone()
    assert srun == ((3, 3) if agents else (0, 0))   # events 6, 9, 10: classes 30 and 40


def test_world_comms_without_the_keyed_lines_keeps_the_facts_columns_only():
    con = _store()
    con.execute("DROP TABLE id_mode")
    assert identity.world_comms(con)
    assert [r[0] for r in con.execute("DESCRIBE nccl_world").fetchall()] == ["event_id", "file_id", "comm", "rank",
                                                                            "nranks"]
    assert sorted(r[0] for r in con.execute("FROM nccl_world").fetchall()) == [1, 2, 4, 5, 6, 8, 9, 10, 12]


# NCCL's init lines as a run prints them, plain and behind srun's --label with torchrun's [rankN]: prefix
NCCL_LOG = """\
node1:1234:1234 [0] NCCL INFO comm 0x55d0c0 rank 0 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE
node1:1235:1235 [1] NCCL INFO comm 0x55d0c1 rank 1 nranks 4 cudaDev 1 busId 2000 - Init COMPLETE
node1:1234:1234 [0] NCCL INFO comm 0x55d0c2 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE
"""
SRUN_LOG = """\
0: [rank0]: node2:2234:2234 [0] NCCL INFO comm 0x66d0c0 rank 2 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE
1: [default0]:[rank3]: node2:2235:2235 [1] NCCL INFO comm 0x66d0c1 rank 3 nranks 4 cudaDev 1 busId 2000 - Init COMPLETE
1:[rank3]: node2:2235:2235 [1] NCCL INFO comm 0x66d0c3 rank 3 nranks 4 cudaDev 1 busId 2000 - Init COMPLETE
"""


def test_engine_writes_the_line_columns_sql_reads_from_the_lines(tmp_path, catalog):
    """The columns the engine writes beside nccl_comm's rows are those store.fill_line_facts reads from
    their lines (identity.SRUN_RANK's regexp over raw for line_srun_rank)."""
    from ranktrace.ingest.pipeline import ingest
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rank.log").write_text(NCCL_LOG)
    (logs / "srun.out").write_text(SRUN_LOG)
    db = tmp_path / "s.store"
    ingest([str(logs)], str(db), catalog)
    con = store.open_store(db, catalog)
    try:
        cols = [c for c, _ in store.LINE_FACTS["nccl_comm"]]
        engine = con.execute(f"SELECT event_id, {', '.join(cols)} FROM nccl_comm ORDER BY event_id").fetchall()
        assert len(engine) >= 5 and all(r[-1] is not None for r in engine)
        assert sum(r[cols.index("line_srun_rank") + 1] is not None for r in engine) >= 2
        # (a view over the part's file of it, store.PART_FACTS: the facts as a test gives them, a table)
        con.execute(f"CREATE TABLE given AS SELECT * EXCLUDE ({', '.join(cols)}) FROM nccl_comm")
        con.execute("DROP VIEW nccl_comm")
        con.execute("ALTER TABLE given RENAME TO nccl_comm")
        store.fill_line_facts(con)
        sql = con.execute(f"SELECT event_id, {', '.join(cols)} FROM nccl_comm ORDER BY event_id").fetchall()
        assert engine == sql
    finally:
        con.close()
