#!/usr/bin/env bash
# //tests/models:bert_sdpa_parity_test: loom's BERT with attn_implementation "sdpa"
# (bert_sdpa_tool) against transformers 4.41's BertSdpaSelfAttention call of
# torch.nn.functional.scaled_dot_product_attention in the Python torch of the same LibTorch
# (bert_sdpa_reference.py): logits, loss and every gradient bitwise equal, fp32, one thread.
# On LibTorch 1.13 the tool first requires the sdpa request to be refused, then both sides run
# eager (the twin). Fails (never skips) when Python, torch or numpy is missing.
#   usage: bert_sdpa_parity_test.sh TOOL SCRIPT
set -euo pipefail
tool=$1
script=$2
source tests/require_python_torch.sh  # sets py; FAILs without torch/numpy

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/bert_sdpa.XXXXXX")
"$tool" write "$dir"
"$py" "$script" "$dir"
echo "bert_sdpa_parity_test: PASS"
