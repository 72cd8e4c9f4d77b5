#!/usr/bin/env bash
# Parity of loom's LlamaTokenizer with the REAL slow LlamaTokenizer of transformers 4.41.2 (see
# llama_tokenizer_reference.py): Python writes the corpus; llama_tokenizer_parity_cli trains a
# tokenizer.model in Llama's layout, saves legacy and non-legacy folders and its results;
# transformers loads loom's folders and compares tokens, ids and decodes. Fails (never skips)
# when Python, sentencepiece or the pinned transformers is missing.
#   usage: llama_tokenizer_parity_test.sh REFERENCE_PY PARITY_CLI PATHS_SH
set -euo pipefail
reference=$1
cli=$2
source tests/require_python_transformers.sh "$3" 4.41  # sets py, python_with_transformers
if ! err=$("$py" -c 'import sentencepiece' 2>&1); then
  echo "FAIL: $py cannot import sentencepiece (installed by ./bazelw). Python said: $err" >&2
  exit 1
fi
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/llama_tokenizer_parity.XXXXXX")
python_with_transformers 4.41 "$reference" write "$dir"
"$cli" "$dir"
python_with_transformers 4.41 "$reference" compare "$dir"
echo "llama_tokenizer_parity_test: PASS"
