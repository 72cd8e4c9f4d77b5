#!/usr/bin/env bash
# scheduler.pt both ways between loom and Python torch 1.13 (Debian's /usr/bin/python3):
# loom's StateDict() saved with torch::pickle_save must equal torch's state_dict() after the
# same steps and resume a Python scheduler; Python's torch.save(state_dict()) must load into
# loom and continue the same schedule. Fails (never skips) when Python or its torch is missing.
#   usage: scheduler_state_interop_test.sh SCHEDULER_STATE_TOOL CHECK_SCHEDULER_STATE_PY
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

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/scheduler_state.XXXXXX")
"$py" "$script" cases "$dir"
"$tool" write "$dir"
"$py" "$script" verify "$dir"
"$tool" read "$dir"
echo "scheduler_state_interop_test: PASS"
