#!/bin/bash
# Stop what slurm_up.sh started, only that, by the PIDs it recorded under
# /run/ranktrace-capture-slurm (after cancelling jobs still queued).
# Idempotent: nothing recorded -> nothing to do.
# Usage: slurm_down.sh [--purge]   (--purge: also remove state, logs, configs,
#                                   the accounting DB and the fake GPU devices)
set -uo pipefail
STATE=/run/ranktrace-capture-slurm
export SLURM_CONF=/etc/ranktrace-capture/slurm.conf
PURGE=0
[ "${1:-}" = --purge ] && PURGE=1

stop_pid() {  # stop_pid NAME PIDFILE
  local name=$1 f=$2 pid
  [ -s "$f" ] || { rm -f "$f"; return 0; }
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -CONT "$pid" 2>/dev/null   # a node frozen by a scenario must be able to exit
    kill "$pid" 2>/dev/null
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "$name ($pid) did not exit, sending SIGKILL"; kill -9 "$pid" 2>/dev/null
    fi
    echo "stopped $name ($pid)"
  fi
  rm -f "$f"
}

if [ -d "$STATE" ]; then
  if [ -s "$STATE/slurmctld.pid" ] && kill -0 "$(cat "$STATE/slurmctld.pid")" 2>/dev/null; then
    if [ -n "$(squeue -h -o %i 2>/dev/null)" ]; then
      echo "cancelling jobs: $(squeue -h -o %i | tr '\n' ' ')"
      scancel --user=root 2>/dev/null
      for _ in $(seq 30); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 1; done
    fi
  fi
  # the four slurmd take seconds each to shut down: stop them in parallel
  for f in "$STATE"/slurmd-*.pid; do
    [ -e "$f" ] && stop_pid "$(basename "$f" .pid)" "$f" &
  done
  wait
  # slurmstepd processes of our nodes normally exit with their step; end the
  # ones left in our nodes' cgroups (cgroup mode), by PID
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || continue
    if grep -qE '/slurm_n[1-4]/' "$p/cgroup" 2>/dev/null; then
      echo "leftover slurmstepd ${p#/proc/}: $(tr '\0' ' ' < "$p/cmdline")"
      kill -CONT "${p#/proc/}" 2>/dev/null; kill -9 "${p#/proc/}" 2>/dev/null
    fi
  done
  stop_pid slurmctld "$STATE/slurmctld.pid"
  stop_pid slurmdbd "$STATE/slurmdbd.pid"
  stop_pid mariadbd "$STATE/mariadbd.pid"
  stop_pid munged "$STATE/munged.pid"
  rm -f "$STATE/mode" "$STATE/slurm_conf"
  rmdir "$STATE" 2>/dev/null
fi
if [ $PURGE = 1 ]; then
  echo "purging state, logs and configs"
  rm -rf /var/spool/rtcap-slurmctld /var/spool/rtcap-slurmd /var/log/rtcap-slurm
  rm -rf /etc/ranktrace-capture
  rm -f /dev/rtcap-gpu0 /dev/rtcap-gpu1 /dev/rtcap-gpu2 /dev/rtcap-gpu3
  for c in /sys/fs/cgroup/*/slurm_n*; do [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null; done
fi
exit 0
