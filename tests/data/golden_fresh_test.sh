#!/usr/bin/env bash
# Regenerates a golden file with its generator script under the Python torch of this build's
# LibTorch and fails when the committed copy differs, so a golden test cannot silently test stale
# numbers. Fails (never skips) when Python or its torch is missing.
#   usage: golden_fresh_test.sh MAKE_GOLDEN_PY COMMITTED_GOLDEN
set -euo pipefail
script=$1
committed=$2
source tests/require_python_torch.sh  # sets py; FAILs without torch/numpy

fresh="${TEST_TMPDIR:-/tmp}/$(basename "$committed")"
"$py" "$script" --out "$fresh"
# Line 1 names the torch that wrote the file; the data below it must be the same whichever
# torch (the pinned 2.11 wheel, or Debian's 1.13 under --config=debian) regenerates it.
if ! diff -q <(tail -n +2 "$committed") <(tail -n +2 "$fresh") >/dev/null; then
  echo "FAIL: $committed is stale; rerun $py $script" >&2
  diff "$committed" "$fresh" | head -20 >&2
  exit 1
fi
echo "$(basename "$script"): golden file is current"
