#!/bin/bash
# Capture REAL etcd (Debian etcd-server 3.4) logs of a saturated control plane, on loopback:
# a 3-member cluster (zap JSON logs, one file per member) under write load, with
#   1. a slow disk on member etcd-1: strace delays every fdatasync/fsync by 1.2 s
#      (-> "slow fdatasync", "apply request took too long", heartbeats sent late);
#   2. the leader frozen (SIGSTOP) for 3 s -> a leader election;
#   3. two of three members stopped -> lost quorum, client requests time out.
# Usage: etcd_capture.sh OUTDIR    (needs etcd, etcdctl, strace; ports 23790-23796)
# Writes OUTDIR/etcd-<n>.log (the members' logs), OUTDIR/etcdctl.log (client side, with UTC
# times), OUTDIR/timeline.txt (what was done, when). Stops only the processes it started.
set -u
OUT=${1:?usage: etcd_capture.sh OUTDIR}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/rt-etcd.XXXXXX)
PIDS=()
note() { echo "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ) $*" | tee -a "$OUT/timeline.txt"; }
cleanup() { for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done; sleep 1
            for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$WORK"; }
trap cleanup EXIT
CLUSTER="etcd-0=http://127.0.0.1:23790,etcd-1=http://127.0.0.1:23792,etcd-2=http://127.0.0.1:23794"
start() {  # start N [wrapper...]
  local n=$1; shift
  local peer=$((23790 + 2 * n)) client=$((23791 + 2 * n))
  "$@" etcd --name "etcd-$n" --data-dir "$WORK/etcd-$n" --logger zap --log-outputs "$OUT/etcd-$n.log" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
    --initial-cluster "$CLUSTER" --initial-cluster-state new --initial-cluster-token rt-capture \
    --heartbeat-interval 100 --election-timeout 1000 >/dev/null 2>&1 &
  echo $!
}
: > "$OUT/timeline.txt"
note "start 3 members; etcd-1 under strace -e inject=fdatasync,fsync:delay_enter=1200000"
P0=$(start 0)
P1=$(start 1)
P2=$(start 2)
PIDS+=("$P0" "$P1" "$P2")   # start runs in a subshell: its pids are recorded here
# the slow disk: strace attached to etcd-1 (by pid) delays each fdatasync/fsync by 1.2 s
strace -f -qq -o /dev/null -p "$P1" -e trace=fdatasync,fsync -e inject=fdatasync,fsync:delay_enter=1200000 &
PIDS+=($!)
EP=127.0.0.1:23791,127.0.0.1:23793,127.0.0.1:23795
export ETCDCTL_API=3
for _ in $(seq 40); do etcdctl --endpoints=$EP endpoint health >/dev/null 2>&1 && break; sleep 0.5; done
note "cluster healthy: $(etcdctl --endpoints=$EP endpoint status -w simple 2>&1 | tr '\n' ' ')"
load() {  # writes like node status updates, with client-side timeouts logged in UTC
  local i=0
  while [ -e "$WORK/load" ]; do
    i=$((i + 1))
    out=$(etcdctl --endpoints=$EP --command-timeout=2s put "/registry/minions/gpu-node-$((i % 8))" "status-$i" 2>&1)
    [ "$out" = OK ] || echo "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ) put /registry/minions/gpu-node-$((i % 8)): $out" >> "$OUT/etcdctl.log"
  done
}
touch "$WORK/load"; load & LOADPID=$!
sleep 8
# endpoint status -w simple: endpoint, id, version, db size, is leader, ...
LEADER=$(etcdctl --endpoints=$EP endpoint status -w simple 2>/dev/null | awk -F', ' '$5 == "true" {print $1}' | head -1)
note "leader endpoint: $LEADER"
case "$LEADER" in *23791*) LP=$P0 ;; *23793*) LP=$P1 ;; *) LP=$P2 ;; esac
note "SIGSTOP leader pid $LP for 3 s"
kill -STOP "$LP"; sleep 3; kill -CONT "$LP"; note "SIGCONT leader"
sleep 5
note "stop etcd-0 and etcd-2 (SIGTERM): quorum lost"
kill "$P0" "$P2"; sleep 6
note "end"
rm -f "$WORK/load"; wait "$LOADPID" 2>/dev/null
