#!/usr/bin/env bash
# DeepSpeed 0.13.5's own zero_to_fp32.py on ZeRO checkpoints with a frozen parameter, which no
# run_glue test has: write_frozen_zero_checkpoint writes 2-rank stage-2 and stage-3 checkpoints
# through loom's ZeRO file writers (frozen_param_shapes / frozen_param_fragments non-empty;
# DeepSpeed's script calls .numel() on those shapes in both stages), and DeepSpeed's script
# rebuilds the model's state dict from each bitwise, in its order (buffers, frozen, trainable).
#   usage: deepspeed_zero_to_fp32_frozen_test.sh WRITER DEEPSPEED_ZERO_TO_FP32_PY
set -euo pipefail
writer=$1 deepspeed_z2f=$2
source tests/require_python_torch.sh
T="$TEST_TMPDIR"
for stage in 2 3; do
  "$writer" "$T/z$stage" "$stage"
  "$py" "$deepspeed_z2f" "$T/z$stage" "$T/z$stage/expected.bin" "$stage" 2 ||
    { echo "FAIL: DeepSpeed's zero_to_fp32.py, ZeRO-$stage with a frozen parameter" >&2; exit 1; }
done
echo "deepspeed_zero_to_fp32_frozen_test: PASS"
