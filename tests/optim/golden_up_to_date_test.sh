#!/usr/bin/env bash
# Reruns make_golden.py with the Python torch of this build's LibTorch (Debian's torch 1.13, or
# the pinned torch 2.11 wheel: tests/require_python_torch.sh) and checks that the committed
# golden files of that version are exactly what it writes, so they come from the script and not from
# loom. Fails (never skips) when Python or its torch is missing.
#   usage: golden_up_to_date_test.sh MAKE_GOLDEN_PY GOLDEN_FILE...
set -euo pipefail
script=$1
shift
source tests/require_python_torch.sh

out=$(mktemp -d "${TEST_TMPDIR:-/tmp}/optim_golden.XXXXXX")
"$py" "$script" "$out" >/dev/null
status=0
for golden in "$@"; do
  if ! diff -q "$golden" "$out/$(basename "$golden")" >/dev/null; then
    echo "FAIL: $golden differs from what make_golden.py writes now; rerun" \
         "make_golden.py with $py into $(dirname "$golden") and review the change:" >&2
    diff "$golden" "$out/$(basename "$golden")" | head -20 >&2 || true
    status=1
  fi
done
[[ $status -eq 0 ]] && echo "golden_up_to_date_test: PASS"
exit $status
