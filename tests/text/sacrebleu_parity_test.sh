#!/usr/bin/env bash
# loom's CorpusBleu and Tokenize13a against the REAL sacreBLEU 2.4.3 (what HF's run_translation
# scores with): sacrebleu_reference.py writes the corpora and sacreBLEU's results,
# sacrebleu_parity_cli computes loom's, the reference compares. Fails (never skips) when
# Python or the pinned sacrebleu is missing.
#   usage: sacrebleu_parity_test.sh REFERENCE_PY CLI PATHS_SH
set -euo pipefail
reference=$1
cli=$2
source tests/require_python_torch.sh  # sets py
source "$3"
folder=${LOOM_PY_INTEROP_SACREBLEU_2_4:-}
if [[ -z $folder || ! -d $folder ]]; then
  echo "FAIL: sacreBLEU 2.4's pinned packages are not installed (folder: '$folder'). Run" \
       "./bazelw, which installs third_party/python/interop-sacrebleu-2.4.txt." >&2
  exit 1
fi
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/sacrebleu_parity.XXXXXX")
PYTHONPATH="$folder" "$py" "$reference" write "$dir"
"$cli" "$dir"
PYTHONPATH="$folder" "$py" "$reference" compare "$dir"
echo "sacrebleu_parity_test: PASS"
