#!/usr/bin/env bash
# Writes training_args.bin from C++ and checks with Python's torch.load that it is the
# TrainingArguments object HF's Trainer pickles, under REAL transformers 4.38.2 and 4.41.2 (the
# pinned packages ./bazelw installs; tests/require_python_transformers.sh). Fails, never skips,
# when Python, torch or those packages are missing.
#   usage: training_args_bin_python_test.sh WRITER CHECKER PATHS_SH
set -euo pipefail
writer=$1 checker=$2
source tests/require_python_transformers.sh "$3" 4.38 4.41
out="$TEST_TMPDIR/training_args.bin"
"$writer" "$out" "$TEST_TMPDIR/training_args.json" --output_dir out --learning_rate 2e-5 \
  --fsdp "full_shard auto_wrap" --hub_token hf_SECRET --push_to_hub_token hf_OTHER \
  --report_to none --lr_scheduler_kwargs '{"num_cycles": 2}' --lr_scheduler_type cosine \
  --debug underflow_overflow --use_cpu
for version in 4.38 4.41; do
  PYTHONDONTWRITEBYTECODE=1 python_with_transformers "$version" "$checker" "$out" \
    "$TEST_TMPDIR/training_args.json"
  echo "transformers $version: training_args.bin loads as its TrainingArguments"
done
