"""The host a fabric failure points at: NCCL's IB completion errors name the peer they lost
(`Got completion from peer <ip><port> with status=...`: the peer's socket address), and every
process says which address it is known by (`NET/IB : Using ...; OOB <iface>:<ip><port>`). The
host that other hosts' completion errors name is the one whose link went away; its own port
error or fatal async event, when it logged one the job did not train past, says so first-hand.
A port error alone is common noise in long runs (a flap that recovers); the peers naming that host
are what separates a link that went down from one that blinked."""

from __future__ import annotations

import datetime as dt

from ..util import has_columns, rows, table_exists
from .base import NEXT_TIMED_ATS, Finding

# the host behind each OOB address (every attempt's lines: an address names a machine, not an attempt)
OOB_HOSTS = """
    SELECT f.ip, CASE WHEN count(DISTINCT c.host) = 1 THEN any_value(c.host) END AS host
    FROM nccl_oob f JOIN event_rows e USING (event_id) JOIN event_classes c USING (class_id)
    WHERE c.host IS NOT NULL GROUP BY f.ip
"""

# how long before the first completion error a port event of the named host can be its cause (the
# IB transport retries a send ~7 times, seconds each, before it completes with an error)
MAX_LEAD = dt.timedelta(seconds=120)

# the attempt's completion errors: who reported, whom they name, when: at the earliest (`ats`) and at the
# latest (`latest`: its own time, or for a line that carries none its file's next timed line's,
# base.NEXT_TIMED_ATS; NULL when none follows). A console whose only timed lines are far apart (a
# progress bar and NCCL's lines carry no time) holds its completion errors at a time minutes too early.
COMPLETIONS = f"""
    SELECT e.event_id, e.ats, CASE WHEN e.ts_ok THEN e.ats ELSE {NEXT_TIMED_ATS} END AS latest,
           e.host AS reporter, e.rank, f.peer
    FROM nccl_ib_completion f JOIN {{src}} e USING (event_id)
    WHERE e.ats IS NOT NULL
"""

# the named host's own word: a port error / fatal async event of its IB devices (kind network_error)
# from when the job stopped training on (a flap it trained past is noise) to the first completion error
# that named it, and no more than MAX_LEAD before that. Both ends are intervals where a line carries no
# time of its own (NCCL's without a launcher's prefix inherit the previous line's: it was written after
# that time and before its file's next timed line, base.NEXT_TIMED_ATS): a port event counts when it can
# have come before the first completion error ($first at the earliest, $latest at the latest; NULL: not
# bounded), and an untimed one unless its file's next timed line came before the job stopped training
# on; its order against the other hosts' lines is known to MAX_LEAD only
OWN_EVENTS = f"""
    SELECT event_id, ats, ts_ok, host, rank, local_rank, pid FROM {{src}} e
    WHERE kind = 'network_error' AND host = $host AND ats IS NOT NULL
      AND CASE WHEN ts_ok THEN ($healthy IS NULL OR ats >= $healthy)
                               AND ($latest IS NULL OR ats <= CAST($latest AS TIMESTAMP))
                               AND ats >= $first - to_seconds($lead)
               ELSE ($latest IS NULL OR ats <= CAST($latest AS TIMESTAMP) + to_seconds($lead))
                    AND ($healthy IS NULL OR coalesce({NEXT_TIMED_ATS}, TIMESTAMP '9999-12-31') >= $healthy) END
    ORDER BY ats, file, line
"""


# the port events after which their own process's next line in its file is an IB completion error: a
# port that went down for good fails the next work request through it, where a flap is followed by the
# process's ordinary work (a communicator made, a step). The order of two hosts' lines that carry no time
# of their own is not known; the order of a process's own lines is.
FAILED_AT_ONCE = """
    WITH o AS (
        SELECT r.event_id, r.file_id, r.line, r.pid FROM event_rows r
        WHERE r.event_id IN (SELECT unnest($ids)) AND r.pid IS NOT NULL
    ), nxt AS (
        SELECT o.event_id, n.event_id AS next_id
        FROM o ASOF JOIN (SELECT event_id, file_id, line, pid FROM event_rows
                          WHERE file_id IN (SELECT file_id FROM o) AND pid IS NOT NULL) n
          ON n.file_id = o.file_id AND n.pid = o.pid AND n.line > o.line
    )
    SELECT event_id FROM nxt WHERE next_id IN (SELECT event_id FROM nccl_ib_completion)
"""


# each port error whose port came back: the next async event of the same device and port in the same file
# and on the same host is 'port active' (every process using the device prints both; the hot lines hold
# both, parsers/marks.toml); `back` is the latest time the 'port active' line can have been written: its
# own, or (NCCL's lines without a launcher's prefix carry none: each took the last timed line's) its file's
# next timed hot line's (base.NEXT_TIMED_ATS; NULL when none follows: it came back, when is not known).
# Every attempt's lines, read once.
RECOVERIES = f"""
    WITH p AS (
        SELECT e.event_id, e.file, e.file_id, e.line, e.host, f.device, f.port, f.event,
               CASE WHEN e.ts_ok THEN e.ats ELSE {NEXT_TIMED_ATS} END AS latest
        FROM nccl_ib_port_event f JOIN hot_events_all e USING (event_id)
        WHERE f.event IN ('port error', 'port active') AND e.ats IS NOT NULL
    ), n AS (
        SELECT event, event_id, lead(event) OVER w AS next_event, lead(latest) OVER w AS back,
               lead(file_id) OVER w AS file_id, lead(line) OVER w AS line
        FROM p WINDOW w AS (PARTITION BY file, host, device, port ORDER BY line)
    )
    SELECT event_id, back, file_id, line FROM n WHERE event = 'port error' AND next_event = 'port active'
"""

# the steps written after a 'port active' line in its file (any rank's: a synchronous job makes no step
# without every rank), on the lines' Parquet with literal bounds (only that stretch's row groups are read)
STEPS_AFTER = """
    SELECT count(DISTINCT step) FROM event_lines
    WHERE file_id = {file_id} AND line > {line} AND line <= {line} + {span} AND step IS NOT NULL
"""
STEPS_SPAN = 5000


def recoveries(con) -> dict[int, tuple]:
    """event_id of a port error -> (when its port said 'port active' again, at the latest (None: not
    known), that line's file_id and line); read once per connection (temp table port_recoveries).
    Empty without the fact table."""
    if not has_columns(con, "nccl_ib_port_event", "event"):
        return {}
    con.execute(f"CREATE TEMP TABLE IF NOT EXISTS port_recoveries AS {RECOVERIES}")
    got = con.execute("SELECT event_id, back, file_id, line FROM port_recoveries").fetchall()
    return {r[0]: tuple(r[1:]) for r in got}


def trained_past(con, host: str | None, rank: int | None, recovery: tuple) -> bool:
    """Whether the job trained a few of its steps after a port came back (survival.STEPS, of its typical
    interval, survival.own_window_s): a flap that broke the transport leaves the next collective
    retrying, and no rank makes a step until it fails; the job's progress speaks for a rank or host that
    logs none (survival.last_progress). By time, else (the 'port active' line carries no time of its
    own) by the steps written after it in its file."""
    from ..survival import STEPS, last_progress, own_window_s, progress_spans
    at, file_id, line = recovery
    if at is not None:
        spans = progress_spans(con)
        last = last_progress(spans, rank, host)
        if last is not None and (last - at).total_seconds() > own_window_s(spans):
            return True
    if file_id is None or line is None:
        return False
    q = STEPS_AFTER.format(file_id=int(file_id), line=int(line), span=STEPS_SPAN)
    return con.execute(q).fetchone()[0] >= STEPS


def ib_peers(con) -> list[Finding]:
    if not (has_columns(con, "nccl_ib_completion", "peer") and has_columns(con, "nccl_oob", "ip")):
        return []
    src = "hot_events" if table_exists(con, "hot_events") else "aligned_events"
    # every attempt's lines: made once per diagnosis
    con.execute(f"CREATE TEMP TABLE IF NOT EXISTS oob_hosts AS {OOB_HOSTS}")
    hosts = {r["ip"]: r["host"] for r in rows(con, "SELECT * FROM oob_hosts") if r["host"]}
    named: dict[str, dict] = {}
    for r in rows(con, COMPLETIONS.format(src=src)):
        peer = hosts.get(r["peer"])
        if peer is None or peer == r["reporter"]:
            continue
        n = named.setdefault(peer, {"reporters": set(), "first": r["ats"], "latest": r["latest"], "events": []})
        n["reporters"].add(r["reporter"])
        n["first"] = min(n["first"], r["ats"])
        # the first completion error came no later than the earliest of their latest times (NULL: unbounded)
        n["latest"] = min((t for t in (n["latest"], r["latest"]) if t is not None), default=None)
        n["events"].append(r["event_id"])
    if not named:
        return []
    from ..survival import healthy_until
    healthy = healthy_until(con)

    def own_events(host: str) -> list[dict]:
        return rows(con, OWN_EVENTS.format(src=src), {"host": host, "healthy": healthy,
                                                      "first": named[host]["first"], "latest": named[host]["latest"],
                                                      "lead": MAX_LEAD.total_seconds()})

    recovered = recoveries(con)
    most = max(len(n["reporters"]) for n in named.values())
    top = sorted(h for h, n in named.items() if len(n["reporters"]) == most)
    # a port event of the host's that came back and was trained past is a flap, not its link going down; so
    # is one after which its own process wrote a few more steps in its file (a link down for good fails
    # the next collective through it: survival.AT_ONCE), the only order known between untimed lines
    from ..survival import STEPS, steps_after
    own = {h: [o for o in own_events(h) if o["event_id"] not in recovered
               or not trained_past(con, h, o["rank"], recovered[o["event_id"]])] for h in top}
    past = steps_after(con, sorted(o["event_id"] for h in top for o in own[h]))
    own = {h: [o for o in own[h] if past.get(o["event_id"], 0) < STEPS] for h in top}
    if len(top) > 1:
        # hosts named as often (two hosts that lost each other): the link that went down is the one whose
        # own port event failed its process's next work request (FAILED_AT_ONCE), else the one whose own
        # port event came last before the completion errors (the transport's retries take the same time
        # on every queue pair; an older port event is a flap from before)
        timed = [h for h in top if own[h]]
        if not timed:
            return []
        # a port that stayed down explains the lost peers; one that came back ('port active') did not
        # go down for good, however little is known of when it came back
        timed = [h for h in timed if any(o["event_id"] not in recovered for o in own[h])] or timed
        at_once = {r["event_id"] for r in rows(con, FAILED_AT_ONCE, {"ids": [o["event_id"] for h in timed
                                                                             for o in own[h]]})}
        timed = [h for h in timed if any(o["event_id"] in at_once for o in own[h])] or timed
        last = {h: own[h][-1]["ats"] for h in timed}
        best = max(last.values())
        top = [h for h in timed if last[h] == best]
        if len(top) != 1:
            return []
    host, n = top[0], named[top[0]]
    own = own[host]
    who = ", ".join(sorted(n["reporters"]))
    why = (f"IB completion errors of {len(n['reporters'])} other host(s) ({who}) name {host}'s address "
           f"(the peer they lost)")
    if own:
        # its port that stayed down: the last such event before the completion errors (an older one is a
        # flap from before, as between hosts above; lines without a time of their own are in file order)
        o = next((x for x in reversed(own) if x["event_id"] not in recovered), own[-1])
        return [Finding(detector="ib_peers", kind="network_error", score=0.8 if most >= 2 else 0.6,
                        why=why + f"; {host} itself logged an IB port event first",
                        host=host, time=o["ats"], evidence=[o["event_id"]] + n["events"][:3], direct=True,
                        extra={"reporters": sorted(n["reporters"]), "ts_ok": o["ts_ok"]})]
    return [Finding(detector="ib_peers", kind="network_error", score=0.45 if most >= 2 else 0.25, why=why,
                    host=host, time=n["first"], evidence=n["events"][:3],
                    extra={"reporters": sorted(n["reporters"])})]


# a port error: the IB async-event thread's report that a port left the active state; "fatal" events
# (local catastrophic error, "async fatal event") are not in it
PORT_ERROR = "message LIKE '%port error%' AND message NOT LIKE '%fatal event%'"

# completion errors after it: the work requests through the port failed (a flap that recovers loses none)
FAILED_AFTER = """
    SELECT count(*) FROM nccl_ib_completion f JOIN {src} e USING (event_id)
    WHERE e.ats >= CAST(? AS TIMESTAMP) - INTERVAL 5 SECOND AND e.ats <= CAST(? AS TIMESTAMP) + INTERVAL 300 SECOND
"""


def uncorroborated_port_errors(con, findings: list[Finding]) -> int:
    """Demote, in place, a port error that no failed work request followed (no IB completion error
    on any rank within minutes): the port blinked, the job's failure is something else; and, when the
    completion errors name the link that went away (ib_peers), a port error of any other host. Returns
    how many. Without the completion-error fact table (no such line in the store) nothing followed."""
    cands = [f for f in findings if f.detector == "first_cause" and f.direct and f.kind == "network_error"
             and f.time is not None and f.evidence]
    if not cands:
        return 0
    lost = {f.host for f in findings if f.detector == "ib_peers" and f.direct and f.host}
    src = "hot_events" if table_exists(con, "hot_events") else "aligned_events"
    ids = [f.evidence[0] for f in cands]
    ports = {r["event_id"] for r in rows(con, f"SELECT event_id FROM {src} WHERE event_id IN "
                                             f"({', '.join('?' * len(ids))}) AND {PORT_ERROR}", ids)}
    has_fact = has_columns(con, "nccl_ib_completion", "peer")
    n = 0
    recovered = recoveries(con)
    for f in cands:
        e = f.evidence[0]
        if e not in ports:
            continue
        if e in recovered and trained_past(con, f.host, f.rank, recovered[e]):
            why = " — the port came back ('port active') and the job trained on after it (a flap; context, not the cause)"
        elif lost and f.host not in lost:
            why = f" — the peers' IB completion errors name {', '.join(sorted(lost))}, not this host (context)"
        elif has_fact and con.execute(FAILED_AFTER.format(src=src), [f.time, f.time]).fetchone()[0] > 0:
            continue
        else:
            why = " — no IB work request failed after it (a port that blinked; context, not the cause)"
        f.direct = False
        f.score = min(f.score, 0.15)
        f.why += why
        n += 1
    return n


# A transport that gave up retrying: the verbs work-completion status IBV_WC_RETRY_EXC_ERR (12; rdma-core
# ibv_wc_status_str 'transport retry counter exceeded') as UCX prints it (openucx src/uct/ib: 'Send completion
# with error on qp 0x%x: %s' (dc_verbs.c), '%s completion with error: transport retry counter exceeded'
# (ib_mlx5_log.c: 'Transport retry count exceeded on %s')) and as NCCL does ('Got completion from peer %s with
# error %d' / 'with status=%s(%d)'). A peer that died leaves the same status (its queue pairs are gone: nothing
# acknowledges), so the lines are symptoms (peer_closed); when the attempt holds no cause line and no launcher's
# report of a worker that died, the transport is all the text accuses: network_error, at the first reporter (the
# host whose sends went unanswered first). Weak: it only names the kind the lines already point at.
RETRY_EXHAUSTED = r"""
    SELECT event_id, ats, host, rank, local_rank, pid FROM {src}
    WHERE kind = 'peer_closed'
      AND (regexp_matches(message, '(?i)transport retry count(?:er)? exceeded')
           OR regexp_matches(message, 'Got completion from peer \S+ with (?:error 12\b|status=(?:[A-Z_]+\()?12\b)'))
    ORDER BY ats NULLS LAST, file, line
"""
SOMETHING_DIED = """
    SELECT count(*) AS n FROM {src}
    WHERE role = 'cause' OR kind IN ('worker_failed', 'failure_summary', 'task_exit', 'job_exit')
"""


def transport_gave_up(con) -> list[Finding]:
    src = "hot_events" if table_exists(con, "hot_events") else "aligned_events"
    lines = rows(con, RETRY_EXHAUSTED.format(src=src))
    if not lines or rows(con, SOMETHING_DIED.format(src=src))[0]["n"]:
        return []
    r = lines[0]
    who = (f"rank {r['rank']}" if r["rank"] is not None else "") + (f" on {r['host']}" if r["host"] else "")
    return [Finding(detector="transport_gave_up", kind="network_error", score=0.2,
                    why=f"{len(lines)} line(s) say the transport gave up retrying (retry counter exceeded), first "
                        f"{who.strip() or 'a process'}; nothing in the text died first-hand",
                    rank=r["rank"], local_rank=r["local_rank"], host=r["host"], pid=r["pid"], time=r["ats"],
                    evidence=[x["event_id"] for x in lines[:3]], extra={"reporters": len(lines)})]
