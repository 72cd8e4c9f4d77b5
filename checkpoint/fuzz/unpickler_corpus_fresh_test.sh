#!/usr/bin/env bash
# The fuzzer's checked-in seeds (unpickler_corpus/) equal what make_unpickler_corpus.py writes
# now with Debian's /usr/bin/python3 + torch 1.13 + numpy. Fails (never skips) without them.
#   usage: unpickler_corpus_fresh_test.sh MAKE_UNPICKLER_CORPUS_PY "HF_FILE..." SEED_FILE...
set -euo pipefail
script=$1
read -r -a hf_files <<< "$2"
shift 2
py=/usr/bin/python3
if ! "$py" -c "import torch, numpy" 2>/dev/null; then
  echo "FAIL: $py with torch and numpy (Debian python3-torch) is required; run ./bazelw" >&2
  exit 1
fi
fresh="$TEST_TMPDIR/corpus"
"$py" "$script" "$fresh" "${hf_files[@]}"
[[ $(ls "$fresh" | wc -l) == "$#" ]] || { echo "FAIL: the script writes $(ls "$fresh" | wc -l) seeds, $# are checked in" >&2; exit 1; }
for seed in "$@"; do
  cmp "$seed" "$fresh/$(basename "$seed")" || {
    echo "FAIL: $seed is stale; rerun: /usr/bin/python3 $script checkpoint/fuzz/unpickler_corpus" \
      "checkpoint/testdata/hf_*/training_args.bin" >&2
    exit 1
  }
done
echo "unpickler_corpus_fresh_test: PASS ($# seeds)"
