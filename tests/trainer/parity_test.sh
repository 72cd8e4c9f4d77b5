#!/usr/bin/env bash
# Numerical parity of loom's Trainer with HF 4.38's training loop: parity_init writes
# the initial weights and data, trainer_reference.py (Debian's /usr/bin/python3, torch 1.13)
# trains every scenario of parity_scenarios.json the way HF does and writes the expected
# values, parity_check trains the same scenarios through loom::trainer::Trainer and compares.
# Fails (never skips) when Python or its torch is missing.
#   usage: parity_test.sh PARITY_INIT TRAINER_REFERENCE_PY PARITY_CHECK SCENARIOS_JSON
set -euo pipefail
init=$1
reference=$2
check=$3
scenarios=$4
source tests/require_python_torch.sh  # sets py; FAILs without torch/numpy

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/trainer_parity.XXXXXX")
"$init" "$dir"
"$py" "$reference" "$scenarios" "$dir" "$dir/expected.json" "$dir/expected_params.pt"
"$check" "$scenarios" "$dir" "$dir/expected.json" "$dir/expected_params.pt"
echo "trainer_parity_test: PASS"
