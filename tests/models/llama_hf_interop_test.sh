#!/usr/bin/env bash
# loom's LlamaForCausalLM against the REAL transformers 4.41.2 LlamaForCausalLM:
# llama_parity_tool writes loom's saved models, results and generations, transformers loads the
# folders and compares its own (llama_hf_reference.py), then saves its own models and results,
# which loom loads and compares (llama_parity_tool check). Fails (never skips) when Python or
# the pinned transformers is missing.
#   usage: llama_hf_interop_test.sh TOOL HF_REFERENCE_PY PATHS_SH
set -euo pipefail
tool=$1
reference=$2
source tests/require_python_transformers.sh "$3" 4.41  # sets python_with_transformers
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/llama_hf_interop.XXXXXX")
"$tool" write "$dir" --transformers-4.41
python_with_transformers 4.41 "$reference" "$dir"
"$tool" check "$dir" --transformers-4.41
echo "llama_hf_interop_test: PASS"
