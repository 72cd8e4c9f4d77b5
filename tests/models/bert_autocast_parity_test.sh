#!/usr/bin/env bash
# //tests/models:bert_autocast_parity_test ("Autocast parity"): a training step of a
# tiny BERT under loom's bf16 CPU autocast (bert_autocast_tool) against transformers' op order
# under torch.autocast("cpu", dtype=torch.bfloat16) in Debian's python3-torch, the same LibTorch
# 1.13 build (bert_autocast_reference.py): logits, loss and every gradient bitwise equal. One thread everywhere, so every reduction has one order on both sides. Fails (never
# skips) when Python, torch or numpy is missing (require_python_torch.sh).
#   usage: bert_autocast_parity_test.sh TOOL SCRIPT
set -euo pipefail
tool=$1
script=$2
source tests/require_python_torch.sh  # sets py; FAILs without torch/numpy

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
# bf16 kernels differ with the CPU (oneDNN's AVX512-BF16 path or emulation); both sides run the
# same ones, but say which this run used.
echo "CPU: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2-);" \
     "avx512_bf16: $(grep -qw avx512_bf16 /proc/cpuinfo && echo yes || echo no)"
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/bert_autocast.XXXXXX")
"$tool" write "$dir"
"$py" "$script" "$dir"
echo "bert_autocast_parity_test: PASS"
