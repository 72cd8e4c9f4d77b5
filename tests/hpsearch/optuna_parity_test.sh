#!/usr/bin/env bash
# //hpsearch's samplers and median pruner against REAL optuna 4.6.0 (pinned in
# third_party/python/interop-optuna-4.6.txt): optuna_parity.py writes the studies and pruner
# cases, study_runner runs them with loom, optuna_parity.py runs them with optuna on Debian's
# /usr/bin/python3 (numpy 1.24.2) and compares trial by trial. Fails (never skips) when Python,
# numpy or the pinned optuna is missing.
#   usage: optuna_parity_test.sh PARITY_PY STUDY_RUNNER PATHS_SH
set -euo pipefail
parity=$1
runner=$2
source tests/hpsearch/require_optuna.sh "$3"  # sets py and optuna_dir
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/optuna_parity.XXXXXX")
PYTHONPATH="$optuna_dir" "$py" "$parity" write "$dir"
"$runner" "$dir"
PYTHONPATH="$optuna_dir" "$py" "$parity" compare "$dir"
echo "optuna_parity_test: PASS"
