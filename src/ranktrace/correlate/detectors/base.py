"""What a detector returns, and the small tables of field knowledge they share."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import duckdb

from ..util import rows, sql_file, sql_header, table_exists

# The taxonomy of design.md section 4.
KINDS = ("none", "exception", "crash", "killed", "oom", "gpu_oom", "gpu_fault", "cuda_error", "hang",
         "node_failure", "rendezvous_timeout", "network_error", "desync", "time_limit", "cancelled",
         "scheduling", "unknown",
         "control_plane")   # issue 14: set by ranktrace.correlate.controlplane, not by a detector

# When two causes explain the same culprit, the more specific wins (an Xid explains the CUDA
# error that follows it; an OOM kill explains the SIGKILL).
SPECIFICITY = {k: i for i, k in enumerate((
    "gpu_fault", "oom", "gpu_oom", "node_failure", "time_limit", "cancelled", "scheduling", "crash",
    "cuda_error", "desync", "network_error", "rendezvous_timeout", "killed", "hang", "exception", "unknown"))}

SIGNALS = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
           8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
           14: "SIGALRM", 15: "SIGTERM", 19: "SIGSTOP"}
CRASH_SIGNALS = {4, 6, 7, 8, 11}
# a process's own memory or instruction fault: no cascade dies of these (its deaths are a watchdog's
# SIGABRT, a teardown's SIGTERM or SIGKILL); srun writes them as task states
SELF_FAULT_SIGNALS = {4, 7, 8, 11}
SELF_FAULT_STATES = ("Segmentation fault", "Bus error", "Illegal instruction", "Floating point exception")
# node failures the node's own kernel reports (a CPU stuck in the kernel: 'watchdog: BUG: soft lockup'): the
# line's host is the node, and no cascade makes a kernel's CPU stuck (a peer waiting on a collective sleeps)
OWN_NODE_KINDS = ("kernel_lockup",)


def signal_kind(sig: int | None) -> str | None:
    if sig is None:
        return None
    if sig in CRASH_SIGNALS:
        return "crash"
    if sig in (9, 15, 2, 1, 3):
        return "killed"
    return None


@dataclass
class Finding:
    detector: str
    kind: str
    score: float                  # how strongly this rule alone says "this is the root cause"
    why: str
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    pod: str | None = None
    gpu: str | None = None
    time: dt.datetime | None = None   # aligned
    evidence: list[int] = field(default_factory=list)   # event_ids
    direct: bool = False          # the culprit's own line says what broke
    extra: dict = field(default_factory=dict)

    def key(self) -> tuple:
        if self.rank is not None:
            return ("rank", self.rank)
        if self.host is not None:
            return ("host", self.host)
        if self.pod is not None:
            return ("pod", self.pod)
        return ("job", None)


# The latest time a line `e` of hot_events can have been written: its file's next line with a time of its
# own (a line that carries none inherits the one before it, so it was written between the two); NULL when
# none follows. The next by line, not the earliest of those after it: in a console several hosts write
# to, a later line on another host's clock can read earlier by the alignment's error. Used by survival
# (is a warning survived?) and network (is a port event recent?).
NEXT_TIMED_ATS = ("(SELECT arg_min(n.ats, n.line) FROM hot_events_all n "
                  "WHERE n.file = e.file AND n.line > e.line AND n.ts_ok)")


def query(con: duckdb.DuckDBPyConnection, name: str, params=None, *, around: str | None = None) -> list[dict]:
    """Run queries/detect/<name>.sql over the aligned view: over temp table hot_events when
    diagnose made it (fast on big stores), unless the file says `-- scope: all`. `around`:
    a query of its rows instead, `{}` standing for them (a subquery)."""
    text = sql_file(f"detect/{name}.sql")
    if sql_header(text).get("scope") != "all" and table_exists(con, "hot_events"):
        text = text.replace("aligned_events", "hot_events")
    return rows(con, text if around is None else around.format(f"({text})"), params)
