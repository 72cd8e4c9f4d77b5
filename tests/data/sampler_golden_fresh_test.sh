#!/usr/bin/env bash
# Regenerates the sampler golden file with Debian's /usr/bin/python3 (torch 1.13) and fails when
# the committed copy differs, so the golden test cannot silently test stale numbers. Fails (never
# skips) when Python or its torch is missing.
#   usage: sampler_golden_fresh_test.sh MAKE_SAMPLER_GOLDEN_PY COMMITTED_GOLDEN
set -euo pipefail
script=$1
committed=$2
py=/usr/bin/python3

if [[ ! -x $py ]]; then
  echo "FAIL: $py not found. This test needs Debian's python3 with python3-torch" \
       "(installed by ./bazelw: apt-get install python3-torch)." >&2
  exit 1
fi
if ! err=$("$py" -c 'import torch' 2>&1); then
  echo "FAIL: $py cannot import torch. Install Debian's python3-torch" \
       "(apt-get install python3-torch). Python said: $err" >&2
  exit 1
fi

fresh="${TEST_TMPDIR:-/tmp}/sampler_golden.txt"
"$py" "$script" --out "$fresh"
if ! diff -q "$committed" "$fresh" >/dev/null; then
  echo "FAIL: $committed is stale; rerun /usr/bin/python3 tests/data/make_sampler_golden.py" >&2
  diff "$committed" "$fresh" | head -20 >&2
  exit 1
fi
echo "sampler_golden_fresh_test: PASS"
