#!/usr/bin/env bash
# REAL transformers 4.38.2 and 4.41.2 (pinned in third_party/python, installed by ./bazelw)
# read the trainer_state.json files loom writes with --save_for_transformers_version 4.38 and
# 4.41: 4.38 reads only the 4.38 layout, 4.41 reads both (see check_trainer_state_transformers.py).
# Fails (never skips) when the pinned packages, Python, torch or numpy are missing.
#   usage: trainer_state_transformers_test.sh TOOL CHECK_PY PYTHON_INTEROP_PATHS_SH
set -euo pipefail
tool=$1
script=$2
source tests/require_python_transformers.sh "$3" 4.38 4.41

dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/trainer_state_layouts.XXXXXX")
"$tool" "$dir"
python_with_transformers 4.38 "$script" "$dir" 4.38
python_with_transformers 4.41 "$script" "$dir" 4.41
echo "trainer_state_transformers_test: PASS"
