#!/usr/bin/env bash
# Python torch 1.13 + numpy (Debian's /usr/bin/python3) read every file of a checkpoint folder
# that loom's Trainer wrote: interop_tool trains a run into DIR/out and records, beside the
# checkpoint, the model, AdamW state and CPU generator at checkpoint-8's save;
# check_trainer_checkpoint.py reads checkpoint-8 (its own numpy-only safetensors reader,
# torch.load, json) and compares. Fails (never skips) when Python, torch or numpy is missing.
#   usage: python_interop_test.sh INTEROP_TOOL CHECK_TRAINER_CHECKPOINT_PY PATHS_SH
# training_args.bin is a pickled transformers.training_args.TrainingArguments, which torch.load
# rebuilds with REAL transformers 4.38.2 (the pinned package ./bazelw installs).
set -euo pipefail
tool=$1
script=$2
source tests/require_python_transformers.sh "$3" 4.38

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/trainer_checkpoint_interop.XXXXXX")
"$tool" "$dir"
PYTHONDONTWRITEBYTECODE=1 python_with_transformers 4.38 "$script" "$dir"
echo "python_interop_test: PASS"
