#!/usr/bin/env bash
# Round trip of RNG state between loom (C++) and Python torch 1.13 (Debian's /usr/bin/python3):
# C++ writes rng_state.pth and its draws, check_rng_state.py verifies them and writes its own
# state, C++ restores that and verifies Python's draws. Fails (never skips) when Python or its
# torch is missing.
#   usage: python_interop_test.sh RNG_INTEROP_TOOL CHECK_RNG_STATE_PY
set -euo pipefail
tool=$1
script=$2
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

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/rng_interop.XXXXXX")
"$tool" write "$dir"
"$py" "$script" "$dir"
"$tool" read "$dir"
echo "python_interop_test: PASS"
