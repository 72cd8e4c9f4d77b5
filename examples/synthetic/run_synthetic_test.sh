#!/usr/bin/env bash
# End to end: run_synthetic trains and evaluates from the command line, writes HF's output
# files, and learns (eval accuracy well above the 1/4 of guessing). Then bad arguments exit 2
# with a message naming the flag.
set -euo pipefail
bin=$1
out="${TEST_TMPDIR:-/tmp}/run_synthetic_out"
rm -rf "$out"
"$bin" --output_dir "$out" --do_train --do_eval --num_train_epochs 8 --learning_rate 3e-2 \
  --per_device_train_batch_size 16 --logging_steps 8 --eval_strategy epoch --save_strategy no \
  --warmup_ratio 0.1 --disable_tqdm --report_to tensorboard > "$TEST_TMPDIR/stdout.txt"
for f in train_results.json eval_results.json all_results.json trainer_state.json; do
  [[ -s $out/$f ]] || { echo "FAIL: $out/$f missing"; exit 1; }
done
grep -q '"global_step": 256,' "$out/trainer_state.json" || { echo "FAIL: global_step"; cat "$out/trainer_state.json"; exit 1; }
grep -q '"train_loss"' "$out/train_results.json"
ls "$out"/runs/*/events.out.tfevents.* > /dev/null
acc=$(sed -n 's/.*"eval_accuracy": \([0-9.]*\).*/\1/p' "$out/eval_results.json")
awk -v a="$acc" 'BEGIN { exit !(a > 0.6) }' || { echo "FAIL: eval_accuracy $acc"; exit 1; }
grep -q "\*\*\*\*\* train metrics \*\*\*\*\*" "$TEST_TMPDIR/stdout.txt"
grep -q "'loss': " "$TEST_TMPDIR/stdout.txt"
set +e
"$bin" --output_dir "$out" --learning_rat 1 2> "$TEST_TMPDIR/err.txt"
rc=$?
set -e
[[ $rc -eq 2 ]] || { echo "FAIL: exit $rc for a bad flag"; exit 1; }
grep -q -- "--learning_rate" "$TEST_TMPDIR/err.txt" || { echo "FAIL: no suggestion"; cat "$TEST_TMPDIR/err.txt"; exit 1; }
[[ -s $out/model.safetensors && -s $out/training_args.bin ]] || { echo "FAIL: final model not saved"; exit 1; }

# Rerunning into a non-empty output dir without checkpoints is refused, as HF's scripts do.
set +e
"$bin" --output_dir "$out" --do_train --disable_tqdm 2> "$TEST_TMPDIR/err2.txt"
rc=$?
set -e
[[ $rc -eq 2 ]] || { echo "FAIL: exit $rc for a non-empty output dir"; exit 1; }
grep -q -- "Use --overwrite_output_dir to overcome" "$TEST_TMPDIR/err2.txt" || { cat "$TEST_TMPDIR/err2.txt"; exit 1; }

# A rerun with checkpoints resumes from the newest one.
ck="${TEST_TMPDIR:-/tmp}/run_synthetic_ck"
rm -rf "$ck"
"$bin" --output_dir "$ck" --do_train --max_steps 40 --save_steps 20 --disable_tqdm \
  --report_to none > /dev/null 2>&1
ls -d "$ck"/checkpoint-20 "$ck"/checkpoint-40 > /dev/null
"$bin" --output_dir "$ck" --do_train --max_steps 60 --save_steps 20 --disable_tqdm \
  --report_to none > /dev/null 2> "$TEST_TMPDIR/resume.txt"
grep -q "Checkpoint detected, resuming training at .*checkpoint-40" "$TEST_TMPDIR/resume.txt" || {
  cat "$TEST_TMPDIR/resume.txt"; echo "FAIL: no resume"; exit 1; }
grep -q '"global_step": 60,' "$ck/trainer_state.json" || { echo "FAIL: resumed run did not reach 60"; exit 1; }
echo "run_synthetic_test: PASS (eval_accuracy $acc)"
