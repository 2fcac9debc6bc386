#!/usr/bin/env bash
# Set up and run the whole test suite on a fresh machine (the README's test
# command). Idempotent: a second run reuses what the first installed.
#   bash scripts/test.sh            default suite (incl. one real Slurm + torchrun e2e)
#   bash scripts/test.sh -m slow    the long captures (time limit, node failure, ...)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# Three set-ups at once (CI's budget is 30 minutes, tests included): install.sh waits on apt and the
# network, pip's release build of the engine and the engine's cargo test (a debug build, in a target of
# its own: two cargos on one target take turns) each leave cores idle the others can use.
# Real Slurm 22.05 (Debian), munge, MariaDB, libfaketime, and torch==2.13.0 (the CPU build; never a
# bare `torch`) in its own venv for the harness.
install_log=$(mktemp); cargo_log=$(mktemp)
bash tools/capture/install.sh >"$install_log" 2>&1 &
install_pid=$!
CARGO=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
CARGO_TARGET_DIR=crates/target/unit-tests "$CARGO" test -q --locked --manifest-path crates/Cargo.toml \
  -p ranktrace-engine >"$cargo_log" 2>&1 &
cargo_pid=$!
trap 'kill "$install_pid" "$cargo_pid" 2>/dev/null || true' EXIT   # a failed pip install stops them too
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# Builds the Rust ingest engine too (crates/, through hatch_build.py).
.venv/bin/pip install -q --disable-pip-version-check -e '.[test]'
install_rc=0; cargo_rc=0
wait "$install_pid" || install_rc=$?
wait "$cargo_pid" || cargo_rc=$?
cat "$install_log" "$cargo_log"
rm -f "$install_log" "$cargo_log"
[ "$install_rc" -eq 0 ] || { echo "scripts/test.sh: tools/capture/install.sh failed (exit $install_rc)" >&2; exit "$install_rc"; }
[ "$cargo_rc" -eq 0 ] || { echo "scripts/test.sh: cargo test of the engine failed (exit $cargo_rc)" >&2; exit "$cargo_rc"; }
trap - EXIT
export RANKTRACE_REQUIRE_E2E=1
# Every core (pytest-xdist): modules and the e2e tests each stay on one worker
# (tests/conftest.py). `-n 0` runs it in one process.
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n auto --dist loadgroup "$@"
