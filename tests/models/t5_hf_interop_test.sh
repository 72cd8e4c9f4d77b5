#!/usr/bin/env bash
# loom's T5ForConditionalGeneration against the REAL transformers T5ForConditionalGeneration
# (4.41.2 and 4.38.2): t5_parity_tool writes loom's saved models and results, transformers
# loads the folders and compares its own results (t5_hf_reference.py), then saves its own
# models, which loom loads and compares (t5_parity_tool check). Fails (never skips) when Python
# or a pinned transformers is missing.
#   usage: t5_hf_interop_test.sh TOOL HF_REFERENCE_PY PATHS_SH
set -euo pipefail
tool=$1
reference=$2
source tests/require_python_transformers.sh "$3" 4.38 4.41  # sets python_with_transformers
for version in 4.41 4.38; do
  dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/t5_hf_interop.XXXXXX")
  "$tool" write "$dir"
  python_with_transformers "$version" "$reference" "$dir"
  "$tool" check "$dir"
done
echo "t5_hf_interop_test: PASS"
