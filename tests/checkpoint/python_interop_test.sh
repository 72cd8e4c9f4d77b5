#!/usr/bin/env bash
# Round trip of checkpoint files between loom (C++) and Python torch 1.13 + numpy (Debian's
# /usr/bin/python3): C++ writes model.safetensors, pytorch_model.bin, a sharded checkpoint,
# optimizer.pt and scheduler.pt; check_checkpoint.py reads them with its own safetensors reader
# and torch.load, compares them with a Python run of the same training, resumes from them, and
# writes files for C++ to read back. Fails (never skips) when Python, torch or numpy is missing.
#   usage: python_interop_test.sh CHECKPOINT_INTEROP_TOOL CHECK_CHECKPOINT_PY
set -euo pipefail
tool=$1
script=$2
source tests/require_python_torch.sh  # sets py; FAILs without torch/numpy

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/checkpoint_interop.XXXXXX")
"$tool" write "$dir"
"$py" "$script" "$dir"
"$tool" read "$dir"
echo "python_interop_test: PASS"
