#!/usr/bin/env bash
# //hpsearch's samplers and median pruner against REAL optuna 4.6.0 (pinned in
# third_party/python/interop-optuna-4.6.txt): optuna_parity.py writes the studies and pruner
# cases, study_runner runs them with loom, optuna_parity.py runs them with optuna on Debian's
# /usr/bin/python3 (numpy 1.24.2) and compares trial by trial. Fails (never skips) when Python,
# numpy or the pinned optuna is missing.
#   usage: optuna_parity_test.sh PARITY_PY STUDY_RUNNER PATHS_SH
set -euo pipefail
parity=$1
runner=$2
source "$3"
folder=${LOOM_PY_INTEROP_OPTUNA_4_6:-}
if [[ -z $folder || ! -d $folder ]]; then
  echo "FAIL: optuna 4.6's pinned packages are not installed (folder: '$folder'). Run" \
       "./bazelw, which installs third_party/python/interop-optuna-4.6.txt into" \
       "/var/cache/loom/python." >&2
  exit 1
fi
py=/usr/bin/python3
if ! err=$(PYTHONPATH="$folder" "$py" -c '
import numpy, optuna
assert optuna.__version__ == "4.6.0", optuna.__version__' 2>&1); then
  echo "FAIL: $py with PYTHONPATH=$folder cannot import numpy and optuna 4.6.0 (./bazelw" \
       "installs Debian's python3-numpy and python3-yaml, and the pinned optuna; remove the" \
       "folder and run ./bazelw to reinstall it). Python said: $err" >&2
  exit 1
fi
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/optuna_parity.XXXXXX")
PYTHONPATH="$folder" "$py" "$parity" write "$dir"
"$runner" "$dir"
PYTHONPATH="$folder" "$py" "$parity" compare "$dir"
echo "optuna_parity_test: PASS"
