"""Identity resolution: one table linking rank <-> local_rank <-> host <-> pid <->
pod/container <-> gpu <-> job/step, from every source that states a link.

Sources (each optional; fact tables are used only when present):
- events: rows that carry two or more identity columns at once;
- torchrun agent lines `failed (exitcode: N) local_rank: L (pid: P)` (host from the event);
- torchrun Root Cause / Failures entries (host, rank, local_rank, exitcode, pid);
- torchrun rendezvous results (`local_ranks=[0, 1]` / `global_ranks=[2, 3]` of one agent);
- NCCL comm init facts (rank, cuda_dev, bus_id; host and pid from the event), and the
  GPU's PCI id that bus_id is (NCCL's int64 busId): the join to an Xid's or an AER
  line's PCI id, so that a GPU fault on a host names the rank that used that GPU;
- the identity layer (fact table identity_found, parsers/identity.toml): each token's
  finding (a Ray worker's pid and its node's IP, srun's node and task, the kernel OOM
  killer's pid on the host that logged it, an Xid's GPU and pid) and each stream's
  carried value with the stream's own identity (a rank file's host from its NCCL lines).

A link is used only when it is unambiguous: (host, pid) -> rank when exactly one rank
was ever seen for that pair, never pid alone when two hosts share the pid. Each link's
`source` says where it came from (`events`, `nccl_comm`, `nccl_busid`, `token:<id>`,
`stream:<pattern or token>`, ...).

`build_identity(con)` creates temp table `identity` (the links) and temp view
`events_id` (events whose missing rank / local_rank / host / gpu are filled from the
links; column `id_inferred` says which were filled)."""

from __future__ import annotations

import re

import duckdb

from .util import columns, has_columns, has_rows, rows, sql_file, table_exists

ID_COLS = ("host", "rank", "local_rank", "pid", "pod", "container", "gpu", "job_id", "step_id")
# every column of a line that the identity views read (event_groups.sql groups by them)
KEY_COLS = ID_COLS + ("file_id", "file", "format", "task", "srun_lbl", "srun_rank")

# A Root Cause / Failures entry, as one multi-line block or text.
ENTRY_RE = (r"host\s*:\s*(?P<host>\S+)\s+rank\s*:\s*(?P<rank>\d+)\s*\(local_rank:\s*(?P<local_rank>\d+)\)"
            r"\s+exitcode\s*:\s*(?P<exitcode>-?\d+)\s*\(pid:\s*(?P<pid>\d+)\)")
AGENT_FAILED_RE = r"failed \(exitcode: (?P<exitcode>-?\d+)\) local_rank: (?P<local_rank>\d+) \(pid: (?P<pid>\d+)\)"

# A torchrun agent writes its own socket.getfqdn() as each failure entry's 'host'
# (torch/distributed/elastic/multiprocessing/errors/__init__.py, ChildFailedError._format_failure): inside a pod
# that is the POD's hostname (its name, or '<name>.<subdomain>...'), not a node. is_pod_hostname(h, pod): whether
# host h is pod `pod`'s own hostname (pod as 'ns/name' or 'name'; NULL pod: no). The one place the rule is
# written: worker_exits.sql and link_sources read it (a hostNetwork pod's hostname is its node's: not matched,
# kept as a node). A temp macro, made known to a connection by define_macros (as marks.define does has_mark).
POD_HOSTNAME_MACRO = ("CREATE OR REPLACE TEMP MACRO is_pod_hostname(h, pod) AS "
                      "(pod IS NOT NULL AND lower(split_part(h, '.', 1)) = lower(regexp_replace(pod, '^.*/', '')))")


def define_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Make the identity macros (is_pod_hostname) known to connection `con`."""
    con.execute(POD_HOSTNAME_MACRO)


def _sel(src: str, source_sql: str | None = None, **cols) -> str:
    """SELECT of ID_COLS (typed) and `source`: the literal `src`, or the SQL `source_sql`."""
    parts = []
    for c in ID_COLS:
        v = cols.get(c, "NULL")
        t = {"rank": "INTEGER", "local_rank": "INTEGER", "pid": "BIGINT"}.get(c, "VARCHAR")
        parts.append(f"CAST({v} AS {t}) AS {c}")
    return "SELECT " + ", ".join(parts) + f", {source_sql or repr(src)} AS source"


def link_sources(con: duckdb.DuckDBPyConnection) -> list[str]:
    """SELECT statements, one per source present in this store, each giving ID_COLS + source."""
    qs = []
    nn = " + ".join(f"(CASE WHEN {c} IS NULL THEN 0 ELSE 1 END)" for c in ID_COLS)
    qs.append(_sel("events", **{c: c for c in ID_COLS}) +
              f" FROM (SELECT DISTINCT {', '.join(ID_COLS)} FROM events_base_g WHERE {nn} >= 2)")
    # torchrun agent: "failed (exitcode: 1) local_rank: 1 (pid: 7261)"
    qs.append(_sel("agent_failed", host="host", local_rank="m.local_rank", pid="m.pid") +
              f" FROM (SELECT host, regexp_extract(message, '{AGENT_FAILED_RE}', ['exitcode','local_rank','pid']) AS m"
              " FROM events_base WHERE host IS NOT NULL AND has_mark(marks, 'hot') AND (message LIKE '%failed (exitcode:%local_rank:%'))"
              " WHERE m.pid <> ''")
    # Root Cause / Failures entries (block events keep the whole entry in raw). An entry whose host is the pod's
    # own hostname (is_pod_hostname) links its rank to that pod (whose node pod_host gives), not to a node of the
    # pod's name
    own = "is_pod_hostname(m.host, pod)"
    qs.append(_sel("root_cause", host=f"CASE WHEN {own} THEN NULL ELSE m.host END", pod=f"CASE WHEN {own} THEN pod END",
                   rank="m.rank", local_rank="m.local_rank", pid="m.pid") +
              f" FROM (SELECT pod, unnest(regexp_extract_all(raw, '{ENTRY_RE.replace(chr(39), chr(39)*2)}')) AS s"
              " FROM events_base WHERE has_mark(marks, 'hot') AND (raw LIKE '%exitcode%' AND raw LIKE '%local_rank%' AND raw LIKE '%host%')) x,"
              f" LATERAL (SELECT regexp_extract(s, '{ENTRY_RE}', ['host','rank','local_rank','exitcode','pid']) AS m)")
    # NCCL comm init: rank + cuda device / bus id, host and pid from the event; the world's
    # communicator only (a sub-group's or a split's rank is the process's place in that group)
    if world_comms(con):
        # one link per distinct (communicator rank, device, line identity), not per comm-init line
        # (hundreds of thousands with NCCL_DEBUG=INFO): the maps count distinct values only
        dev = "CAST(f.cuda_dev AS VARCHAR)" if has_columns(con, "nccl_comm", "cuda_dev") else "CAST(NULL AS VARCHAR)"
        # first per class and a line's own identity (event_rows: no text per line), then per key
        own = ("rank", "local_rank", "pid", "task", "srun_lbl", "srun_rank")
        keys = ", ".join(f"r.{c}" if c in own else f"c.{c}" for c in KEY_COLS)
        # (the lines' own columns as world_comms read them with the communicators, in its one pass over
        # the lines; else joined again: two more passes over every line's ids, 1.3 CPU-s on a 1 GB store)
        lines = has_columns(con, "nccl_world", "line_class_id")
        line_cols = ("f.line_class_id AS class_id, " + ", ".join(f"f.line_{c} AS {c}" for c in own) if lines
                     else "e.class_id, " + ", ".join("e." + c for c in own))
        world = "nccl_world f" if lines else "nccl_world f JOIN event_rows_keyed e USING (event_id)"
        con.execute(f"CREATE OR REPLACE TEMP TABLE nccl_keys AS SELECT DISTINCT r.nccl_rank, r.nccl_dev, {keys} "
                    f"FROM (SELECT DISTINCT f.rank AS nccl_rank, {dev} AS nccl_dev, {line_cols} FROM {world} "
                    "WHERE f.rank IS NOT NULL) r JOIN event_classes c USING (class_id)")
        base_views(con, "nccl_keys", "_n")
        qs.append(_sel("nccl_comm", host="host", rank="nccl_rank", pid="pid", gpu="coalesce(nccl_dev, gpu)") +
                  " FROM events_base_n")
        if has_columns(con, "nccl_comm", "bus_id"):
            # the GPU's PCI id: what an Xid or an AER line of the same host names
            # (each distinct line class, rank and busId first: the PCI id of 72, not of 1.1 M lines)
            world = ("(SELECT DISTINCT line_class_id AS class_id, rank, bus_id FROM nccl_world) f" if lines
                     else "nccl_world f JOIN event_rows e USING (event_id)")
            con.execute("CREATE OR REPLACE TEMP TABLE nccl_bus AS SELECT DISTINCT c.host, f.rank, "
                        f"{nccl_bus_pci('f.bus_id')} AS gpu FROM {world} JOIN event_classes c USING (class_id) "
                        "WHERE f.rank IS NOT NULL AND f.bus_id IS NOT NULL")
            qs.append(_sel("nccl_busid", host="host", rank="rank", gpu="gpu") + " FROM nccl_bus WHERE gpu IS NOT NULL")
    if has_columns(con, "identity_found", "token"):
        qs.append(found_links(con))
    return qs


# the columns of a communicator's line that nccl_world keeps beside the fact's (as line_<column>)
WORLD_LINE_COLS = ("class_id", "rank", "local_rank", "pid", "task", "srun_lbl", "srun_rank")


def world_comms(con: duckdb.DuckDBPyConnection) -> bool:
    """Temp table `nccl_world` (made once per connection; diagnose makes it again): the rows of fact
    table nccl_comm that are a world communicator, the largest one each host's processes joined
    (NCCL's `comm ... rank R nranks N` gives R within that communicator: a process group of 2 or a
    ncclCommSplit child says `rank 0` for global rank 2). False when the store has no NCCL
    communicator lines with ranks."""
    from ..store import LINE_FACTS, line_rank_sql
    if not has_columns(con, "nccl_comm", "rank"):
        return False
    have = columns(con, "nccl_comm")
    line_cols = [c for c, _ in LINE_FACTS["nccl_comm"] if c in have]
    own = f"f.* EXCLUDE ({', '.join(line_cols)})" if line_cols else "f.*"
    if not has_columns(con, "nccl_comm", "nranks"):
        con.execute(f"CREATE TEMP TABLE IF NOT EXISTS nccl_world AS SELECT {own} FROM nccl_comm f")
        return True
    if table_exists(con, "nccl_world"):
        return True
    # A communicator's line from the columns the engine wrote beside the fact (store.LINE_FACTS): the
    # line's class and own identity, as event_rows_keyed gives them, and whether it says `nranks N` (the
    # rows kept: those of the lines that say it), where this joined every line of the store (1.0-1.8
    # CPU-s of a 1 GB ingest's end). Each host's largest communicator from an aggregate joined back, not
    # a window: a window over the rows (1.1 M on a 1 GB corpus) partitioned and carried every column
    # through its sort. max() over a host's rows either way, NULL hosts one group as in PARTITION BY,
    # compared IS NOT DISTINCT.
    lines = ""
    if table_exists(con, "id_mode") and table_exists(con, "event_rows_keyed"):
        agents = con.execute("SELECT agents FROM id_mode").fetchone()[0]
        srun = ("(c.envelopes LIKE 'srun_label%') AS line_srun_lbl, f.line_srun_rank AS line_srun_rank" if agents
                else "CAST(NULL AS BOOLEAN) AS line_srun_lbl, CAST(NULL AS INTEGER) AS line_srun_rank")
        lines = (f", f.line_class_id, {line_rank_sql(con, 'f.line_rank', 'f.file_id')} AS line_rank, "
                 "CAST(f.line_local_rank AS INTEGER) AS line_local_rank, f.line_pid, "
                 f"CAST(f.line_task AS INTEGER) AS line_task, {srun}")
    con.execute(f"""
        CREATE TEMP TABLE nccl_world AS
        WITH j AS MATERIALIZED (
            SELECT {own}{lines}, c.host AS world_host FROM nccl_comm f JOIN event_classes c ON c.class_id = f.line_class_id
            WHERE f.line_nranks IS NOT NULL),
        m AS (SELECT world_host, max(nranks) AS world_nranks FROM j GROUP BY world_host)
        SELECT j.* EXCLUDE (world_host) FROM j JOIN m ON j.world_host IS NOT DISTINCT FROM m.world_host
        WHERE j.nranks IS NOT DISTINCT FROM m.world_nranks
    """)
    return True


def found_links(con) -> str:
    """The links of the identity layer (fact table identity_found): each row's columns, and the
    host of the line it was found on when the row names none (a token's finding is about the
    machine that logged it, unless it names another: Ray's worker IP, srun's node). An srun task
    is the rank when srun runs the ranks themselves (not torchrun agents)."""
    agents = con.execute("SELECT agents FROM id_mode").fetchone()[0]
    task = "NULL" if agents else "f.task"
    host = "CASE WHEN f.host IS NULL THEN e.host ELSE f.host END"
    nn = " + ".join(f"(CASE WHEN {c} IS NULL THEN 0 ELSE 1 END)" for c in ID_COLS)
    cols = {"host": host, "rank": f"coalesce(f.rank, {task})", "local_rank": "f.local_rank", "pid": "f.pid",
            "pod": "f.pod", "container": "f.container", "gpu": "f.gpu", "job_id": "f.job_id", "step_id": "f.step_id"}
    source = "CASE WHEN f.token LIKE 'stream:%' THEN f.token ELSE 'token:' || f.token END"
    return ("SELECT * FROM (" + _sel("", source, **cols) +
            " FROM identity_found f JOIN event_rows r USING (event_id) JOIN event_classes e USING (class_id))"
            f" WHERE {nn} >= 2")


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
            -- either; a contains (`_` would make it a slower LIKE), on the lines marked for it (marks.py)
            WHERE host IS NOT NULL AND has_mark(marks, 'hot') AND (raw LIKE '%ranks=[%')
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


# deepspeed/launcher/launch.py main: logger.info(f"global_rank_mapping={global_rank_mapping}"), a
# defaultdict(list) of the hostfile's node names (world_info's keys, the names runner.py hands pdsh -w)
# to the global ranks of their processes, printed alike by every node's launcher.
_DS_NODE = re.compile(r"'([^']+)': \[([0-9, ]*)\]")
_DS_LOCAL = {"localhost", "127.0.0.1"}


def deepspeed_mapping_links(con) -> list[dict]:
    """(host, rank, local_rank) from DeepSpeed's `global_rank_mapping=` lines. launch.py spawns a
    node's processes in the order of its list (dist_rank = global_rank_mapping[local_node][local_proc])
    and gives each LOCAL_RANK = dist_rank % num_local_procs (num_local_procs: the length of that
    node's list). A node name is the host as pdsh and NCCL print it (a name cut at its first dot,
    an IP whole); 'localhost' (no hostfile) names no host."""
    q = """SELECT DISTINCT raw FROM events_base
           WHERE has_mark(marks, 'hot') AND (raw LIKE '%global_rank_mapping=%')"""
    out: dict[tuple, dict] = {}
    for r in rows(con, q):
        for node, ranks in _DS_NODE.findall(r["raw"].split("global_rank_mapping=", 1)[1]):
            if node in _DS_LOCAL:
                continue
            try:
                rs = [int(x) for x in ranks.split(",") if x.strip()]
            except ValueError:
                continue
            host = node if re.fullmatch(r"\d{1,3}(?:\.\d{1,3}){3}", node) else node.split(".", 1)[0]
            for g in rs:
                out[(host, g)] = {"host": host, "rank": g, "local_rank": g % len(rs)}
    return list(out.values())


def srun_runs_agents(con) -> bool:
    """True when srun --label streams carry torchrun agents (torchrun under srun): then the
    label is the agent's task index, not a rank. As build_base found it for this connection
    (temp table id_mode), else read from the lines: a pass over every srun line's text (1.3
    CPU-s on a 15 M-line run, which the detectors asked five times more)."""
    if table_exists(con, "id_mode"):
        return bool(con.execute("SELECT agents FROM id_mode").fetchone()[0])
    return _srun_runs_agents(con)


def _srun_runs_agents(con) -> bool:
    from .. import marks
    marks.define(con)
    # an agent's kinds (its lines' classes: no text), else its source paths in raw (marked lines only)
    agent_kinds = "kind IN ('rdzv_complete', 'rdzv_join', 'worker_start', 'worker_failed')"
    return con.execute(f"""
        SELECT count(*) FROM (SELECT 1 FROM events WHERE envelopes LIKE 'srun_label%'
            AND {agent_kinds} LIMIT 1)""").fetchone()[0] > 0 \
        or con.execute("""
        SELECT count(*) FROM (SELECT 1 FROM events WHERE envelopes LIKE 'srun_label%' AND has_mark(marks, 'hot')
            AND (raw LIKE '%torch/distributed/elastic/agent/%' OR raw LIKE '%torch/distributed/run.py%')
            LIMIT 1)""").fetchone()[0] > 0 \
        or _srun_tasks_beside_agents(con, agent_kinds)


def _srun_tasks_beside_agents(con, agent_kinds: str) -> bool:
    """`srun torchrun ...` without --label: srun's own account of its tasks (`srun: error: NODE: task
    T: Out Of Memory`) beside a torchrun agent's lines (its worker failed, rendezvous) in one output
    file: srun's tasks are the agents (srun runs the ranks themselves only when no agent is there)."""
    # The files with an agent's lines first (their classes say so: none in most stores, and then no line
    # is read), then srun's account among their lines: as one join of every line with every line of its
    # file, DuckDB's plan varied with the store's views, and read every line's ids and raw (1.7 CPU-s on a
    # 15 M-line run where no agent wrote)
    files = [r[0] for r in con.execute(f"SELECT DISTINCT file_id FROM events WHERE {agent_kinds} ORDER BY 1").fetchall()]
    return bool(files) and con.execute("""
        SELECT count(*) FROM (SELECT 1 FROM event_lines WHERE file_id IN (SELECT unnest($1))
            AND raw LIKE '%srun: error: %task%' LIMIT 1)""", [files]).fetchone()[0] > 0


# The rank of a line that came through an srun --label stream of torchrun agents: its inner
# `[rankN]:` prefix (the label itself is the agent's task index).
SRUN_RANK = (r"TRY_CAST(nullif(regexp_extract(raw, '^\s*\d+:\s+(?:\[default\d+\]:)?\[rank(\d+)\]:', 1), '') "
             "AS INTEGER)")


def _srun_keys(agents: bool) -> str:
    """The columns srun_lbl and srun_rank of a line (see events_with_keys): constants when srun
    runs no agents (then no line is reread)."""
    if not agents:
        return "CAST(NULL AS BOOLEAN) AS srun_lbl, CAST(NULL AS INTEGER) AS srun_rank"
    return f"(envelopes LIKE 'srun_label%') AS srun_lbl, {SRUN_RANK} AS srun_rank"


def events_with_keys(con, src: str = "events") -> str:
    """A SELECT of `events` (or `src`, a relation of its columns) with the columns the identity views
    read beside the line's own: srun_lbl (the line came through an srun --label stream that carries
    torchrun agents), srun_rank (the rank of its inner `[rankN]:` prefix) and task. Temp view
    events_keyed, the source of base_views()."""
    agents, has_task = con.execute("SELECT agents, has_task FROM id_mode").fetchone()
    cols = "*" if has_task else "*, CAST(NULL AS INTEGER) AS task"
    return f"SELECT {cols}, {_srun_keys(agents)} FROM {src}"


def rows_with_keys(con) -> str:
    """event_rows (a line's own columns, store schema 3) with srun_lbl and srun_rank as in
    events_with_keys, and the line's attempt (ranktrace.correlate.attempts.line_attempt: 1 until
    the attempts are known): temp view event_rows_keyed, what queries/align/event_groups.sql groups
    (it joins the classes itself, once per class, not once per line). With agents the classes
    are joined here for `envelopes` (`raw` is event_rows' own: no column is ambiguous)."""
    from .attempts import line_attempt
    agents = con.execute("SELECT agents FROM id_mode").fetchone()[0]
    attempt, join = line_attempt(con)
    rows_src = "event_rows"
    if has_rows(con, "interpolated_times"):   # an interpolated time told on the line's own clock
        rows_src = ("(SELECT e.* REPLACE (coalesce(it.ts, e.ts) AS ts) FROM event_rows e "
                    "LEFT JOIN interpolated_times it ON it.event_id = e.event_id)")
    if not agents:
        return f"SELECT r.*, {_srun_keys(agents)}, {attempt} AS attempt FROM {rows_src} r{join}"
    return (f"SELECT r.*, {_srun_keys(agents)}, {attempt} AS attempt FROM {rows_src} r "
            f"JOIN event_classes c USING (class_id){join}")


def interpolated_stamp(con: duckdb.DuckDBPyConnection) -> str:
    """What the interpolated_times in sight (temp: a diagnosis's; else the store's) hold, in short."""
    if not has_rows(con, "interpolated_times"):
        return ""
    return str(con.execute("SELECT count(*), sum(event_id), sum(epoch_us(ts)) FROM interpolated_times").fetchone())


def base_views(con, src: str, sfx: str) -> None:
    """Temp views events_base0{sfx}, events_base1{sfx}, events_base{sfx} over relation `src`
    (events, or groups / a subset of them with the same identity columns plus srun_lbl,
    srun_rank, task): the srun label reinterpreted, the pod from its log path, the node from
    the pod. Row by row: each row's result depends on its own columns and on the temp tables
    build_base made from the whole store, so a subset gives the rows the whole would."""
    agents = con.execute("SELECT agents FROM id_mode").fetchone()[0]
    if not agents:
        con.execute(f"CREATE OR REPLACE TEMP VIEW events_base0{sfx} AS "
                    f"SELECT * EXCLUDE (srun_lbl, srun_rank), CAST(NULL AS INTEGER) AS srun_task FROM {src}")
    else:
        step, step_join = _step_host_join(con, src)
        con.execute(f"""
            CREATE OR REPLACE TEMP VIEW events_base0{sfx} AS
            SELECT e.* EXCLUDE (srun_lbl, srun_rank) REPLACE (
                       CASE WHEN e.srun_lbl THEN e.srun_rank ELSE e.rank END AS rank,
                       CASE WHEN e.srun_lbl THEN coalesce({step}e.host, lh.host) ELSE e.host END AS host),
                   CASE WHEN e.srun_lbl THEN coalesce(e.task, e.rank) END AS srun_task
            FROM {src} e LEFT JOIN srun_label_host lh ON e.srun_lbl AND lh.task = coalesce(e.task, e.rank){step_join}
        """)
    con.execute(f"""
        CREATE OR REPLACE TEMP VIEW events_base1{sfx} AS
        SELECT e.* REPLACE (coalesce(e.pod, nullif(regexp_extract(e.file, '{POD_PATH_RE}', 1), ''),
                                     CASE WHEN e.format LIKE 'kube%' THEN fp.pod END) AS pod)
        FROM events_base0{sfx} e LEFT JOIN file_pod fp ON fp.file_id = e.file_id
    """)
    if sfx == "_g":   # the node of a pod, from every group (= every line) that names both
        _LOOKUPS.clear()   # lookup() reads pod_host
        # A host that is only its file's path hint (a bundle kept in a directory named like a host,
        # gpu43/kubectl_describe_pod_x.txt) does not count against one the text names: the pod's
        # describe dump names its node on one line and the directory's name on the others.
        con.execute("""
            CREATE OR REPLACE TEMP TABLE pod_host AS
            SELECT pod, any_value(host) AS host
            FROM (SELECT DISTINCT e.pod, e.host, coalesce(e.host = f.host, false) AS by_path
                  FROM events_base1_g e LEFT JOIN files f USING (file_id)
                  WHERE e.pod IS NOT NULL AND e.host IS NOT NULL
                  QUALIFY by_path = min(by_path) OVER (PARTITION BY e.pod))   -- the text's hosts, where it names one
            GROUP BY pod HAVING count(DISTINCT host) = 1
        """)
    con.execute(f"""
        CREATE OR REPLACE TEMP VIEW events_base{sfx} AS
        SELECT e.* REPLACE (coalesce(e.host, ph.host) AS host)
        FROM events_base1{sfx} e LEFT JOIN pod_host ph ON e.host IS NULL AND ph.pod = e.pod
    """)


def _step_host_join(con, src: str) -> tuple[str, str]:
    """(the term before the line's own host, the join) that give an srun label's line the node its task
    ran on in the job step the line belongs to (srun_step_host); nothing for a relation with no line
    span of one file (a group's lines: min_line..last_line)."""
    cols = set(columns(con, src))
    span = (("e.line", "e.line") if "line" in cols else ("e.min_line", "e.last_line")
            if {"min_line", "last_line"} <= cols else None)
    if span is None or "file_id" not in cols or not has_rows(con, "srun_step_host"):
        return "", ""
    return ("sh.host, ", " LEFT JOIN srun_step_host sh ON e.srun_lbl AND sh.file_id = e.file_id "
            f"AND sh.task = coalesce(e.task, e.rank) AND {span[0]} > sh.lo AND {span[1]} < sh.hi")


def _srun_step_hosts(con: duckdb.DuckDBPyConnection, reports: list[tuple[int, int, int, str]]) -> None:
    """Temp table srun_step_host (file_id, task, lo, hi, host): in an srun --label output that holds
    more than one job step (a requeued job's runs appended to one file), the node each task ran on in
    each step, lines lo..hi exclusive. srun's own report lines (`srun: error: NODE: task T: ...`,
    slurmstepd's) end a step; a task runs on one node per step, and a requeue may give it another (the
    node that failed is left out): the NCCL lines of the task's label in the step name it (their
    `host:pid:tid` prefix is the writer's). A value carried from an earlier step's lines (the new
    launcher's first lines, before its NCCL lines) or the task's node in srun's reports of another
    step is then not taken for this step's."""
    con.execute(r"""
        INSERT INTO srun_step_host
        WITH k AS (   -- the classes read (a few): srun's step ends, and the labels' NCCL lines that name a host
            SELECT class_id, file_id, host, format = 'nccl' AS named FROM event_classes
            WHERE file_id IN (SELECT file_id FROM event_classes WHERE envelopes LIKE 'srun_label%')
              AND ((format IN ('slurm_srun', 'slurm_stepd') AND coalesce(envelopes, '') NOT LIKE 'srun_label%')
                   OR (format = 'nccl' AND envelopes LIKE 'srun_label%' AND host IS NOT NULL))
        ), lines AS MATERIALIZED (   -- their lines, in one pass
            SELECT k.file_id, k.host, k.named, r.task, r.line FROM event_rows r JOIN k USING (class_id)
        ), ends AS (
            SELECT DISTINCT file_id, line FROM lines WHERE NOT named
        ), steps AS (
            SELECT file_id, coalesce(lag(line) OVER (PARTITION BY file_id ORDER BY line), 0) AS lo, line AS hi FROM ends
            UNION ALL
            SELECT file_id, max(line), 9223372036854775807 FROM ends GROUP BY file_id
        ), named AS (
            SELECT DISTINCT file_id, task, line, host FROM lines WHERE named AND task IS NOT NULL
        )
        SELECT s.file_id, n.task, s.lo, s.hi, any_value(n.host)
        FROM named n JOIN steps s ON s.file_id = n.file_id AND n.line > s.lo AND n.line < s.hi
        GROUP BY s.file_id, n.task, s.lo, s.hi HAVING count(DISTINCT n.host) = 1
    """)
    # Where no NCCL line of a task's label named its node: srun's report of the task's end (`srun: error:
    # NODE: task T: Exited ...`, `reports`) names the node its lines before it ran on, back to the task's
    # previous report in the file (the run before a requeue). A requeued job's task runs on another node
    # each run, one output per restart or all appended: a job-wide map of task to node holds none of them.
    named = {tuple(r) for r in con.execute("SELECT DISTINCT file_id, task FROM srun_step_host").fetchall()}
    spans, last = [], {}
    for file_id, line, task, node in reports:
        if (file_id, task) not in named:
            spans.append([file_id, task, last.get((file_id, task), 0), line, node])
            last[(file_id, task)] = line
    if spans:
        con.executemany("INSERT INTO srun_step_host VALUES (?, ?, ?, ?, ?)", spans)


def build_base(con: duckdb.DuckDBPyConnection) -> None:
    """Temp view `events_base`: events with the srun label reinterpreted when srun runs
    torchrun agents (label -> task index -> node via `srun: error: NODE: task T`; the rank
    from the inner `[rankN]:` prefix or from (node, local_rank) later). Also temp table
    `event_groups` (queries/align/event_groups.sql, the one pass over every line) and its
    view `events_base_g`."""
    from .. import marks
    marks.define(con)   # the queries below, event_groups.sql and every view made on these test has_mark()
    define_macros(con)   # link_sources and worker_exits.sql read is_pod_hostname()
    con.execute("CREATE OR REPLACE TEMP TABLE srun_label_host (task INTEGER, host VARCHAR)")
    con.execute("CREATE OR REPLACE TEMP TABLE srun_step_host (file_id INTEGER, task INTEGER, lo BIGINT, hi BIGINT, "
                "host VARCHAR)")
    agents = _srun_runs_agents(con)
    # the classes that have lines (util.platforms asks it per attempt: a pass over every line's class id)
    con.execute("CREATE OR REPLACE TEMP TABLE line_classes AS SELECT DISTINCT class_id FROM event_rows")
    # Stores of schema 1 have no task column: the label was in rank there.
    has_task = "task" in columns(con, "events")
    con.execute("CREATE OR REPLACE TEMP TABLE id_mode AS SELECT ? AS agents, ? AS has_task", [agents, has_task])
    if agents:
        from .hostlist import expand_ranges
        reports: list[tuple[int, int, int, str]] = []   # srun's reports: (file_id, line, task, node)
        for file_id, line, node, rng in con.execute(r"""
                SELECT file_id, line, m.node, replace(m.tasks, ' ', '') FROM (
                    SELECT file_id, line,
                           regexp_extract(raw, 'srun: error: ([^:\s]+): tasks? ([0-9][0-9,\- ]*):', ['node', 'tasks']) AS m
                    FROM events WHERE raw LIKE '%srun: error:%task%') ORDER BY file_id, line""").fetchall():
            try:
                reports += [(file_id, line, t, node) for t in expand_ranges(rng) if node]
            except ValueError:
                continue
        pairs: dict[int, set] = {}
        for _, _, t, node in reports:
            pairs.setdefault(t, set()).add(node)
        uniq = [[t, next(iter(h))] for t, h in pairs.items() if len(h) == 1]
        if uniq:
            con.executemany("INSERT INTO srun_label_host VALUES (?, ?)", uniq)
        _srun_step_hosts(con, reports)
    # a kubectl describe / get file about one pod: its lines are about that pod
    con.execute("""
        CREATE OR REPLACE TEMP TABLE file_pod AS
        SELECT file_id, any_value(pod) AS pod FROM events
        WHERE pod IS NOT NULL AND format LIKE 'kube%' GROUP BY file_id HAVING count(DISTINCT pod) = 1
    """)
    con.execute("CREATE OR REPLACE TEMP VIEW events_keyed AS " + events_with_keys(con))
    from .attempts import stored_cuts
    stored_cuts(con)   # the groups ingest kept may be split by attempt: take them as they are
    _groups(con)
    base_views(con, "events_keyed", "")


def _groups(con: duckdb.DuckDBPyConnection) -> None:
    """Temp table event_groups (from the store when it kept the same ones) and its views events_base_g."""
    con.execute("CREATE OR REPLACE TEMP VIEW event_rows_keyed AS " + rows_with_keys(con))
    if groups_stamp(con) == _stored_stamp(con):
        con.execute(f"CREATE OR REPLACE TEMP TABLE event_groups AS SELECT * FROM main.{GROUPS_TABLE}")
    elif table_exists(con, "group_slot"):
        if not _split_parts(con):
            _make_parts(con)
        con.execute("CREATE OR REPLACE TEMP TABLE event_groups AS " + _parts_sql(con)[1])
    else:
        con.execute("CREATE OR REPLACE TEMP TABLE event_groups AS " + sql_file("align/event_groups.sql"))
    base_views(con, "event_groups", "_g")   # makes pod_host


# An ingest groups every line twice with event_groups.sql: for the clock, then split by the attempts the
# clock let it find (each pass 2.4 CPU-s on the 1 GB corpus). It makes the groups from parts instead
# (temp table group_parts: event_groups.sql's partial groups, also keyed by a slot of time, `width`
# microseconds of temp table group_slot), and splits them by attempt from the parts: a part whose lines
# lie on one side of every cut of its class takes its attempt from its first time; the lines of the
# (class, slot) of a part a cut falls inside are grouped again, those only. Every aggregate of
# event_groups.sql combines from its parts, so the groups are those of the one statement.
def _parts_sql(con: duckdb.DuckDBPyConnection, where: str = "") -> tuple[str, str]:
    """(the parts of the lines of event_rows_keyed `where`, the groups of temp table group_parts): the two
    halves of queries/align/event_groups.sql, its partial groups keyed by slot too."""
    width = con.execute("SELECT width FROM group_slot").fetchone()[0]
    text = sql_file("align/event_groups.sql")
    e_end = "+ line AS tl\n    FROM event_rows_keyed\n), p AS ("
    p_keys = "SELECT class_id, rank, local_rank, pid, task, srun_lbl, srun_rank, attempt, sane,\n"
    final = "\n)\nSELECT k.host,"
    if not (text.count(e_end) == text.count(p_keys) == text.count(final) == 1):
        raise AssertionError("queries/align/event_groups.sql: not the two steps _parts_sql cuts it into")
    text = text.replace(e_end, f"+ line AS tl, epoch_us(ts) // {int(width)} AS slot\n    FROM event_rows_keyed{where}"
                               "\n), p AS (")
    text = text.replace(p_keys, p_keys.rstrip("\n") + " slot,\n")
    head, tail = text.split(final)
    return head + "\n)\nSELECT * FROM p", "WITH p AS (SELECT * FROM temp.group_parts)\nSELECT k.host," + tail


def _make_parts(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE OR REPLACE TEMP TABLE group_parts AS " + _parts_sql(con)[0])
    con.execute("CREATE OR REPLACE TEMP TABLE group_parts_made AS SELECT ? AS interpolated",
                [interpolated_stamp(con)])


def _split_parts(con: duckdb.DuckDBPyConnection) -> bool:
    """group_parts split by the attempts of temp table class_cuts (or given the attempt 1 again, without
    one); False when there are no parts."""
    from .attempts import cut_exprs, line_attempt
    if not table_exists(con, "group_parts"):
        return False
    stamp = interpolated_stamp(con)
    if con.execute("SELECT interpolated FROM group_parts_made").fetchone()[0] != stamp:
        # The interpolated times (clock.write_interpolated_times) are lines of classes whose time is
        # interpolated or that name no host in a console of several clocks: the parts of those classes (a
        # few thousand lines of the long run's 15 M) are made again, the others are the lines as they are
        from .clock import retimed_classes
        _parts_again(con, retimed_classes(con))
        con.execute("UPDATE group_parts_made SET interpolated = ?", [stamp])
    # a part's attempt: a line's (attempts.line_attempt) at its first time, ts (the parts are keyed by sane)
    attempt, join = line_attempt(con)
    inside = " OR ".join(f"(r.ts < {c} AND {c} <= r.max_ts)" for c in cut_exprs(con))
    con.execute("CREATE OR REPLACE TEMP TABLE group_cut AS SELECT DISTINCT r.class_id, r.slot FROM group_parts r"
                f"{join} WHERE r.sane AND ({inside or 'false'})")
    width = con.execute("SELECT width FROM group_slot").fetchone()[0]
    classes = [c for (c,) in con.execute("SELECT DISTINCT class_id FROM group_cut ORDER BY 1").fetchall()]
    again = ""
    if classes:   # (a constant list and range first: filters the scan of the lines takes in)
        lo, hi = con.execute("SELECT min(slot), max(slot) + 1 FROM group_cut").fetchone()
        where = (f" WHERE class_id IN ({', '.join(map(str, classes))})"
                 f" AND ts >= make_timestamp({lo * width}) AND ts < make_timestamp({hi * width})"
                 " AND EXISTS (SELECT 1 FROM group_cut c WHERE c.class_id = event_rows_keyed.class_id"
                 f" AND c.slot = epoch_us(event_rows_keyed.ts) // {int(width)})")
        again = f" UNION ALL BY NAME SELECT * FROM ({_parts_sql(con, where)[0]})"
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE group_parts_split AS
        SELECT r.* REPLACE ({attempt} AS attempt) FROM group_parts r{join}
        WHERE NOT EXISTS (SELECT 1 FROM group_cut c WHERE c.class_id = r.class_id AND c.slot = r.slot){again}""")
    con.execute("DROP TABLE temp.group_parts")
    con.execute("ALTER TABLE temp.group_parts_split RENAME TO group_parts")
    return True


def _parts_again(con: duckdb.DuckDBPyConnection, classes_sql: str) -> None:
    """The parts of the classes of `classes_sql` made again from their lines (event_rows_keyed as it is now)."""
    classes = [c for (c,) in con.execute(classes_sql + " ORDER BY 1").fetchall()]
    if not classes:
        return
    listed = ", ".join(map(str, classes))   # (a constant list: a filter the scan of the lines takes in)
    con.execute("CREATE OR REPLACE TEMP TABLE group_parts_split AS SELECT * FROM group_parts "
                f"WHERE class_id NOT IN ({listed}) UNION ALL BY NAME "
                f"SELECT * FROM ({_parts_sql(con, f' WHERE class_id IN ({listed})')[0]})")
    con.execute("DROP TABLE temp.group_parts")
    con.execute("ALTER TABLE temp.group_parts_split RENAME TO group_parts")


def regroup(con: duckdb.DuckDBPyConnection) -> None:
    """Split the groups by attempt (after ranktrace.correlate.attempts wrote class_cuts): event_groups
    and every view over it, made again."""
    _groups(con)
    events_views(con, "_g")


# The groups of event_groups.sql, kept in the store by the ingest that made them
# (store.refresh_summaries): the one pass over every line is then not made again
# by every reader (a quarter of `diagnose` on a 10 M-line store). The stamp says
# what they were made of: the events (their count, the files' ids and event
# counts) and the exact SQL that grouped them; a reader whose SQL or store
# differs makes them anew.
GROUPS_TABLE = "event_groups_stored"
GROUPS_STAMP = "event_groups_stamp"


def groups_stamp(con: duckdb.DuckDBPyConnection) -> str:
    """What temp table event_groups is made of, as it would be made now (after
    temp view events_keyed exists)."""
    import hashlib
    views = con.execute("SELECT sql FROM duckdb_views() WHERE view_name IN ('events_keyed', 'event_rows_keyed') "
                        "AND temporary ORDER BY view_name").fetchall()
    sql = "\0".join(v[0] for v in views) + "\0" + sql_file("align/event_groups.sql")
    if table_exists(con, "class_cuts"):   # the groups are split by attempt: where the cuts are is part of them
        sql += "\0" + str(con.execute("SELECT * FROM class_cuts ORDER BY ALL").fetchall())
    if has_rows(con, "interpolated_times"):   # and the interpolated times they were made with
        sql += "\0" + interpolated_stamp(con)
    n_events = con.execute("SELECT count(*) FROM event_rows").fetchone()[0]   # = events, without the join
    files = con.execute("SELECT count(*), sum(file_id), sum(events) FROM files").fetchone()
    return hashlib.sha256(f"{sql}\0{n_events}\0{files}".encode()).hexdigest()


def _stored_stamp(con: duckdb.DuckDBPyConnection) -> str | None:
    if not table_exists(con, GROUPS_TABLE):
        return None
    got = con.execute("SELECT value FROM main.meta WHERE key = ?", [GROUPS_STAMP]).fetchone()
    return got[0] if got else None


def store_groups(con: duckdb.DuckDBPyConnection) -> None:
    """Keep temp table event_groups (just made by build_base on this store) in the store."""
    stamp = groups_stamp(con)
    con.execute(f"CREATE OR REPLACE TABLE main.{GROUPS_TABLE} AS SELECT * FROM temp.event_groups")
    con.execute("INSERT OR REPLACE INTO main.meta VALUES (?, ?)", [GROUPS_STAMP, stamp])


def forget_groups(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"DROP TABLE IF EXISTS main.{GROUPS_TABLE}")
    con.execute("DELETE FROM main.meta WHERE key = ?", [GROUPS_STAMP])


POD_PATH_RE = r"/pods/[a-z0-9-]+_([a-z0-9.-]+)_[0-9a-f-]{8,}/[a-z0-9-]+/\d+\.log"


def pci(expr: str) -> str:
    """SQL: the PCI bus id `expr` names as domain:bus:device ('0000:3b:00' of '0000:3B:00.0',
    the NVRM Xid's 'PCI:0000:3b:00'), NULL when it is not one (a CUDA device index)."""
    return f"nullif(regexp_extract(lower({expr}), '([0-9a-f]{{4,8}}:[0-9a-f]{{2}}:[0-9a-f]{{2}})', 1), '')"


# pci() on a Python value (LinkMaps.hostgpu): the same pattern, on the lower-cased text
_PCI = re.compile(r"([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2})")


def nccl_bus_pci(expr: str) -> str:
    """SQL: NCCL's busId (the hex of its int64: domain << 20 | bus << 12 | device << 4 | function,
    src/misc/utils.cc int64ToBusId) as `pci` writes a PCI id."""
    v = f"TRY_CAST('0x' || {expr} AS BIGINT)"
    return f"printf('%04x:%02x:%02x', {v} >> 20, ({v} >> 12) & 255, ({v} >> 4) & 255)"


def build_identity(con: duckdb.DuckDBPyConnection) -> None:
    """Create temp table `identity` and temp view `events_id`."""
    build_base(con)
    con.execute("CREATE OR REPLACE TEMP TABLE identity AS " + " UNION ALL ".join(link_sources(con)))
    rz = rendezvous_links(con)
    if rz:
        con.executemany("INSERT INTO identity (host, rank, local_rank, source) VALUES (?, ?, ?, 'rendezvous')",
                        [[r["host"], r["rank"], r["local_rank"]] for r in rz])
    ds = deepspeed_mapping_links(con)
    if ds:
        con.executemany("INSERT INTO identity (host, rank, local_rank, source) VALUES (?, ?, ?, 'deepspeed_mapping')",
                        [[r["host"], r["rank"], r["local_rank"]] for r in ds])
    file_rank_hosts(con)
    build_maps(con)
    events_views(con, "")
    events_views(con, "_g")


def file_rank_hosts(con: duckdb.DuckDBPyConnection) -> None:
    """Temp table file_rank_host: a rank's node as the lines of its own file name it (events_views): lines
    that carry both, and the world communicator's init lines (NCCL's `host:pid:tid ... rank R nranks N`),
    which name the node and the global rank in a console whose rank lines name no host. One host per
    (file, rank) or none."""
    world = ""
    if table_exists(con, "nccl_world") and has_columns(con, "nccl_world", "file_id"):
        cls = ("f.line_class_id" if has_columns(con, "nccl_world", "line_class_id")
               else "(SELECT e.class_id FROM event_rows e WHERE e.event_id = f.event_id)")
        world = f"""UNION ALL SELECT DISTINCT f.file_id, f.rank, c.host
                    FROM nccl_world f JOIN event_classes c ON c.class_id = {cls}
                    WHERE f.rank IS NOT NULL AND c.host IS NOT NULL"""
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE file_rank_host AS
        SELECT file_id, rank, any_value(host) AS host
        FROM (SELECT DISTINCT file_id, rank, host FROM events_base_g WHERE rank IS NOT NULL AND host IS NOT NULL
              {world})
        GROUP BY file_id, rank HAVING count(DISTINCT lower(host)) = 1
    """)
    # The node of a file's slurmstepd lines that name none ('slurmstepd: error: Job N exceeded memory limit ...',
    # 'Exceeded step memory limit at some point.'): a job's output holds the messages of the stepds of its own
    # nodes, and a stepd banner ('*** JOB|STEP ... ON <node> CANCELLED AT ...') names the node it runs on. When
    # every line of the file that names a host names that one node, the stepd lines are that node's; a file
    # that names two nodes (srun's 'node: task N' of another node, a second step's banner) names none.
    con.execute("""
        CREATE OR REPLACE TEMP TABLE file_stepd_host AS
        SELECT file_id, any_value(host) AS host
        FROM (SELECT DISTINCT file_id, host, format FROM events_base_g WHERE host IS NOT NULL)
        GROUP BY file_id HAVING count(DISTINCT lower(host)) = 1 AND bool_or(format = 'slurm_stepd')
    """)


def add_links(con: duckdb.DuckDBPyConnection, links: list[dict], source: str) -> None:
    """More links found later (e.g. launcher exit reports read on the aligned view)."""
    links = [lk for lk in links if sum(lk.get(c) is not None for c in ID_COLS) >= 2]
    if not links:
        return
    con.executemany("INSERT INTO identity (host, rank, local_rank, pid, source) VALUES (?, ?, ?, ?, ?)",
                    [[lk.get("host"), lk.get("rank"), lk.get("local_rank"), lk.get("pid"), source] for lk in links])
    build_maps(con)


def build_maps(con: duckdb.DuckDBPyConnection) -> None:
    """The unambiguous maps the events_id view joins (re-run after add_links). A host name is one
    machine whatever the case its emitters write it in (DNS names are case-insensitive: srun's
    'Hpc-07-12' is slurmstepd's 'hpc-07-12', a node's syslog 'GPU-A02' is NCCL's gpu-a02): the maps
    keyed by a host key it by lower(host), and a host counts once in every spelling."""
    _LOOKUPS.clear()   # lookup() reads them
    con.execute("""
        CREATE OR REPLACE TEMP TABLE id_hostpid AS
        SELECT lower(host) AS host, pid, CASE WHEN count(DISTINCT rank) = 1 THEN any_value(rank) END AS rank,
               CASE WHEN count(DISTINCT local_rank) = 1 THEN any_value(local_rank) END AS local_rank,
               CASE WHEN count(DISTINCT gpu) = 1 THEN any_value(gpu) END AS gpu
        FROM identity WHERE host IS NOT NULL AND pid IS NOT NULL GROUP BY ALL
    """)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE id_hostlocal AS
        SELECT lower(host) AS host, local_rank, CASE WHEN count(DISTINCT rank) = 1 THEN any_value(rank) END AS rank
        FROM identity WHERE host IS NOT NULL AND local_rank IS NOT NULL AND rank IS NOT NULL GROUP BY ALL
    """)
    # pid alone only when every link naming that pid and a host agrees on one host (a link with no host
    # names none: the DeepSpeed launcher's 'Killing subprocess P' in a console several nodes write is P's
    # node's, as NCCL's 'host:P:tid' lines say)
    con.execute("""
        CREATE OR REPLACE TEMP TABLE id_pid AS
        SELECT pid, max(host) AS host, CASE WHEN count(DISTINCT rank) = 1 THEN any_value(rank) END AS rank,
               CASE WHEN count(DISTINCT local_rank) = 1 THEN any_value(local_rank) END AS local_rank
        FROM identity WHERE pid IS NOT NULL GROUP BY pid
        HAVING count(DISTINCT lower(host)) = 1
    """)
    # a GPU of a host by its PCI id (NCCL's busId, an Xid's, an AER line's): the rank that used it;
    # kept as the Xid writes it ('0000:3b:00') and as dev_printk does ('0000:3b:00.0'), so that
    # events_id joins a line's gpu as it is (no regexp on every line)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE id_hostgpu AS
        WITH g AS (
            SELECT lower(host) AS host, {pci("gpu")} AS gpu, CASE WHEN count(DISTINCT rank) = 1 THEN any_value(rank) END AS rank
            FROM identity WHERE host IS NOT NULL AND rank IS NOT NULL AND {pci("gpu")} IS NOT NULL GROUP BY ALL
        )
        SELECT host, gpu, rank FROM g UNION ALL SELECT host, gpu || '.0', rank FROM g
    """)
    # a global rank's host and local rank; a link without a host still ties the rank to its local rank
    # (one process's 'RANK=3 ... LOCAL_RANK=1' environment print: a global rank is one process of the job,
    # wherever it ran), and a rank whose links disagree gets neither
    con.execute("""
        CREATE OR REPLACE TEMP TABLE id_rank AS
        SELECT rank, CASE WHEN count(DISTINCT lower(host)) = 1 THEN any_value(host) END AS host,
               CASE WHEN count(DISTINCT local_rank) = 1 THEN any_value(local_rank) END AS local_rank
        FROM identity WHERE rank IS NOT NULL AND (host IS NOT NULL OR local_rank IS NOT NULL) GROUP BY rank
    """)


def events_views(con: duckdb.DuckDBPyConnection, sfx: str) -> None:
    """Temp view events_id{sfx} over events_base{sfx}: missing rank / local_rank / host / gpu filled
    from the links (row by row, like base_views). A rank's host is taken first from the lines of its own
    file that name both (file_rank_host): a job requeued or resubmitted onto other nodes has its rank 0
    on another node, and the links of the whole store then name none."""
    con.execute(f"""
        CREATE OR REPLACE TEMP VIEW events_id{sfx} AS
        WITH a AS (
            SELECT e.* EXCLUDE (rank, local_rank, host, gpu),
                   e.rank AS rank0, e.local_rank AS local_rank0, e.host AS host0, e.gpu AS gpu0,
                   coalesce(e.host, p.host) AS host1,
                   coalesce(e.rank, hp.rank, p.rank, hg.rank) AS rank1,
                   coalesce(e.local_rank, hp.local_rank, p.local_rank) AS local_rank1,
                   coalesce(e.gpu, hp.gpu) AS gpu
            FROM events_base{sfx} e
            LEFT JOIN id_hostpid hp ON hp.host = lower(e.host) AND hp.pid = e.pid
            LEFT JOIN id_pid p ON e.host IS NULL AND p.pid = e.pid
            LEFT JOIN id_hostgpu hg ON e.rank IS NULL AND hg.host = lower(e.host) AND hg.gpu = lower(e.gpu)
        ), b AS (
            SELECT a.*, coalesce(a.rank1, hl.rank) AS rank2
            FROM a LEFT JOIN id_hostlocal hl ON hl.host = lower(a.host1) AND hl.local_rank = a.local_rank1
        )
        SELECT b.* EXCLUDE (rank0, local_rank0, host0, host1, rank1, local_rank1, rank2, srun_task),
               coalesce(b.host1, fr.host, r.host, fs.host) AS host, b.rank2 AS rank,
               coalesce(b.local_rank1, r.local_rank) AS local_rank,
               concat_ws(',', CASE WHEN b.host0 IS NULL AND coalesce(b.host1, fr.host, r.host, fs.host) IS NOT NULL THEN 'host' END,
                              CASE WHEN b.rank0 IS NULL AND b.rank2 IS NOT NULL THEN 'rank' END,
                              CASE WHEN b.local_rank0 IS NULL AND coalesce(b.local_rank1, r.local_rank) IS NOT NULL
                                   THEN 'local_rank' END,
                              CASE WHEN b.gpu0 IS NULL AND b.gpu IS NOT NULL THEN 'gpu' END) AS id_inferred
        FROM b LEFT JOIN id_rank r ON b.host1 IS NULL AND r.rank = b.rank2
        LEFT JOIN file_rank_host fr ON b.host1 IS NULL AND fr.file_id = b.file_id AND fr.rank = b.rank2
        LEFT JOIN file_stepd_host fs ON b.host1 IS NULL AND b.format = 'slurm_stepd' AND fs.file_id = b.file_id
    """)


def identity_table(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """The consolidated links (one row per distinct link), for views and reports."""
    if not table_exists(con, "identity"):
        build_identity(con)
    return rows(con, "SELECT DISTINCT * EXCLUDE (source), string_agg(DISTINCT source, ',') AS sources "
                     "FROM identity GROUP BY ALL ORDER BY host NULLS LAST, rank NULLS LAST, local_rank NULLS LAST")


# lookup()'s answers while the maps it reads are unchanged (build_maps and base_views clear it): a
# diagnosis asks the same few hundred processes again per attempt and candidate (5,000 small queries, 5
# CPU-s, on a run of 128 ranks and 6 attempts). The maps themselves are read once into Python too
# (LinkMaps, kept here under ("maps", id(con)), cleared with the answers): the distinct processes still
# cost ~1,600 small queries (1.7 s on that run), the maps are seven small reads.
_LOOKUPS: dict[tuple, dict] = {}


def lookup(con, *, host=None, pid=None, rank=None, local_rank=None, pod=None, gpu=None) -> dict:
    """Fill what the links know about one process (used for the verdict's culprit). `gpu`: a
    GPU the culprit's line named (an Xid's PCI id names the rank that used it on its host)."""
    key = (id(con), host, pid, rank, local_rank, pod, gpu)
    if key not in _LOOKUPS:
        _LOOKUPS[key] = _lookup(_maps(con, host, pid, rank, local_rank, pod, gpu), host=host, pid=pid, rank=rank,
                                local_rank=local_rank, pod=pod, gpu=gpu)
    return dict(_LOOKUPS[key])


class LinkMaps:
    """The maps _lookup reads (temp tables id_hostpid, id_pid, id_hostgpu, id_hostlocal, id_rank,
    pod_host and identity), read once per connection into dicts. Keys are compared as DuckDB
    compared them when these were queries: an id given as text ('4100') is the number it writes
    (a column of integers), a GPU is its PCI id (pci(): '0000:3B:00.0' -> '0000:3b:00'), a host is
    its lower case (build_maps)."""

    def __init__(self, con):
        q = lambda sql: con.execute(sql).fetchall()
        self._hostpid = {(h, p): (r, lr, g) for h, p, r, lr, g in q("SELECT host, pid, rank, local_rank, gpu FROM id_hostpid")}
        self._pid = {p: (h, r, lr) for p, h, r, lr in q("SELECT pid, host, rank, local_rank FROM id_pid")}
        self._hostgpu = {(h, g): (r,) for h, g, r in q("SELECT host, gpu, rank FROM id_hostgpu")}
        self._hostlocal = {(h, lr): (r,) for h, lr, r in q("SELECT host, local_rank, rank FROM id_hostlocal")}
        self._rank = {r: (h, lr) for r, h, lr in q("SELECT rank, host, local_rank FROM id_rank")}
        self._pod_host = ({p: (h,) for p, h in q("SELECT pod, host FROM pod_host")}
                          if table_exists(con, "pod_host") else {})
        # a global rank's pod, when every link naming both agrees (one process runs in one pod): a torchrun
        # summary in a pod's own log links its ranks to the pod and to no host (link_sources, is_pod_hostname)
        self._rank_pod = {r: p for r, p in q("SELECT rank, any_value(pod) FROM identity WHERE rank IS NOT NULL "
                                             "AND pod IS NOT NULL GROUP BY rank HAVING count(DISTINCT pod) = 1")}
        self._links: dict = {}
        for h, r, lr, p, pod, g in q("SELECT host, rank, local_rank, pid, pod, gpu FROM identity WHERE host IS NOT NULL"):
            self._links.setdefault(h.lower(), []).append({"rank": r, "local_rank": lr, "pid": p, "pod": pod, "gpu": g})

    @staticmethod
    def _int(v):
        """An integer id as the integer columns compare it (text of digits is its number)."""
        if isinstance(v, bool):
            return None
        if isinstance(v, int):
            return v
        if isinstance(v, str) and v.strip().lstrip("+-").isdigit():
            return int(v)
        return v

    @staticmethod
    def _text(v):
        return v if v is None or isinstance(v, str) else str(v)

    @classmethod
    def _host(cls, v):
        """A host as the maps key it (build_maps: its lower case)."""
        v = cls._text(v)
        return v.lower() if v is not None else None

    def hostpid(self, host, pid):
        return self._hostpid.get((self._host(host), self._int(pid)))

    def pid(self, pid):
        return self._pid.get(self._int(pid))

    def hostgpu(self, host, gpu):
        m = _PCI.search(str(gpu).lower())
        return self._hostgpu.get((self._host(host), m.group(1))) if m else None

    def hostlocal(self, host, local_rank):
        return self._hostlocal.get((self._host(host), self._int(local_rank)))

    def rank(self, rank):
        return self._rank.get(self._int(rank))

    def pod_host(self, pod):
        return self._pod_host.get(self._text(pod))

    def rank_pod(self, rank):
        return self._rank_pod.get(self._int(rank))

    @staticmethod
    def _one(values: set):
        return next(iter(values)) if len(values) == 1 else None

    def only_pid(self, host, rank, local_rank):
        """The one pid the links give the host's rank (or its local rank, in links without a rank)."""
        rank, local_rank = self._int(rank), self._int(local_rank)
        return self._one({lk["pid"] for lk in self._links.get(self._host(host), ()) if lk["pid"] is not None and (
            (rank is not None and lk["rank"] == rank)
            or (lk["rank"] is None and local_rank is not None and lk["local_rank"] == local_rank))})

    def only(self, col, host, rank):
        """The one `col` (pod, gpu) the links give the host's rank (rank None: links without a rank)."""
        rank = self._int(rank)
        return self._one({lk[col] for lk in self._links.get(self._host(host), ()) if lk[col] is not None
                          and lk["rank"] == rank})


def _maps(con, *values):
    """The maps of `con`, read once (LinkMaps) until build_maps / base_views make them again."""
    key = ("maps", id(con))
    if key not in _LOOKUPS:
        _LOOKUPS[key] = LinkMaps(con)
    return _LOOKUPS[key]


def _lookup(m: LinkMaps, *, host=None, pid=None, rank=None, local_rank=None, pod=None, gpu=None) -> dict:
    out = {"host": host, "pid": pid, "rank": rank, "local_rank": local_rank, "gpu": gpu, "pod": pod}
    if host is not None and pid is not None:
        r = m.hostpid(host, pid)
        if r:
            out["rank"] = out["rank"] if out["rank"] is not None else r[0]
            out["local_rank"] = out["local_rank"] if out["local_rank"] is not None else r[1]
            out["gpu"] = r[2]
    if host is None and pid is not None:
        r = m.pid(pid)
        if r:
            out["host"] = r[0]
            out["rank"] = out["rank"] if out["rank"] is not None else r[1]
            out["local_rank"] = out["local_rank"] if out["local_rank"] is not None else r[2]
    if out["rank"] is None and out["host"] is not None and gpu is not None:
        r = m.hostgpu(out["host"], gpu)
        if r:
            out["rank"] = r[0]
    if out["rank"] is None and out["host"] is not None and out["local_rank"] is not None:
        r = m.hostlocal(out["host"], out["local_rank"])
        if r:
            out["rank"] = r[0]
    if out["rank"] is not None:
        r = m.rank(out["rank"])
        if r:
            out["host"] = out["host"] if out["host"] is not None else r[0]
            out["local_rank"] = out["local_rank"] if out["local_rank"] is not None else r[1]
    if out["pid"] is None and out["host"] is not None and out["rank"] is not None:
        got = m.only_pid(out["host"], out["rank"], out["local_rank"])
        if got is not None:
            out["pid"] = got
    if out["pod"] is None and out["rank"] is not None:
        out["pod"] = m.rank_pod(out["rank"])
    if out["host"] is None and out["pod"] is not None:
        r = m.pod_host(out["pod"])
        if r:
            out["host"] = r[0]
    if out["host"] is not None:
        for col in ("pod", "gpu"):
            if out[col] is None:
                got = m.only(col, out["host"], out["rank"])
                if got is not None:
                    out[col] = got
    return out
