#!/bin/bash
# Per-node launcher used inside Slurm jobs: give the task the Slurm node's
# name as its host name (own UTS namespace, so n1..n4 differ although all
# slurmd run on one machine), optionally shift this node's clock, then exec
# the command. The PID stays the same through unshare/sh/exec, so slurmstepd
# sees the real exit status of the command.
#   RT_SKEW="n3=+37"  run node n3's processes 37 s ahead (libfaketime)
set -e
NODE=${SLURMD_NODENAME:-$(hostname)}
for spec in ${RT_SKEW//,/ }; do
  if [ "${spec%%=*}" = "$NODE" ]; then
    export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
    export FAKETIME="${spec#*=}s"
  fi
done
unset RT_SKEW
exec unshare --uts sh -c 'hostname "$0" && exec "$@"' "$NODE" "$@"
