#!/bin/bash
# Install what the ranktrace capture harness needs, idempotently:
#   - Debian packages: Slurm 22.05 (slurmctld slurmd slurm-client slurmdbd),
#     munge, mariadb-server (for slurmdbd/sacct), libfaketime (clock skew),
#     util-linux (unshare, prlimit), python3-venv, and lnav, tmux, time (the benchmarks run beside lnav)
#   - a Python venv with torch==2.13.0 (from the package index: a CUDA build
#     of several GB that runs on the CPU; pinned exactly, installed once per
#     machine) + numpy
#
# Env: RANKTRACE_TORCH_VENV   venv to create/use (default /opt/ranktrace-torch)
#      RANKTRACE_TORCH_PYTHON python used to create it (default: python3.11
#                             from PATH, else /usr/bin/python3)
#      RANKTRACE_SKIP_APT=1   skip the Debian part
#      RANKTRACE_SKIP_TORCH=1 skip the torch venv
set -euo pipefail
VENV=${RANKTRACE_TORCH_VENV:-/opt/ranktrace-torch}
T0=$(date +%s)
step() { echo "[install $(date +%T) +$(( $(date +%s) - T0 ))s] $*"; }
[ "$(id -u)" = 0 ] || { echo "install.sh: must run as root" >&2; exit 1; }

# ------------------------------------------------------------------ Debian
PKGS="slurmctld slurmd slurm-client slurmdbd munge mariadb-server libfaketime faketime util-linux python3-venv procps lnav tmux time"
if [ "${RANKTRACE_SKIP_APT:-0}" != 1 ]; then
  if dpkg -s $PKGS >/dev/null 2>&1; then
    step "Debian packages already installed"
  else
    export DEBIAN_FRONTEND=noninteractive
    step "apt-get update"
    apt-get update -q >/dev/null
    step "apt-get install $PKGS"
    # policy-rc.d: apt must not try to start the daemons (no systemd here;
    # slurm_up.sh starts each one by hand and records its PID)
    created_policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
      chmod +x /usr/sbin/policy-rc.d; created_policy=1
    fi
    apt-get install -y -q --no-install-recommends $PKGS >/dev/null
    [ $created_policy = 1 ] && rm -f /usr/sbin/policy-rc.d
  fi
  step "slurm: $(slurmd -V 2>&1); libfaketime: $(ls /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 2>/dev/null || echo missing)"
fi

# ------------------------------------------------------------------ torch venv
if [ "${RANKTRACE_SKIP_TORCH:-0}" != 1 ]; then
  # metadata, not "import torch" (that takes seconds): installed versions
  have=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"), m.version("numpy"))' 2>/dev/null || true)
  case "${have%% *}" in 2.13.0|2.13.0+*) torch_ok=1 ;; *) torch_ok=0 ;; esac
  if [ "$torch_ok" = 1 ]; then
    step "torch venv $VENV already has torch/numpy $have"
  else
    PY=${RANKTRACE_TORCH_PYTHON:-}
    if [ -z "$PY" ]; then
      for c in python3.11 python3 /usr/bin/python3; do
        if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
          PY=$(command -v "$c"); break
        fi
      done
    fi
    [ -n "$PY" ] || { echo "install.sh: no Python 3.11 with venv found (the harness pins torch 2.13.0 for cp311)" >&2; exit 1; }
    step "creating venv $VENV with $PY ($("$PY" --version 2>&1))"
    "$PY" -m venv "$VENV"
    step "pip install torch==2.13.0 numpy"
    # EXACT pin: the captures were validated with 2.13.0; never a bare "torch"
    "$VENV/bin/pip" install -q "torch==2.13.0" numpy
    step "torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)') in $VENV"
  fi
fi
step "done"
