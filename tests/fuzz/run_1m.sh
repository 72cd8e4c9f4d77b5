#!/usr/bin/env bash
# One long libFuzzer campaign of a //tests/fuzz target, as README.md's figures were made: the
# checked-in seeds are copied to a scratch corpus (libFuzzer adds what it finds there, the
# checked-in corpus stays small), and the fuzzer runs RUNS executions in one job at low priority.
# Prints the final libFuzzer line (cov:, ft:, corp:, exec/s) and the wall time; a crash, a
# sanitizer report or a broken invariant stops the run and leaves the input in the scratch folder.
#   usage: tests/fuzz/run_1m.sh NAME [MAX_LEN] [RUNS] [MAX_SECONDS]   (from the workspace root,
#          after ./bazelw build //tests/fuzz:NAME_fuzzer; MAX_LEN 4096, RUNS 1000000 by default;
#          MAX_SECONDS, when given, stops the run earlier: -max_total_time)
set -euo pipefail
name=$1
max_len=${2:-4096}
runs=${3:-1000000}
max_time=${4:-0}
fuzzer=bazel-bin/tests/fuzz/${name}_fuzzer
dict=tests/fuzz/${name}.dict
work=/tmp/loom_fuzz_campaign/${name}
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp tests/fuzz/${name}_corpus/* "$work/corpus/"
start=$(date +%s)
status=0
(cd "$work" && nice -n 10 "$OLDPWD/$fuzzer" -dict="$OLDPWD/$dict" -max_len="$max_len" \
   -runs="$runs" -max_total_time="$max_time" -jobs=1 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
   "$work/corpus") >"$work/driver.log" 2>&1 || status=$?
end=$(date +%s)
log="$work/fuzz-0.log"
grep -E "^#[0-9]+.*(pulse|NEW|REDUCE|DONE|INITED)" "$log" | tail -1 || true
grep -E "^Done|stat::" "$log" || true
echo "corpus files: $(ls "$work/corpus" | wc -l); wall: $((end - start)) s; exit: $status"
ls "$work/artifacts"
[[ $status -eq 0 ]]
