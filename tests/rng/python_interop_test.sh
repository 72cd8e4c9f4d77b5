#!/usr/bin/env bash
# Round trip of RNG state between loom (C++) and Python torch 1.13 (Debian's /usr/bin/python3):
# C++ writes rng_state.pth and its draws, check_rng_state.py verifies them and writes its own
# state, C++ restores that and verifies Python's draws. Fails (never skips) when Python or its
# torch is missing.
#   usage: python_interop_test.sh RNG_INTEROP_TOOL CHECK_RNG_STATE_PY
set -euo pipefail
tool=$1
script=$2
source tests/require_python_torch.sh  # sets py; FAILs without torch/numpy

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/rng_interop.XXXXXX")
"$tool" write "$dir"
"$py" "$script" "$dir"
"$tool" read "$dir"
echo "python_interop_test: PASS"
