"""Open MPI's mpirun (ORTE, 4.x): its output tags and its reports when the job ends badly.

Sources: open-mpi/ompi v4.x orte/mca/iof (--tag-output '[jobid,rank]<stdout>:', --timestamp-output; the tagged,
timestamped form as real_log_shapes 006 holds it), orte/tools/orterun/help-orterun.txt and
orte/mca/errmgr/base/help-errmgr-base.txt (the abort banner, 'mpirun detected that one or more processes exited
with non-zero status', 'mpirun noticed that process rank %d with PID %d on node %s exited on signal %d (%s).'),
orte/mca/errmgr/default_hnp ('ORTE has lost communication with a remote daemon.' with the HNP and remote daemon
names, as public job logs print it). Every report is framed by a line of 74 dashes."""

from __future__ import annotations

import datetime as dt

DASHES = "-" * 74
SIGNAL_NAMES = {6: "Aborted", 9: "Killed", 11: "Segmentation fault", 15: "Terminated"}


def tag(rank: int, stream: str, t: dt.datetime | None = None) -> str:
    """The prefix mpirun --tag-output puts before each line a process wrote ('[1,3]<stderr>:'); with
    --timestamp-output, the time mpirun received it (its own host's clock), first."""
    stamp = f"{t.strftime('%Y-%m-%dT%H:%M:%S')}.{t.microsecond // 1000:03d}Z: " if t is not None else ""
    return f"{stamp}[1,{rank}]<{stream}>:"


def abort_banner() -> list[str]:
    """help-errmgr-base.txt [normal-termination-but]: a process returned non-zero or died of a signal (Open MPI 4
    frames it with 74 dashes, older releases with 55); the report of the first such process follows."""
    return [DASHES, "Primary job  terminated normally, but 1 process returned",
            "a non-zero exit code. Per user-direction, the job has been aborted.", DASHES]


def nonzero_exit(jobid: int, rank: int, code: int) -> list[str]:
    """help-orterun.txt [orterun:non-zero-exit]: the first process that exited non-zero."""
    return [DASHES, "mpirun detected that one or more processes exited with non-zero status, thus causing",
            "the job to be terminated. The first process to do so was:", "",
            f"  Process name: [[{jobid},1],{rank}]", f"  Exit code:    {code}", DASHES]


def noticed_signal(rank: int, pid: int, node: str, sig: int) -> list[str]:
    """help-errmgr-base.txt 'noticed that process rank': a process killed by a signal (PID 0 when the daemon never
    learnt the pid, as CI logs often show)."""
    return [DASHES, f"mpirun noticed that process rank {rank} with PID {pid} on node {node} exited on signal {sig} "
                    f"({SIGNAL_NAMES.get(sig, 'Unknown signal')}).", DASHES]


def lost_daemon(jobid: int, hnp_node: str, vpid: int, node: str) -> list[str]:
    """The HNP lost its TCP connection to a node's orted (the node died or froze): the job is terminated."""
    return [DASHES, "ORTE has lost communication with a remote daemon.", "",
            f"  HNP daemon   : [[{jobid},0],0] on node {hnp_node}",
            f"  Remote daemon: [[{jobid},0],{vpid}] on node {node}", "",
            "This is usually due to either a failure of the TCP network",
            "connection to the node, or possibly an internal failure of",
            "the daemon itself. We cannot recover from this failure, and",
            "therefore will terminate the job.", DASHES]
