#!/usr/bin/env bash
# scheduler.pt both ways between loom and Python torch 1.13 (Debian's /usr/bin/python3):
# loom's StateDict() saved with torch::pickle_save must equal torch's state_dict() after the
# same steps and resume a Python scheduler; Python's torch.save(state_dict()) must load into
# loom and continue the same schedule. Fails (never skips) when Python or its torch is missing.
#   usage: scheduler_state_interop_test.sh SCHEDULER_STATE_TOOL CHECK_SCHEDULER_STATE_PY
set -euo pipefail
tool=$1
script=$2
source tests/require_python_torch.sh

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/scheduler_state.XXXXXX")
"$py" "$script" cases "$dir"
"$tool" write "$dir"
"$py" "$script" verify "$dir"
"$tool" read "$dir"
echo "scheduler_state_interop_test: PASS"
