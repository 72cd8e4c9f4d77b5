#!/usr/bin/env bash
# A short libFuzzer run of the safetensors header parser from the seed corpus: fails if the
# fuzzer finds a crash, a sanitizer report or a broken invariant, or does not reach RUNS runs.
#   usage: [FUZZ_MAX_LEN=N] fuzz_smoke_test.sh FUZZER DICT RUNS SEED_FILE...   (max_len 4096 by default)
set -euo pipefail
fuzzer=$1
dict=$2
runs=$3
shift 3

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/fuzz.XXXXXX")
mkdir "$work/corpus" "$work/artifacts"
cp "$@" "$work/corpus/"
log="$work/fuzz.log"
if ! "$fuzzer" -seed=1 -runs="$runs" -max_len="${FUZZ_MAX_LEN:-4096}" -dict="$dict" \
     -artifact_prefix="$work/artifacts/" "$work/corpus" >"$log" 2>&1; then
  cat "$log" >&2
  echo "FAIL: the fuzzer stopped early; the failing input is in $work/artifacts" >&2
  exit 1
fi
if ! grep -q "^Done $runs runs" "$log"; then
  cat "$log" >&2
  echo "FAIL: the fuzzer did not report $runs runs" >&2
  exit 1
fi
grep "^Done" "$log"
echo "fuzz_smoke_test: PASS"
