#!/usr/bin/env bash
# `launch ... //examples/glue:run_glue`: a Bazel label names a program the launcher carries in
# its runfiles (so `./bazelw run //tools:launch -- ... //examples/glue:run_glue` works whatever
# bazel-bin points at). Each of 2 ranks runs the labelled program; a label the launcher does not
# carry is refused (exit 2) naming it.
#   usage: launch_label_test.sh LAUNCH
set -euo pipefail
launch=$1
fail() { echo "FAIL: $*"; exit 1; }
"$launch" --standalone --nproc_per_node 2 //examples/glue:run_glue --help > "$TEST_TMPDIR/help.txt" 2>&1 ||
  { cat "$TEST_TMPDIR/help.txt"; fail "launch //examples/glue:run_glue --help"; }
n=$(grep -o "usage: run_glue \[--help\]" "$TEST_TMPDIR/help.txt" | wc -l)
[[ $n -eq 2 ]] || fail "2 ranks should each print run_glue's usage, got $n"
set +e
"$launch" --nproc_per_node 1 //examples/glue:nothing > /dev/null 2> "$TEST_TMPDIR/err.txt"
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "unknown label: exit $rc"
grep -qF "PROGRAM //examples/glue:nothing: the launcher does not carry it" "$TEST_TMPDIR/err.txt" ||
  fail "unknown label: $(cat "$TEST_TMPDIR/err.txt")"
echo "ok: labels resolve to the launcher's runfiles"
