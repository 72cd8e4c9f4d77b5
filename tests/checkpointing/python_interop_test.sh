#!/usr/bin/env bash
# Python torch 1.13 + numpy (Debian's /usr/bin/python3) read every file of a checkpoint folder
# that loom's Trainer wrote: interop_tool trains a run into DIR/out and records, beside the
# checkpoint, the model, AdamW state and CPU generator at checkpoint-8's save;
# check_trainer_checkpoint.py reads checkpoint-8 (its own numpy-only safetensors reader,
# torch.load, json) and compares. Fails (never skips) when Python, torch or numpy is missing.
#   usage: python_interop_test.sh INTEROP_TOOL CHECK_TRAINER_CHECKPOINT_PY TRANSFORMERS_ROOT
# TRANSFORMERS_ROOT goes on PYTHONPATH: training_args.bin is a pickled
# transformers.training_args.TrainingArguments, which torch.load rebuilds from that package.
set -euo pipefail
tool=$1
script=$2
transformers_root=$3
source tests/require_python_torch.sh  # sets py; FAILs without torch/numpy

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/trainer_checkpoint_interop.XXXXXX")
"$tool" "$dir"
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$transformers_root" "$py" "$script" "$dir"
echo "python_interop_test: PASS"
