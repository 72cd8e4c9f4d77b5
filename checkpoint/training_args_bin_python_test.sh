#!/usr/bin/env bash
# Writes training_args.bin from C++ and checks with Python's torch.load that it is the
# TrainingArguments object HF's Trainer pickles. $3 is the PYTHONPATH that provides
# `transformers`: the stand-in under checkpoint/testdata, or a real transformers (BUILD).
set -euo pipefail
writer=$1 checker=$2 transformers_root=$3
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "FAIL: /usr/bin/python3 with torch (Debian python3-torch) is required; run ./bazelw" >&2
  exit 1
fi
out="$TEST_TMPDIR/training_args.bin"
"$writer" "$out" "$TEST_TMPDIR/training_args.json" --output_dir out --learning_rate 2e-5 \
  --fsdp "full_shard auto_wrap" --hub_token hf_SECRET --push_to_hub_token hf_OTHER \
  --report_to none --lr_scheduler_kwargs '{"num_cycles": 2}' --lr_scheduler_type cosine \
  --debug underflow_overflow --use_cpu
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$transformers_root" \
  /usr/bin/python3 "$checker" "$out" "$TEST_TMPDIR/training_args.json"
