#!/bin/bash
# Start a real one-host Slurm 22.05 cluster for the capture harness:
# munged, MariaDB + slurmdbd (so sacct works), slurmctld and four slurmd
# daemons n1..n4 (Debian's slurmd is built with multiple-slurmd support),
# each claiming 4 CPUs and 4 fake GPUs. There is no systemd here: every
# daemon is started by this script and its PID recorded under $STATE, so
# slurm_down.sh stops exactly what we started.
#
# Usage: slurm_up.sh [--fresh] [--verbose] [cgroup|nocgroup|auto]
#   cgroup    proctrack/cgroup + task/cgroup (cgroup v1): real kernel OOM kill
#   nocgroup  proctrack/linuxproc + task/none + OverMemoryKill
#   auto      cgroup if a writable cgroup v1 memory hierarchy exists (default)
#   --fresh   wipe Slurm state, logs and the accounting DB first (job ids from 1)
#   --verbose SlurmctldDebug/SlurmdDebug=verbose (task exits logged by slurmd)
# Idempotent: when the cluster we started is already up (same mode), it
# only checks the nodes are usable and returns.
set -euo pipefail
FRESH=0; MODE=auto; DEBUG=info
for a in "$@"; do
  case "$a" in
    --fresh) FRESH=1 ;;
    --verbose) DEBUG=verbose ;;
    cgroup|nocgroup|auto) MODE=$a ;;
    *) echo "usage: $0 [--fresh] [--verbose] [cgroup|nocgroup|auto]" >&2; exit 2 ;;
  esac
done
HERE=$(cd "$(dirname "$0")" && pwd)
# our own config dir: daemons and clients find it through SLURM_CONF (and
# cgroup.conf, gres.conf, slurmdbd.conf next to it)
CONF_DIR=/etc/ranktrace-capture
export SLURM_CONF=$CONF_DIR/slurm.conf
STATE=/run/ranktrace-capture-slurm
LOGDIR=/var/log/rtcap-slurm
NODES="n1 n2 n3 n4"
HOST=$(hostname)
T0=$(date +%s)
step() { echo "[slurm_up $(date +%T) +$(( $(date +%s) - T0 ))s] $*"; }
die() { echo "slurm_up.sh: $*" >&2; exit 1; }
wait_for() {  # wait_for SECONDS WHAT CMD...
  local n=$1 what=$2; shift 2
  for _ in $(seq $(( n * 2 ))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  die "timed out after ${n}s waiting for $what"
}
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
[ "$(id -u)" = 0 ] || die "must run as root"

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null || ! command -v mariadbd >/dev/null; then
  step "Slurm/munge/MariaDB missing: running install.sh (Debian part only)"
  RANKTRACE_SKIP_TORCH=1 bash "$HERE/install.sh"
fi

if [ "$MODE" = auto ]; then
  if mkdir /sys/fs/cgroup/memory/rtcap-probe 2>/dev/null; then
    rmdir /sys/fs/cgroup/memory/rtcap-probe; MODE=cgroup
  else
    MODE=nocgroup
  fi
fi

# ---------------------------------------------------------------- idempotence
all_up=1
for f in slurmctld slurmdbd slurmd-n1 slurmd-n2 slurmd-n3 slurmd-n4; do
  alive "$STATE/$f.pid" || all_up=0
done
if [ $all_up = 1 ] && [ $FRESH = 0 ] && [ "$(cat "$STATE/mode" 2>/dev/null)" = "$MODE-$DEBUG" ] \
   && scontrol ping 2>/dev/null | grep -q UP; then
  step "already up (mode $MODE, debug $DEBUG)"
  for n in $NODES; do
    st=$(sinfo -h -n "$n" -o %t 2>/dev/null || true)
    case "$st" in idle*|mix*|alloc*) ;; *) scontrol update nodename="$n" state=resume 2>/dev/null || true ;; esac
  done
  wait_for 60 "4 idle nodes" sh -c '[ "$(sinfo -h -N -t idle -o %N | wc -l)" = 4 ]'
  exit 0
fi
if ls "$STATE"/*.pid >/dev/null 2>&1; then
  step "a previous cluster of ours is (partly) up or stale: stopping it first"
  bash "$HERE/slurm_down.sh"
fi
step "mode: $MODE, debug: $DEBUG"
mkdir -p "$STATE"

# ---------------------------------------------------------------- config
mkdir -p "$CONF_DIR" /var/spool/rtcap-slurmctld /var/spool/rtcap-slurmd "$LOGDIR"
if [ $FRESH = 1 ]; then
  step "--fresh: wiping Slurm state and logs"
  rm -rf /var/spool/rtcap-slurmctld/* /var/spool/rtcap-slurmd/*
  rm -f "$LOGDIR"/*.log
fi
if [ "$MODE" = cgroup ]; then
  PROCTRACK=proctrack/cgroup; TASKPLUGIN=task/cgroup; ACCTPARAMS=""
else
  PROCTRACK=proctrack/linuxproc; TASKPLUGIN=task/none; ACCTPARAMS="JobAcctGatherParams=OverMemoryKill"
fi
sed -e "s#@HOST@#$HOST#g" -e "s#@PROCTRACK@#$PROCTRACK#" -e "s#@TASKPLUGIN@#$TASKPLUGIN#" \
    -e "s#@ACCTPARAMS@#$ACCTPARAMS#" -e "s#@DEBUG@#$DEBUG#g" \
    "$HERE/slurm/slurm.conf.in" > "$CONF_DIR/slurm.conf"
cp "$HERE/slurm/cgroup.conf" "$CONF_DIR/cgroup.conf"
install -m 600 "$HERE/slurm/slurmdbd.conf" "$CONF_DIR/slurmdbd.conf"
# fake GPUs: character devices like /dev/null; count-only where mknod is refused
gres='AutoDetect=off\nNodeName=n[1-4] Name=gpu File=/dev/rtcap-gpu[0-3]\n'
for i in 0 1 2 3; do
  [ -e /dev/rtcap-gpu$i ] || mknod /dev/rtcap-gpu$i c 1 3 2>/dev/null || { gres='AutoDetect=off\nNodeName=n[1-4] Name=gpu Count=4\n'; break; }
done
printf "$gres" > "$CONF_DIR/gres.conf"
echo "$MODE-$DEBUG" > "$STATE/mode"

# ---------------------------------------------------------------- munge
if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  step "munged already running (not ours, left alone)"
else
  step "starting munged"
  [ -s /etc/munge/munge.key ] || { /usr/sbin/mungekey -c -f 2>/dev/null || \
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null; }
  chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  rm -f /run/munge/munged.pid
  runuser -u munge -- /usr/sbin/munged
  wait_for 10 munged sh -c 'munge -n | unmunge'
  cp /run/munge/munged.pid "$STATE/munged.pid"
fi

# ---------------------------------------------------------------- mariadb
if mariadb -e 'select 1' >/dev/null 2>&1; then
  step "mariadb already running (not ours, left alone)"
else
  step "starting mariadbd"
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  [ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql >/dev/null 2>&1
  rm -f /run/mysqld/mysqld.pid
  setsid /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 \
    --pid-file=/run/mysqld/mysqld.pid --log-error="$LOGDIR/mariadb.err" \
    </dev/null >/dev/null 2>&1 &
  wait_for 60 mariadb mariadb -e 'select 1'
  wait_for 10 "mariadb pid file" test -s /run/mysqld/mysqld.pid
  cp /run/mysqld/mysqld.pid "$STATE/mariadbd.pid"
fi
[ $FRESH = 1 ] && mariadb -e 'DROP DATABASE IF EXISTS rtcap_acct_db'
mariadb -e "CREATE USER IF NOT EXISTS 'rtcap'@'localhost' IDENTIFIED BY 'rtcap-pw';
            GRANT ALL ON rtcap_acct_db.* TO 'rtcap'@'localhost'; FLUSH PRIVILEGES;"

# ---------------------------------------------------------------- slurmdbd
step "starting slurmdbd"
rm -f /run/rtcap-slurmdbd.pid
slurmdbd
wait_for 10 "slurmdbd pid file" test -s /run/rtcap-slurmdbd.pid
cp /run/rtcap-slurmdbd.pid "$STATE/slurmdbd.pid"
wait_for 60 slurmdbd sacctmgr -n show cluster
sacctmgr -n -P show cluster format=cluster | grep -qx rtcap || sacctmgr -i add cluster rtcap >/dev/null

# ---------------------------------------------------------------- slurmctld
step "starting slurmctld"
rm -f /run/rtcap-slurmctld.pid
slurmctld
wait_for 10 "slurmctld pid file" test -s /run/rtcap-slurmctld.pid
cp /run/rtcap-slurmctld.pid "$STATE/slurmctld.pid"
wait_for 30 slurmctld sh -c 'scontrol ping | grep -q UP'

# ---------------------------------------------------------------- slurmd x4
for n in $NODES; do
  step "starting slurmd -N $n"
  rm -f /run/rtcap-slurmd-$n.pid
  slurmd -N "$n"
  wait_for 10 "slurmd $n pid file" test -s /run/rtcap-slurmd-$n.pid
  cp /run/rtcap-slurmd-$n.pid "$STATE/slurmd-$n.pid"
done
# nodes left DOWN by an earlier run come back by themselves (ReturnToService=2);
# resume those that say otherwise
sleep 2
for n in $NODES; do
  case "$(sinfo -h -n "$n" -o %t)" in idle*) ;; *) scontrol update nodename="$n" state=resume 2>/dev/null || true ;; esac
done
wait_for 60 "4 idle nodes" sh -c '[ "$(sinfo -h -N -t idle -o %N | wc -l)" = 4 ]'
echo "$SLURM_CONF" > "$STATE/slurm_conf"
step "cluster up (clients: export SLURM_CONF=$SLURM_CONF): $(scontrol show config | grep -E '^(ProctrackType|TaskPlugin |MULTIPLE_SLURMD|SlurmdDebug)' | tr -s ' ' | tr '\n' ' ')"
sinfo -N -o "%N %t %c %m %G"
