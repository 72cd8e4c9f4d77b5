#!/usr/bin/env bash
# The soak in the test suite: soak.py's 20,000 steps (its checks are the test's).
#   usage: soak_test.sh RUN_SYNTHETIC SOAK_PY
set -euo pipefail
exec /usr/bin/python3 "$2" --run_synthetic "$1" --work "$TEST_TMPDIR"
