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
from .base import Finding

# the host behind each OOB address (every attempt's lines: an address names a machine, not an attempt)
OOB_HOSTS = """
    SELECT f.ip, CASE WHEN count(DISTINCT c.host) = 1 THEN any_value(c.host) END AS host
    FROM nccl_oob f JOIN event_rows e USING (event_id) JOIN event_classes c USING (class_id)
    WHERE c.host IS NOT NULL GROUP BY f.ip
"""

# how long before the first completion error a port event of the named host can be its cause (the
# IB transport retries a send ~7 times, seconds each, before it completes with an error)
MAX_LEAD = dt.timedelta(seconds=120)

# the attempt's completion errors: who reported, whom they name, when
COMPLETIONS = """
    SELECT e.event_id, e.ats, e.host AS reporter, e.rank, f.peer
    FROM nccl_ib_completion f JOIN {src} e USING (event_id)
    WHERE e.ats IS NOT NULL
"""

# the named host's own word: a port error / fatal async event of its IB devices (kind network_error)
OWN_EVENTS = """
    SELECT event_id, ats, host, rank, local_rank, pid FROM {src}
    WHERE kind = 'network_error' AND host = ? AND ats IS NOT NULL AND ats >= ? ORDER BY ats, file, line LIMIT 1
"""


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
        n = named.setdefault(peer, {"reporters": set(), "first": r["ats"], "events": []})
        n["reporters"].add(r["reporter"])
        n["first"] = min(n["first"], r["ats"])
        n["events"].append(r["event_id"])
    if not named:
        return []
    most = max(len(n["reporters"]) for n in named.values())
    top = [h for h, n in named.items() if len(n["reporters"]) == most]
    if len(top) != 1:
        return []   # two hosts named as often: the errors do not point at one link
    host, n = top[0], named[top[0]]
    from ..survival import healthy_until
    healthy = healthy_until(con)
    # its own port event, from when the job stopped training on (a flap it trained past is noise)
    since = max(healthy, n["first"] - MAX_LEAD) if healthy is not None else n["first"] - MAX_LEAD
    own = rows(con, OWN_EVENTS.format(src=src), [host, since])
    own = [o for o in own if o["ats"] <= n["first"]]
    who = ", ".join(sorted(n["reporters"]))
    why = (f"IB completion errors of {len(n['reporters'])} other host(s) ({who}) name {host}'s address "
           f"(the peer they lost)")
    if own:
        o = own[0]
        return [Finding(detector="ib_peers", kind="network_error", score=0.8 if most >= 2 else 0.6,
                        why=why + f"; {host} itself logged an IB port event first",
                        host=host, time=o["ats"], evidence=[o["event_id"]] + n["events"][:3], direct=True,
                        extra={"reporters": sorted(n["reporters"])})]
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
    on any rank within minutes): the port blinked, the job's failure is something else. Returns how
    many. Without the completion-error fact table (no such line in the store) nothing followed."""
    cands = [f for f in findings if f.detector == "first_cause" and f.direct and f.kind == "network_error"
             and f.time is not None and f.evidence]
    if not cands:
        return 0
    src = "hot_events" if table_exists(con, "hot_events") else "aligned_events"
    ids = [f.evidence[0] for f in cands]
    ports = {r["event_id"] for r in rows(con, f"SELECT event_id FROM {src} WHERE event_id IN "
                                             f"({', '.join('?' * len(ids))}) AND {PORT_ERROR}", ids)}
    has_fact = has_columns(con, "nccl_ib_completion", "peer")
    n = 0
    for f in cands:
        if f.evidence[0] not in ports:
            continue
        if has_fact and con.execute(FAILED_AFTER.format(src=src), [f.time, f.time]).fetchone()[0] > 0:
            continue
        f.direct = False
        f.score = min(f.score, 0.15)
        f.why += " — no IB work request failed after it (a port that blinked; context, not the cause)"
        n += 1
    return n
