#!/usr/bin/env bash
# --help of loom's gflags tools: the tool's usage and its own flags only (not glog's, gflags' or
# LibTorch's, nor build paths), on stdout, exit 0.
#   usage: tool_help_test.sh ESTIMATE_MEMORY AIO_BENCH GPU_ORDER
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
check() {  # check TOOL FLAG_IT_MUST_LIST
  local tool=$1 flag=$2 out rc=0
  for help in --help -h --helpshort; do
    out=$("$tool" "$help" 2>&1) || rc=$?
    [[ $rc -eq 0 ]] || fail "$tool $help exited $rc"
    grep -q -- "--$flag (" <<<"$out" || fail "$tool $help does not list --$flag: $out"
    grep -q -- "logtostderr\|tryfromenv\|/usr/include\|external/" <<<"$out" &&
      fail "$tool $help lists flags or paths that are not the tool's: $out"
    (( $(wc -l <<<"$out") <= 40 )) || fail "$tool $help printed $(wc -l <<<"$out") lines"
  done
  echo "ok: $tool"
}
check "$1" stage
check "$2" folder
check "$3" nproc_per_node
