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
# The engine's own unit tests.
CARGO=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
"$CARGO" test -q --locked --manifest-path crates/Cargo.toml -p ranktrace-engine
# Real Slurm 22.05 (Debian), munge, MariaDB, libfaketime, and torch==2.13.0
# (the CPU build; never a bare `torch`) in its own venv for the harness.
bash tools/capture/install.sh
export RANKTRACE_REQUIRE_E2E=1
# Every core (pytest-xdist): modules and the e2e tests each stay on one worker
# (tests/conftest.py). `-n 0` runs it in one process.
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n auto --dist loadgroup "$@"
