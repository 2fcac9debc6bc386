"""identity.world_comms keeps, per host, the rows of fact table nccl_comm whose nranks is the host's
largest (its world communicator): from an aggregate joined back since session 16, where a window over
every row (PARTITION BY host) carried every column through its sort. The same rows as the window's,
including hosts of NULL name (one group, as PARTITION BY makes it) and rows without nranks."""

from __future__ import annotations

import duckdb

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
]


def _store() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE nccl_comm (event_id BIGINT, comm VARCHAR, rank INTEGER, nranks INTEGER)")
    con.execute("CREATE TABLE event_classes (class_id BIGINT, host VARCHAR)")
    con.execute("INSERT INTO event_classes VALUES (10, 'a'), (20, 'b'), (30, NULL), (31, NULL), (40, 'c')")
    con.execute("CREATE TABLE event_rows (event_id BIGINT, class_id BIGINT, nranks INTEGER)")
    cols = ", ".join(f"{c} INTEGER" for c in identity.WORLD_LINE_COLS[1:] if c != "srun_lbl")
    con.execute(f"CREATE TABLE event_rows_keyed (event_id BIGINT, class_id BIGINT, nranks INTEGER, srun_lbl BOOLEAN, {cols})")
    con.execute("CREATE TABLE id_mode AS SELECT false AS agents, true AS has_task")
    for eid, cls, rank, nranks, line_rank in ROWS:
        con.execute("INSERT INTO nccl_comm VALUES (?, ?, ?, ?)", [eid, f"0x{eid:x}", rank, nranks])
        # (a line with no nranks of its own still has its fact's: the engine's column says whether it said one)
        said = nranks if nranks is not None else (0 if cls == 20 else None)
        con.execute("INSERT INTO event_rows VALUES (?, ?, ?)", [eid, cls, said])
        con.execute("INSERT INTO event_rows_keyed (event_id, class_id, nranks, rank) VALUES (?, ?, ?, ?)",
                    [eid, cls, said, line_rank])
    return con


def test_world_comms_keeps_each_hosts_largest_communicator_as_the_window_did():
    con = _store()
    assert identity.world_comms(con)
    lines = "".join(f", e.{c} AS line_{c}" for c in identity.WORLD_LINE_COLS)
    want = con.execute(WINDOW.format(lines=lines)).fetchall()
    got = con.execute("FROM nccl_world").fetchall()
    assert sorted(got, key=repr) == sorted(want, key=repr)
    assert [r[0] for r in con.execute("DESCRIBE nccl_world").fetchall()] == \
        [r[0] for r in con.execute(f"DESCRIBE ({WINDOW.format(lines=lines)})").fetchall()]
    assert sorted(r[0] for r in got) == [1, 2, 4, 5, 6, 8, 9, 10]
