#!/usr/bin/env bash
# Runs a Python script of //tests/layering with Debian's /usr/bin/python3 (standard library
# only), from the test's runfiles root, where the packages' layering_files lie.
#   usage: run_python.sh SCRIPT [ARGS...]
set -euo pipefail
py=/usr/bin/python3
if [[ ! -x $py ]]; then
  echo "FAIL: $py not found; this test needs Debian's python3." >&2
  exit 1
fi
exec "$py" "$@"
