#!/usr/bin/env bash
# Reruns make_golden.py with the Python torch of this build's LibTorch (Debian's torch 1.13, or
# the pinned torch 2.11 wheel: tests/require_python_torch.sh) and checks that the committed
# golden files of that version are what it writes, so they come from the script and not from
# loom: the same keys, strings, integers and layout, and every float within a few float32 ulps
# (relative 2e-7, absolute 1e-12). torch's CPU kernels pick their vector ISA at run time
# (AVX-512 or AVX2), and AdamW's float32 steps differ in the last ulp between the two, so a
# byte-for-byte check would fail on the other kind of machine. Fails (never skips) when Python
# or its torch is missing.
#   usage: golden_up_to_date_test.sh MAKE_GOLDEN_PY GOLDEN_FILE...
set -euo pipefail
script=$1
shift
source tests/require_python_torch.sh

out=$(mktemp -d "${TEST_TMPDIR:-/tmp}/optim_golden.XXXXXX")
"$py" "$script" "$out" >/dev/null
status=0
# Exit 0 when the JSON files A and B agree as the header says.
same_within_ulps() {
  "$py" - "$1" "$2" <<'PY'
import json, math, sys
def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return (isinstance(a, (int, float)) and isinstance(b, (int, float)) and
                (a == b or math.isclose(a, b, rel_tol=2e-7, abs_tol=1e-12)))
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    return a == b
with open(sys.argv[1]) as fa, open(sys.argv[2]) as fb:
    sys.exit(0 if same(json.load(fa), json.load(fb)) else 1)
PY
}

for golden in "$@"; do
  if ! same_within_ulps "$golden" "$out/$(basename "$golden")"; then
    echo "FAIL: $golden differs from what make_golden.py writes now; rerun" \
         "make_golden.py with $py into $(dirname "$golden") and review the change:" >&2
    diff "$golden" "$out/$(basename "$golden")" | head -20 >&2 || true
    status=1
  fi
done
[[ $status -eq 0 ]] && echo "golden_up_to_date_test: PASS"
exit $status
