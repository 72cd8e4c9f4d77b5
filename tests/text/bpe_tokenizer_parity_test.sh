#!/usr/bin/env bash
# Parity of loom's ByteLevelBpeTokenizer with the REAL HF `tokenizers` 0.19.1 (see
# bpe_tokenizer_reference.py): Python trains GPT-2-style and Llama-3-style byte-level BPE
# tokenizers and writes the corpus; bpe_tokenizer_parity_cli loads the tokenizer.json files and
# writes its results; Python compares tokens, ids and decodes. Fails (never skips) when Python
# or the pinned tokenizers is missing.
#   usage: bpe_tokenizer_parity_test.sh REFERENCE_PY PARITY_CLI PATHS_SH
set -euo pipefail
reference=$1
cli=$2
source tests/require_python_transformers.sh "$3" 4.41  # sets py, python_with_transformers
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/bpe_tokenizer_parity.XXXXXX")
python_with_transformers 4.41 "$reference" write "$dir"
"$cli" "$dir"
python_with_transformers 4.41 "$reference" compare "$dir"
echo "bpe_tokenizer_parity_test: PASS"
