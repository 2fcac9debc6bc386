#!/usr/bin/env bash
# Set up and run the whole test suite on a fresh machine (the README's test
# command). Idempotent: a second run reuses what the first installed.
#   bash scripts/test.sh            default suite (incl. one real Slurm + torchrun e2e)
#   bash scripts/test.sh -m slow    the long captures (time limit, node failure, ...)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# Builds the Rust ingest engine too (crates/, through hatch_build.py).
.venv/bin/pip install -q --disable-pip-version-check -e '.[test]'
# The engine's own unit tests, built and run while install.sh below waits on
# the network and apt (CI's budget: a debug build of the engine's deps is ~3
# CPU-minutes; `--release` would not reuse the pip build's, whose features differ).
CARGO=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
cargo_log=$(mktemp)
"$CARGO" test -q --locked --manifest-path crates/Cargo.toml -p ranktrace-engine >"$cargo_log" 2>&1 &
cargo_pid=$!
# Real Slurm 22.05 (Debian), munge, MariaDB, libfaketime, and torch==2.13.0
# (the CPU build; never a bare `torch`) in its own venv for the harness.
bash tools/capture/install.sh
cargo_rc=0
wait "$cargo_pid" || cargo_rc=$?
cat "$cargo_log"
rm -f "$cargo_log"
[ "$cargo_rc" -eq 0 ] || { echo "scripts/test.sh: cargo test of the engine failed (exit $cargo_rc)" >&2; exit "$cargo_rc"; }
export RANKTRACE_REQUIRE_E2E=1
# Every core (pytest-xdist): modules and the e2e tests each stay on one worker
# (tests/conftest.py). `-n 0` runs it in one process.
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n auto --dist loadgroup "$@"
