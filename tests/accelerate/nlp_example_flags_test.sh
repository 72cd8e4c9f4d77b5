#!/usr/bin/env bash
# The accelerate examples' command lines, as a user meets them: --help lists the flags and exits
# 0; a misspelled flag (--num_epoch) is refused (exit 2) with the flag it resembles; a flag an
# accelerate config adds for HF scripts (--use_cpu) is skipped with a warning. And the
# nlp_example learns visibly: a training loss per epoch, falling, and an accuracy well above
# chance on the demo task after 3 epochs.
#   usage: nlp_example_flags_test.sh NLP_EXAMPLE ACCELERATE_TUTORIAL
set -euo pipefail
nlp=$1 tutorial=$2
T=$TEST_TMPDIR
fail() { echo "FAIL: $*"; exit 1; }
for bin in "$nlp" "$tutorial"; do
  "$bin" --help > "$T/help.txt" 2>&1 || fail "$bin --help: exit $?"
  grep -q "^usage: $(basename "$bin") " "$T/help.txt" || fail "$bin --help: $(head -3 "$T/help.txt")"
  grep -q -- "--num_epochs N" "$T/help.txt" || fail "$bin --help lists no --num_epochs"
  set +e
  "$bin" --num_epoch 1 > /dev/null 2> "$T/err.txt"
  rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "$bin --num_epoch 1: exit $rc"
  grep -qF "unrecognized argument --num_epoch; did you mean --num_epochs?" "$T/err.txt" ||
    fail "$bin --num_epoch: $(cat "$T/err.txt")"
done
"$nlp" --data_dir "$T/data" --num_epochs 3 --use_cpu > "$T/nlp.log" 2>&1 ||
  { cat "$T/nlp.log"; fail "nlp_example"; }
grep -q "ignoring --use_cpu" "$T/nlp.log" || fail "no warning for --use_cpu"
[[ $(grep -c "train loss: " "$T/nlp.log") -eq 3 ]] || fail "not one training loss per epoch"
first=$(sed -n 's/^epoch 0 train loss: \([0-9.e-]*\).*/\1/p' "$T/nlp.log")
last=$(sed -n 's/^epoch 2 train loss: \([0-9.e-]*\).*/\1/p' "$T/nlp.log")
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "the loss did not fall: $first -> $last"
acc=$(sed -n "s/^epoch 2: {'accuracy': \([0-9.e-]*\)}.*/\1/p" "$T/nlp.log")
awk -v a="$acc" 'BEGIN { exit !(a >= 0.8) }' || fail "accuracy after 3 epochs: '$acc' < 0.8"
echo "ok: flags refused or skipped clearly; nlp_example loss $first -> $last, accuracy $acc"
