#!/usr/bin/env bash
# The checked-in hostile files equal what make_hostile_files.py writes now with Debian's
# /usr/bin/python3 (its standard library only).
#   usage: hostile_files_fresh_test.sh MAKE_HOSTILE_FILES_PY FILE...
set -euo pipefail
script=$1
shift
fresh="$TEST_TMPDIR/hostile"
mkdir -p "$fresh"
/usr/bin/python3 "$script" "$fresh"
[[ $(ls "$fresh" | wc -l) == "$#" ]] || {
  echo "FAIL: the script writes $(ls "$fresh" | wc -l) files, $# are checked in" >&2
  exit 1
}
for f in "$@"; do
  cmp "$f" "$fresh/$(basename "$f")" || {
    echo "FAIL: $f is stale; rerun: /usr/bin/python3 $script checkpoint/testdata/hostile" >&2
    exit 1
  }
done
echo "hostile_files_fresh_test: PASS ($# files)"
