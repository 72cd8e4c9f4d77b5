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
py=/usr/bin/python3

if [[ ! -x $py ]]; then
  echo "FAIL: $py not found. This test needs Debian's python3 with python3-torch and" \
       "python3-numpy (installed by ./bazelw)." >&2
  exit 1
fi
if ! err=$("$py" -c 'import torch, numpy' 2>&1); then
  echo "FAIL: $py cannot import torch and numpy. Install Debian's python3-torch and" \
       "python3-numpy (apt-get install python3-torch python3-numpy). Python said: $err" >&2
  exit 1
fi

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/checkpoint_interop.XXXXXX")
"$tool" write "$dir"
"$py" "$script" "$dir"
"$tool" read "$dir"
echo "python_interop_test: PASS"
