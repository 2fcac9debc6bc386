"""Identity resolution: one table linking rank <-> local_rank <-> host <-> pid <->
pod/container <-> gpu <-> job/step, from every source that states a link.

Sources (each optional; fact tables are used only when present):
- events: rows that carry two or more identity columns at once;
- torchrun agent lines `failed (exitcode: N) local_rank: L (pid: P)` (host from the event);
- torchrun Root Cause / Failures entries (host, rank, local_rank, exitcode, pid);
- torchrun rendezvous results (`local_ranks=[0, 1]` / `global_ranks=[2, 3]` of one agent);
- NCCL comm init facts (rank, cuda_dev, bus_id; host and pid from the event).

A link is used only when it is unambiguous: (host, pid) -> rank when exactly one rank
was ever seen for that pair, never pid alone when two hosts share the pid.

`build_identity(con)` creates temp table `identity` (the links) and temp view
`events_id` (events whose missing rank / local_rank / host / gpu are filled from the
links; column `id_inferred` says which were filled)."""

from __future__ import annotations

import duckdb

from .util import has_columns, rows, table_exists

ID_COLS = ("host", "rank", "local_rank", "pid", "pod", "container", "gpu", "job_id", "step_id")

# A Root Cause / Failures entry, as one multi-line block or text.
ENTRY_RE = (r"host\s*:\s*(?P<host>\S+)\s+rank\s*:\s*(?P<rank>\d+)\s*\(local_rank:\s*(?P<local_rank>\d+)\)"
            r"\s+exitcode\s*:\s*(?P<exitcode>-?\d+)\s*\(pid:\s*(?P<pid>\d+)\)")
AGENT_FAILED_RE = r"failed \(exitcode: (?P<exitcode>-?\d+)\) local_rank: (?P<local_rank>\d+) \(pid: (?P<pid>\d+)\)"


def _sel(src: str, **cols) -> str:
    parts = []
    for c in ID_COLS:
        v = cols.get(c, "NULL")
        t = {"rank": "INTEGER", "local_rank": "INTEGER", "pid": "BIGINT"}.get(c, "VARCHAR")
        parts.append(f"CAST({v} AS {t}) AS {c}")
    return "SELECT " + ", ".join(parts) + f", '{src}' AS source"


def link_sources(con: duckdb.DuckDBPyConnection) -> list[str]:
    """SELECT statements, one per source present in this store, each giving ID_COLS + source."""
    qs = []
    nn = " + ".join(f"(CASE WHEN {c} IS NULL THEN 0 ELSE 1 END)" for c in ID_COLS)
    qs.append(_sel("events", **{c: c for c in ID_COLS}) +
              f" FROM (SELECT DISTINCT {', '.join(ID_COLS)} FROM events_base WHERE {nn} >= 2)")
    # torchrun agent: "failed (exitcode: 1) local_rank: 1 (pid: 7261)"
    qs.append(_sel("agent_failed", host="host", local_rank="m.local_rank", pid="m.pid") +
              f" FROM (SELECT host, regexp_extract(message, '{AGENT_FAILED_RE}', ['exitcode','local_rank','pid']) AS m"
              " FROM events_base WHERE host IS NOT NULL AND message LIKE '%failed (exitcode:%local_rank:%')"
              " WHERE m.pid <> ''")
    # Root Cause / Failures entries (block events keep the whole entry in raw)
    qs.append(_sel("root_cause", host="m.host", rank="m.rank", local_rank="m.local_rank", pid="m.pid") +
              f" FROM (SELECT unnest(regexp_extract_all(raw, '{ENTRY_RE.replace(chr(39), chr(39)*2)}')) AS s"
              " FROM events_base WHERE raw LIKE '%exitcode%' AND raw LIKE '%local_rank%' AND raw LIKE '%host%') x,"
              f" LATERAL (SELECT regexp_extract(s, '{ENTRY_RE}', ['host','rank','local_rank','exitcode','pid']) AS m)")
    # NCCL comm init: rank + cuda device / bus id, host and pid from the event
    if has_columns(con, "nccl_comm", "rank"):
        gpu = "coalesce(CAST(f.cuda_dev AS VARCHAR), e.gpu)" if has_columns(con, "nccl_comm", "cuda_dev") else "e.gpu"
        qs.append(_sel("nccl_comm", host="e.host", rank="f.rank", pid="e.pid", gpu=gpu) +
                  " FROM nccl_comm f JOIN events_base e USING (event_id) WHERE f.rank IS NOT NULL")
    return qs


def rendezvous_links(con) -> list[dict]:
    """(host, local_rank, rank) from torchrun's rendezvous result lines of one agent.

    The result is printed as consecutive lines `local_ranks=[0, 1]` and `global_ranks=[2, 3]`
    (one event each, or one block); pair them per file, nearest following line."""
    q = r"""
        WITH l AS (
            SELECT file_id, line, host,
                   regexp_extract(raw, '(?:^|\s)local_ranks=\[([0-9, ]*)\]', 1) AS lr,
                   regexp_extract(raw, '(?:^|\s)global_ranks=\[([0-9, ]*)\]', 1) AS gr
            FROM events_base
            WHERE host IS NOT NULL AND (raw LIKE '%local_ranks=[%' OR raw LIKE '%global_ranks=[%')
        ), lr AS (SELECT * FROM l WHERE lr <> ''), gr AS (SELECT * FROM l WHERE gr <> '')
        SELECT lr.host, lr.lr, (SELECT g.gr FROM gr g WHERE g.file_id = lr.file_id AND g.line >= lr.line
                                ORDER BY g.line LIMIT 1) AS gr
        FROM lr
    """
    out = []
    for r in rows(con, q):
        if not r["gr"]:
            continue
        try:
            lrs = [int(x) for x in r["lr"].split(",") if x.strip()]
            grs = [int(x) for x in r["gr"].split(",") if x.strip()]
        except ValueError:
            continue
        if len(lrs) != len(grs):
            continue
        out.extend({"host": r["host"], "local_rank": a, "rank": b} for a, b in zip(lrs, grs))
    return out


def srun_runs_agents(con) -> bool:
    """True when srun --label streams carry torchrun agents (torchrun under srun): then the
    label is the agent's task index, not a rank."""
    return con.execute("""
        SELECT count(*) FROM (SELECT 1 FROM events WHERE envelopes LIKE 'srun_label%'
            AND (kind IN ('rdzv_complete', 'rdzv_join', 'worker_start', 'worker_failed')
                 OR raw LIKE '%torch/distributed/elastic/agent/%' OR raw LIKE '%torch/distributed/run.py%')
            LIMIT 1)""").fetchone()[0] > 0


def build_base(con: duckdb.DuckDBPyConnection) -> None:
    """Temp view `events_base`: events with the srun label reinterpreted when srun runs
    torchrun agents (label -> task index -> node via `srun: error: NODE: task T`; the rank
    from the inner `[rankN]:` prefix or from (node, local_rank) later)."""
    con.execute("CREATE OR REPLACE TEMP TABLE srun_label_host (task INTEGER, host VARCHAR)")
    if not srun_runs_agents(con):
        con.execute("CREATE OR REPLACE TEMP VIEW events_base0 AS SELECT *, CAST(NULL AS INTEGER) AS srun_task "
                    "FROM events")
        _pod_host(con)
        return
    from .hostlist import expand_ranges
    pairs: dict[int, set] = {}
    for node, rng in con.execute(r"""
            SELECT regexp_extract(raw, 'srun: error: ([^:\s]+): tasks? ([0-9][0-9,\- ]*):', 1),
                   replace(regexp_extract(raw, 'srun: error: ([^:\s]+): tasks? ([0-9][0-9,\- ]*):', 2), ' ', '')
            FROM events WHERE raw LIKE '%srun: error:%task%'""").fetchall():
        try:
            for t in expand_ranges(rng):
                pairs.setdefault(t, set()).add(node)
        except ValueError:
            continue
    uniq = [[t, next(iter(h))] for t, h in pairs.items() if len(h) == 1 and next(iter(h))]
    if uniq:
        con.executemany("INSERT INTO srun_label_host VALUES (?, ?)", uniq)
    # Stores of schema 1 have no task column: the label was in rank there.
    task = "coalesce(e.task, e.rank)" if con.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_name = 'events' AND column_name = 'task'"
    ).fetchone()[0] else "e.rank"
    con.execute(r"""
        CREATE OR REPLACE TEMP VIEW events_base0 AS
        SELECT e.* REPLACE (
                   CASE WHEN e.envelopes LIKE 'srun_label%'
                        THEN TRY_CAST(nullif(regexp_extract(e.raw, '^\s*\d+:\s+(?:\[default\d+\]:)?\[rank(\d+)\]:', 1), '')
                                      AS INTEGER)
                        ELSE e.rank END AS rank,
                   CASE WHEN e.envelopes LIKE 'srun_label%' THEN coalesce(e.host, lh.host) ELSE e.host END AS host),
               CASE WHEN e.envelopes LIKE 'srun_label%' THEN {task} END AS srun_task
        FROM events e LEFT JOIN srun_label_host lh ON e.envelopes LIKE 'srun_label%' AND lh.task = {task}
    """.replace("{task}", task))
    _pod_host(con)


POD_PATH_RE = r"/pods/[a-z0-9-]+_([a-z0-9.-]+)_[0-9a-f-]{8,}/[a-z0-9-]+/\d+\.log"


def _pod_host(con) -> None:
    """events_base: the pod from a kubelet pod-log path when the event has none, and the node
    from the pod when one node is known for it (kubectl get pods -o wide / describe)."""
    # a kubectl describe / get file about one pod: its lines are about that pod
    con.execute("""
        CREATE OR REPLACE TEMP TABLE file_pod AS
        SELECT file_id, any_value(pod) AS pod FROM events
        WHERE pod IS NOT NULL AND format LIKE 'kube%' GROUP BY file_id HAVING count(DISTINCT pod) = 1
    """)
    con.execute(f"""
        CREATE OR REPLACE TEMP VIEW events_base1 AS
        SELECT e.* REPLACE (coalesce(e.pod, nullif(regexp_extract(e.file, '{POD_PATH_RE}', 1), ''),
                                     CASE WHEN e.format LIKE 'kube%' THEN fp.pod END) AS pod)
        FROM events_base0 e LEFT JOIN file_pod fp ON fp.file_id = e.file_id
    """)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE pod_host AS
        SELECT pod, any_value(host) AS host FROM (SELECT DISTINCT pod, host FROM events_base1
                                                  WHERE pod IS NOT NULL AND host IS NOT NULL)
        GROUP BY pod HAVING count(*) = 1
    """)
    con.execute("""
        CREATE OR REPLACE TEMP VIEW events_base AS
        SELECT e.* REPLACE (coalesce(e.host, ph.host) AS host)
        FROM events_base1 e LEFT JOIN pod_host ph ON e.host IS NULL AND ph.pod = e.pod
    """)


def build_identity(con: duckdb.DuckDBPyConnection) -> None:
    """Create temp table `identity` and temp view `events_id`."""
    build_base(con)
    con.execute("CREATE OR REPLACE TEMP TABLE identity AS " + " UNION ALL ".join(link_sources(con)))
    rz = rendezvous_links(con)
    if rz:
        con.executemany("INSERT INTO identity (host, rank, local_rank, source) VALUES (?, ?, ?, 'rendezvous')",
                        [[r["host"], r["rank"], r["local_rank"]] for r in rz])
    build_maps(con)
    _events_view(con)


def add_links(con: duckdb.DuckDBPyConnection, links: list[dict], source: str) -> None:
    """More links found later (e.g. launcher exit reports read on the aligned view)."""
    links = [lk for lk in links if sum(lk.get(c) is not None for c in ID_COLS) >= 2]
    if not links:
        return
    con.executemany("INSERT INTO identity (host, rank, local_rank, pid, source) VALUES (?, ?, ?, ?, ?)",
                    [[lk.get("host"), lk.get("rank"), lk.get("local_rank"), lk.get("pid"), source] for lk in links])
    build_maps(con)


def build_maps(con: duckdb.DuckDBPyConnection) -> None:
    """The unambiguous maps the events_id view joins (re-run after add_links)."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE id_hostpid AS
        SELECT host, pid, CASE WHEN count(DISTINCT rank) = 1 THEN any_value(rank) END AS rank,
               CASE WHEN count(DISTINCT local_rank) = 1 THEN any_value(local_rank) END AS local_rank,
               CASE WHEN count(DISTINCT gpu) = 1 THEN any_value(gpu) END AS gpu
        FROM identity WHERE host IS NOT NULL AND pid IS NOT NULL GROUP BY ALL
    """)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE id_hostlocal AS
        SELECT host, local_rank, CASE WHEN count(DISTINCT rank) = 1 THEN any_value(rank) END AS rank
        FROM identity WHERE host IS NOT NULL AND local_rank IS NOT NULL AND rank IS NOT NULL GROUP BY ALL
    """)
    # pid alone only when every link naming that pid agrees on one host
    con.execute("""
        CREATE OR REPLACE TEMP TABLE id_pid AS
        SELECT pid, any_value(host) AS host, CASE WHEN count(DISTINCT rank) = 1 THEN any_value(rank) END AS rank,
               CASE WHEN count(DISTINCT local_rank) = 1 THEN any_value(local_rank) END AS local_rank
        FROM identity WHERE pid IS NOT NULL GROUP BY pid
        HAVING count(DISTINCT host) = 1 AND count(*) FILTER (WHERE host IS NULL) = 0
    """)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE id_rank AS
        SELECT rank, CASE WHEN count(DISTINCT host) = 1 THEN any_value(host) END AS host,
               CASE WHEN count(DISTINCT local_rank) = 1 THEN any_value(local_rank) END AS local_rank
        FROM identity WHERE rank IS NOT NULL AND host IS NOT NULL GROUP BY rank
    """)


def _events_view(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
        CREATE OR REPLACE TEMP VIEW events_id AS
        WITH a AS (
            SELECT e.* EXCLUDE (rank, local_rank, host, gpu),
                   e.rank AS rank0, e.local_rank AS local_rank0, e.host AS host0, e.gpu AS gpu0,
                   coalesce(e.host, p.host) AS host1,
                   coalesce(e.rank, hp.rank, p.rank) AS rank1,
                   coalesce(e.local_rank, hp.local_rank, p.local_rank) AS local_rank1,
                   coalesce(e.gpu, hp.gpu) AS gpu
            FROM events_base e
            LEFT JOIN id_hostpid hp ON hp.host = e.host AND hp.pid = e.pid
            LEFT JOIN id_pid p ON e.host IS NULL AND p.pid = e.pid
        ), b AS (
            SELECT a.*, coalesce(a.rank1, hl.rank) AS rank2
            FROM a LEFT JOIN id_hostlocal hl ON hl.host = a.host1 AND hl.local_rank = a.local_rank1
        )
        SELECT b.* EXCLUDE (rank0, local_rank0, host0, host1, rank1, local_rank1, rank2, srun_task),
               coalesce(b.host1, r.host) AS host, b.rank2 AS rank,
               coalesce(b.local_rank1, r.local_rank) AS local_rank,
               concat_ws(',', CASE WHEN b.host0 IS NULL AND coalesce(b.host1, r.host) IS NOT NULL THEN 'host' END,
                              CASE WHEN b.rank0 IS NULL AND b.rank2 IS NOT NULL THEN 'rank' END,
                              CASE WHEN b.local_rank0 IS NULL AND coalesce(b.local_rank1, r.local_rank) IS NOT NULL
                                   THEN 'local_rank' END,
                              CASE WHEN b.gpu0 IS NULL AND b.gpu IS NOT NULL THEN 'gpu' END) AS id_inferred
        FROM b LEFT JOIN id_rank r ON b.host1 IS NULL AND r.rank = b.rank2
    """)


def identity_table(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """The consolidated links (one row per distinct link), for views and reports."""
    if not table_exists(con, "identity"):
        build_identity(con)
    return rows(con, "SELECT DISTINCT * EXCLUDE (source), string_agg(DISTINCT source, ',') AS sources "
                     "FROM identity GROUP BY ALL ORDER BY host NULLS LAST, rank NULLS LAST, local_rank NULLS LAST")


def lookup(con, *, host=None, pid=None, rank=None, local_rank=None, pod=None) -> dict:
    """Fill what the links know about one process (used for the verdict's culprit)."""
    out = {"host": host, "pid": pid, "rank": rank, "local_rank": local_rank, "gpu": None, "pod": pod}
    if host is not None and pid is not None:
        r = con.execute("SELECT rank, local_rank, gpu FROM id_hostpid WHERE host = ? AND pid = ?",
                        [host, pid]).fetchone()
        if r:
            out["rank"] = out["rank"] if out["rank"] is not None else r[0]
            out["local_rank"] = out["local_rank"] if out["local_rank"] is not None else r[1]
            out["gpu"] = r[2]
    if host is None and pid is not None:
        r = con.execute("SELECT host, rank, local_rank FROM id_pid WHERE pid = ?", [pid]).fetchone()
        if r:
            out["host"] = r[0]
            out["rank"] = out["rank"] if out["rank"] is not None else r[1]
            out["local_rank"] = out["local_rank"] if out["local_rank"] is not None else r[2]
    if out["rank"] is None and out["host"] is not None and out["local_rank"] is not None:
        r = con.execute("SELECT rank FROM id_hostlocal WHERE host = ? AND local_rank = ?",
                        [out["host"], out["local_rank"]]).fetchone()
        if r:
            out["rank"] = r[0]
    if out["rank"] is not None:
        r = con.execute("SELECT host, local_rank FROM id_rank WHERE rank = ?", [out["rank"]]).fetchone()
        if r:
            out["host"] = out["host"] if out["host"] is not None else r[0]
            out["local_rank"] = out["local_rank"] if out["local_rank"] is not None else r[1]
    if out["pid"] is None and out["host"] is not None and out["rank"] is not None:
        r = con.execute("SELECT CASE WHEN count(DISTINCT pid) = 1 THEN any_value(pid) END FROM identity "
                        "WHERE host = ? AND (rank = ? OR (rank IS NULL AND local_rank = ?)) AND pid IS NOT NULL",
                        [out["host"], out["rank"], out["local_rank"]]).fetchone()
        if r and r[0] is not None:
            out["pid"] = r[0]
    if out["host"] is None and pod is not None:
        r = con.execute("SELECT host FROM pod_host WHERE pod = ?", [pod]).fetchone()
        if r:
            out["host"] = r[0]
    if out["host"] is not None:
        for col in ("pod", "gpu"):
            if out[col] is None:
                r = con.execute(f"SELECT CASE WHEN count(DISTINCT {col}) = 1 THEN any_value({col}) END FROM identity "
                                f"WHERE host = ? AND rank IS NOT DISTINCT FROM ? AND {col} IS NOT NULL",
                                [out["host"], out["rank"]]).fetchone()
                if r and r[0] is not None:
                    out[col] = r[0]
    return out
