#!/usr/bin/env bash
# Scaler parity: scaler_reference.py writes the scenarios (scripted finite / inf /
# nan gradient sequences for torch's GradScaler rules and DeepSpeed's loss scalers),
# scaler_trace_tool runs loom's C++ scalers on them, and scaler_reference.py compares every
# step with its own implementation of the published rules (then checks that wrong rules would
# be caught). Fails (never skips) when Python, torch or numpy is missing.
#   usage: scaler_parity_test.sh SCALER_TRACE_TOOL SCALER_REFERENCE_PY
set -euo pipefail
tool=$1
script=$2
source tests/require_python_torch.sh  # sets py; FAILs without torch/numpy

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/scaler_parity.XXXXXX")
"$py" "$script" scenarios "$dir/scenarios.json"
"$tool" "$dir/scenarios.json" "$dir/results.json"
"$py" "$script" check "$dir/scenarios.json" "$dir/results.json"
echo "scaler_parity_test: PASS"
