#!/bin/sh
# Slurm Epilog: drain this node when its kernel log shows an NVIDIA Xid that calls for it
# (queries/data/xid_catalog.csv: action drain_node or reset_gpu), with the Xid as the reason.
#
#   slurm.conf:   Epilog=/path/to/slurm_epilog_ranktrace.sh
#
# slurmd runs it as root on every node of the job after the job ends, with SLURM_JOB_ID and
# SLURMD_NODENAME set. It reads this node's kernel log (`dmesg -T` in UTC, or the files in
# $RANKTRACE_NODE_LOGS), keeps only Xids since the job started (so an Xid that was already
# handled does not drain the node again), and runs
#   ranktrace action --node $SLURMD_NODENAME --since <job start> --platform slurm --execute
# which runs `scontrol update NodeName=<node> State=DRAIN Reason="ranktrace: Xid ..."` and
# nothing else. It always exits 0: a failing epilog would make Slurm drain a healthy node.
#
# Environment (all optional):
#   RANKTRACE            the ranktrace executable (default: ranktrace on PATH)
#   RANKTRACE_NODE_LOGS  a file or directory of this node's logs instead of `dmesg -T`
#   RANKTRACE_EPILOG_LOG append what was found and done to this file (default: syslog via logger,
#                        else nothing; slurmd discards an epilog's output)
#   RANKTRACE_DRY_RUN=1  print the commands, do not drain
#   RANKTRACE_TIMEOUT    seconds before giving up (default 60; Slurm's own limit is PrologEpilogTimeout)
RT=${RANKTRACE:-ranktrace}
NODE=${SLURMD_NODENAME:-$(hostname -s)}
JOB=${SLURM_JOB_ID:-none}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ranktrace-epilog.XXXXXX") || exit 0
trap 'rm -rf "$TMP"' EXIT
out() {
  if [ -n "$RANKTRACE_EPILOG_LOG" ]; then cat >> "$RANKTRACE_EPILOG_LOG"
  elif command -v logger >/dev/null 2>&1; then logger -t ranktrace-epilog
  else cat >/dev/null; fi
}
{
  echo "ranktrace epilog: job $JOB node $NODE $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  if [ -n "$RANKTRACE_NODE_LOGS" ]; then
    SRC=$RANKTRACE_NODE_LOGS
  else
    SRC=$TMP/kernel/dmesg.txt; mkdir -p "$TMP/kernel"
    TZ=UTC dmesg -T > "$SRC" 2>/dev/null || journalctl -k -b -o short-iso --no-pager > "$SRC" 2>/dev/null || true
  fi
  SINCE=
  if [ "$JOB" != none ] && command -v scontrol >/dev/null 2>&1; then
    # StartTime is written in slurmctld's local time without a zone; date -d reads it as local
    START=$(scontrol -o show job "$JOB" 2>/dev/null | tr ' ' '\n' | sed -n 's/^StartTime=//p' | head -1)
    [ -n "$START" ] && SINCE=$(date -u -d "$START" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
  fi
  EXEC=--execute; [ "$RANKTRACE_DRY_RUN" = 1 ] && EXEC=
  if [ -e "$SRC" ]; then
    timeout "${RANKTRACE_TIMEOUT:-60}" "$RT" ingest "$SRC" --db "$TMP/node.duckdb" -q -j 1 &&
    timeout "${RANKTRACE_TIMEOUT:-60}" "$RT" action --db "$TMP/node.duckdb" --node "$NODE" \
      ${SINCE:+--since "$SINCE"} --platform slurm $EXEC
    echo "ranktrace epilog: exit $?"
  else
    echo "ranktrace epilog: no log at $SRC"
  fi
} 2>&1 | out
exit 0
