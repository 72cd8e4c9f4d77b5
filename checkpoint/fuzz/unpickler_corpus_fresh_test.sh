#!/usr/bin/env bash
# The fuzzer's checked-in seeds (unpickler_corpus/) equal what make_unpickler_corpus.py writes
# now with Debian's /usr/bin/python3 + torch 1.13 + numpy. Fails (never skips) without them.
#   usage: unpickler_corpus_fresh_test.sh MAKE_UNPICKLER_CORPUS_PY SEED_FILE...
set -euo pipefail
script=$1
shift
source tests/require_python_torch.sh  # sets py; FAILs without torch/numpy
fresh="$TEST_TMPDIR/corpus"
"$py" "$script" "$fresh"
[[ $(ls "$fresh" | wc -l) == "$#" ]] || { echo "FAIL: the script writes $(ls "$fresh" | wc -l) seeds, $# are checked in" >&2; exit 1; }
for seed in "$@"; do
  cmp "$seed" "$fresh/$(basename "$seed")" || {
    echo "FAIL: $seed is stale; rerun: /usr/bin/python3 $script checkpoint/fuzz/unpickler_corpus" >&2
    exit 1
  }
done
echo "unpickler_corpus_fresh_test: PASS ($# seeds)"
