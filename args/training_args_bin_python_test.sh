#!/usr/bin/env bash
# Writes training_args.bin from C++ and checks it with Python's torch.load.
set -euo pipefail
writer=$1 checker=$2
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "FAIL: /usr/bin/python3 with torch (Debian python3-torch) is required; run ./bazelw" >&2
  exit 1
fi
out="$TEST_TMPDIR/training_args.bin"
"$writer" "$out" --output_dir out --learning_rate 2e-5 --fsdp "full_shard auto_wrap" \
  --hub_token hf_SECRET --report_to none --lr_scheduler_kwargs '{"num_cycles": 2}'
/usr/bin/python3 "$checker" "$out"
