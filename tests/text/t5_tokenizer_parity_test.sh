#!/usr/bin/env bash
# Parity of loom's T5Tokenizer with the REAL slow T5Tokenizer of transformers 4.41.2 and
# 4.38.2 and with Debian's python3-sentencepiece (see t5_tokenizer_reference.py): 4.41 writes
# the corpus, its expectations and its saved folder; t5_tokenizer_parity_cli loads that folder,
# runs the corpus and saves its own folder; each version then compares, loads loom's folder and
# (4.41) compares the saved files byte for byte. Fails (never skips) when Python,
# sentencepiece or a pinned transformers is missing.
#   usage: t5_tokenizer_parity_test.sh REFERENCE_PY PARITY_CLI SPIECE_MODEL PATHS_SH
set -euo pipefail
reference=$1
cli=$2
spiece=$3
source tests/require_python_transformers.sh "$4" 4.38 4.41  # sets py, python_with_transformers
if ! err=$("$py" -c 'import sentencepiece' 2>&1); then
  echo "FAIL: $py cannot import sentencepiece (Debian's python3-sentencepiece, installed by" \
       "./bazelw). Python said: $err" >&2
  exit 1
fi

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/t5_tokenizer_parity.XXXXXX")
python_with_transformers 4.41 "$reference" write "$spiece" "$dir"
"$cli" "$dir"
python_with_transformers 4.41 "$reference" compare "$dir"
python_with_transformers 4.38 "$reference" compare "$dir"
echo "t5_tokenizer_parity_test: PASS"
