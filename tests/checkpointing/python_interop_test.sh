#!/usr/bin/env bash
# Python torch 1.13 + numpy (Debian's /usr/bin/python3) read every file of a checkpoint folder
# that loom's Trainer wrote: interop_tool trains a run into DIR/out and records, beside the
# checkpoint, the model, AdamW state and CPU generator at checkpoint-8's save;
# check_trainer_checkpoint.py reads checkpoint-8 (its own numpy-only safetensors reader,
# torch.load, json) and compares. Fails (never skips) when Python, torch or numpy is missing.
#   usage: python_interop_test.sh INTEROP_TOOL CHECK_TRAINER_CHECKPOINT_PY
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

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/trainer_checkpoint_interop.XXXXXX")
"$tool" "$dir"
"$py" "$script" "$dir"
echo "python_interop_test: PASS"
