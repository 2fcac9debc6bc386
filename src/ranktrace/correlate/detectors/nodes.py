"""Hang vs half-dead node: a host whose every line (ranks and launcher) stops while the
other hosts go on logging and tearing down, with no teardown of its own, froze or died
(node_failure). A single live rank that stopped making progress while its launcher kept
working is a hang (see absence.silent_ranks + exits)."""

from __future__ import annotations

import datetime as dt

from ..util import table_exists
from .base import Finding, query

# with no progress to judge by, a host that wrote this long after its last complaint went on past it
QUIET_AFTER = dt.timedelta(seconds=1)
# a live host sees its peers' failure within a collective's timeout (a minute or more by default, 20 s
# at the least seen set): hosts that went on this long after another's last line, complaining or
# tearing down, outlived it
FROZEN_AFTER = dt.timedelta(seconds=60)


def half_dead_nodes(con) -> list[Finding]:
    """Hosts that went quiet: no teardown, and no complaint or cause line the job did not train past
    (a long run's benign warnings before the freeze, and the kernel's stall report of the freeze
    itself, do not make a host a witness)."""
    from ..survival import healthy_until, training_stop
    hs = [h for h in query(con, "host_activity") if h["last_ats"] is not None]
    if len(hs) < 2:
        return []
    healthy = healthy_until(con)
    stop, slack = training_stop(con)

    def quiet_host(h) -> bool:
        if h["n_teardown"] > 0:
            return False
        last_fail = h["last_fail_ats"]
        if last_fail is None or (healthy is not None and last_fail < healthy):
            return True
        if stop is None and healthy is None:
            # no progress line to judge by: its complaint was not its last word (it went on writing
            # after it, then stopped with no teardown)
            return last_fail < h["last_ats"] - QUIET_AFTER
        # it complained while the job still trained, and wrote nothing once training had stopped
        if stop is not None and last_fail < stop and h["last_ats"] <= stop + slack:
            return True
        # in a job that trained: its complaint was its last word, and the other hosts went on long enough
        # to write their own (a watchdog's timeout, a teardown) that a live host would have written too:
        # it froze as it complained (a retried connection, a port that blinked), after the last step
        # logged (an evaluation, a checkpoint in between)
        return stop is not None and last_fail >= h["last_ats"] - QUIET_AFTER and any(
            o["host"] != h["host"] and (o["n_teardown"] > 0 or o["n_symptom"] > 0)
            and o["last_ats"] - h["last_ats"] >= FROZEN_AFTER for o in hs)

    quiet = [h for h in hs if quiet_host(h)]
    tearing = [h for h in hs if (h["n_teardown"] > 0 or h["n_symptom"] > 0) and h not in quiet]
    if not tearing or not quiet or len(quiet) > len(hs) / 2:
        return []
    end_others = min(h["last_ats"] for h in tearing)
    out = []
    for h in quiet:
        gap = (end_others - _latest_end(con, h)).total_seconds()
        if gap < 1.0:
            continue
        # a synchronous job makes no step without every node: one that went quiet while the job still trained
        # (its ranks log nothing past their start, rank 0 logs the steps) was alive until the job's last step,
        # and cannot have frozen, nor failed first, before it
        when, alive = h["last_ats"], ""
        if stop is not None and stop - when > slack:   # (within a step or two: it stopped with the job)
            when, alive = stop, f", and was alive until the job's last step at {stop:%H:%M:%S}"
        out.append(Finding(detector="half_dead_nodes", kind="node_failure",
                           score=0.55 if len(quiet) == 1 else 0.35,
                           why=f"every line of {h['host']} stops at {h['last_ats']:%H:%M:%S}, {gap:.0f}s before the other "
                               f"hosts; it wrote no error and its launcher no teardown (frozen or dead node){alive}",
                           host=h["host"], time=when, extra={"silent_for_s": gap}))
    return out


# the next line with a time of its own after a line of a file, among the hot lines (base.NEXT_TIMED_ATS)
NEXT_TIMED = "SELECT arg_min(ats, line) FROM hot_events_all WHERE file_id = ? AND line > ? AND ts_ok"


def _latest_end(con, h: dict) -> dt.datetime:
    """The latest time host `h` (a host_activity row) can have written its last line, as far as the files
    say: its last timed line's, or, where a file of its goes on past that with lines that carry no time
    (a console of several hosts: mpirun's without --timestamp-output), the next timed line after them in
    that file, which they came before. Read as if at its last timed line, a host whose console lines went
    on to the end with everyone's would read as having stopped minutes early. A file that ends with them
    bounds nothing (a frozen node's own console ends with its last progress bars): its last timed line's."""
    latest = h["last_ats"]
    if not table_exists(con, "hot_events_all"):
        return latest
    for tail in h["untimed_tails"] or []:
        nxt = con.execute(NEXT_TIMED, [tail["file_id"], tail["line"]]).fetchone()[0]
        if nxt is not None:
            latest = max(latest, nxt)
    return latest


def node_events(con) -> list[Finding]:
    """Scheduler / orchestrator lines that name a failed node (the reporter is not the node)."""
    from ..hostlist import expand_hostlist
    by: dict[str, list[dict]] = {}
    unnamed: list[dict] = []
    for r in query(con, "node_events"):
        if not r["node"]:
            unnamed.append(r)
            continue
        try:
            nodes = expand_hostlist(r["node"].strip(",")) if "[" in r["node"] else r["node"].split(",")
        except ValueError:
            nodes = [r["node"]]
        for n in nodes:
            if n:
                by.setdefault(n, []).append(r)
    out = []
    actors = None
    for node, lst in sorted(by.items()):
        # the one process the lines say died with the node (a Ray actor destroyed with it), else none
        pids = {r["pid"] for r in lst if r.get("pid") is not None}
        if not pids and any(r.get("format") == "ray" for r in lst):
            # else the one dead actor a driver's ActorDiedError places on that node (its 'ip:' field): Ray's warning
            # that the node was marked dead names no process, the actor's error after it does (read only for a node
            # Ray said died: the query scans every line's pattern)
            if actors is None:
                actors = query(con, "ray_actor_fields")
            pids = {a["pid"] for a in actors if a["ip"] == node and a["pid"] is not None}
        out.append(Finding(detector="node_events", kind="node_failure", score=0.85 if len(by) == 1 else 0.6,
                           why=f"{len(lst)} scheduler line(s) say node {node} failed ({lst[0]['message'][:100]})",
                           host=node, pid=pids.pop() if len(pids) == 1 else None, time=lst[0]["ats"],
                           evidence=[r["event_id"] for r in lst[:3]], direct=True))
    if not out and unnamed:
        # slurmstepd's '*** JOB 7 ON n1 CANCELLED AT ... DUE TO NODE FAILURE ***' is written on a node that
        # survived (n1 is the reporter): a node failed, the text does not say which
        r = unnamed[0]
        out.append(Finding(detector="node_events", kind="node_failure", score=0.5,
                           why=f"the scheduler says a node failed, not which ({(r['message'] or '').strip()[:100]}): "
                               "slurmctld's log or sacct -D names it",
                           time=r["ats"], evidence=[x["event_id"] for x in unnamed[:3]], direct=True))
    return out
