#!/usr/bin/env bash
# Crash safety: the training process is SIGKILLed at >= 20 random
# moments (checkpoints are written every step, so many kills land inside a save); after every
# kill the next run must resume (or start) successfully, and the run that finally completes
# must end bit-identical (weights, optimizer state, schedule, log history) to a run that was
# never interrupted.
#   usage: crash_test.sh CRASH_TOOL
set -euo pipefail
tool=$1
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/crash.XXXXXX")
"$tool" "$work/reference" "$work/reference.digest" > "$work/reference.log" 2>&1 || {
  cat "$work/reference.log"; echo "FAIL: the uninterrupted run failed"; exit 1; }

RANDOM=12345  # reproducible kill times
kills=0 completions=0 runs=0
dir="$work/run"
while (( kills < 24 )); do
  runs=$((runs + 1))
  "$tool" "$dir" "$work/run.digest" > "$work/run.$runs.log" 2>&1 &
  pid=$!
  # 20 ms .. 1.2 s after the start: start-up, training steps and saves alike.
  sleep "$(printf '0.%03d' $(( (RANDOM % 1180) + 20 )))" 2>/dev/null || sleep 0.3
  if kill -9 "$pid" 2>/dev/null; then
    wait "$pid" 2>/dev/null || true
    kills=$((kills + 1))
  else
    if ! wait "$pid"; then
      cat "$work/run.$runs.log"; echo "FAIL: run $runs (after $kills kills) failed"; exit 1
    fi
    completions=$((completions + 1))
    cmp -s "$work/reference.digest" "$work/run.digest" || {
      echo "FAIL: run $runs completed after $kills kills with a different digest"; exit 1; }
    rm -rf "$dir" "$work/run.digest"  # start over so later kills hit a fresh run
  fi
done
# Finish whatever state the last kill left.
"$tool" "$dir" "$work/run.digest" > "$work/final.log" 2>&1 || {
  cat "$work/final.log"; echo "FAIL: the final resume failed"; exit 1; }
cmp -s "$work/reference.digest" "$work/run.digest" || {
  echo "FAIL: the resumed run's digest differs from the uninterrupted run's"; exit 1; }
echo "crash_test: PASS ($kills kills, $completions completed runs in between, $runs runs)"
