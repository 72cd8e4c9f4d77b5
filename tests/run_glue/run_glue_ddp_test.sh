#!/usr/bin/env bash
# run_glue under //tools:launch --standalone --nproc_per_node 2 (DDP over Gloo):
#   1. eval-only (+ predict) of a saved model gives exactly the single-process eval_accuracy
#      and eval_samples, eval_loss within 1e-6, and the same predict_results_sst2.txt;
#   2. the same with dynamic padding, include_inputs_for_metrics and dataloader_drop_last;
#   3. the embedded demo trained by 2 ranks x batch 16 (the single process's global batch of
#      32: 63 steps per epoch x 6 epochs) completes, saves model and tokenizer, and reaches
#      eval_accuracy >= 0.9 in eval_results.json.
#   usage: run_glue_ddp_test.sh RUN_GLUE LAUNCH
set -euo pipefail
bin=$1 launch=$2
T="$TEST_TMPDIR"
fail() { echo "FAIL: $*" >&2; exit 1; }
get() { sed -n "s/^ *\"$2\": \\([^,]*\\),\\{0,1\\}\$/\\1/p" "$1"; }

timeout 120 "$bin" --output_dir "$T/model" --num_train_epochs 2 --disable_tqdm --report_to none \
  > "$T/model.log" 2>&1 || { cat "$T/model.log"; fail "demo run"; }
data="$T/model/synthetic_data"
EVAL=(--model_name_or_path "$T/model" --task_name sst2 --data_dir "$data" --do_eval --do_predict
      --max_seq_length 32 --per_device_eval_batch_size 8 --disable_tqdm --report_to none)
timeout 120 "$bin" --output_dir "$T/eval1" "${EVAL[@]}" > "$T/eval1.log" 2>&1 ||
  { cat "$T/eval1.log"; fail "single-process eval"; }
timeout 180 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$T/eval2" "${EVAL[@]}" \
  > "$T/eval2.log" 2>&1 || { cat "$T/eval2.log"; fail "2-rank eval"; }
for k in eval_accuracy eval_samples; do
  a=$(get "$T/eval1/eval_results.json" $k) b=$(get "$T/eval2/eval_results.json" $k)
  [[ -n $a && $a == "$b" ]] || fail "$k: 1 process $a, 2 ranks $b"
done
a=$(get "$T/eval1/eval_results.json" eval_loss) b=$(get "$T/eval2/eval_results.json" eval_loss)
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; exit !(d < 1e-6 && d > -1e-6) }' ||
  fail "eval_loss: 1 process $a, 2 ranks $b"
cmp "$T/eval1/predict_results_sst2.txt" "$T/eval2/predict_results_sst2.txt" || fail "predictions differ"
[[ $(wc -l < "$T/eval2/predict_results_sst2.txt") -eq 501 ]] || fail "predict rows"
# Replicas log at warning (HF's log_level_replica): the arguments are printed once, by rank 0.
n=$(grep -c "Training/evaluation parameters" "$T/eval2.log" || true)
[[ $n -eq 1 ]] || fail "the argument dump was printed $n times by 2 ranks (want once)"
echo "ok: 2-rank eval == 1 process (eval_accuracy $(get "$T/eval2/eval_results.json" eval_accuracy), eval_loss $a vs $b)"

# Dynamic padding (sequence lengths differ per rank: inputs are padded across ranks with -100
# before gathering, as accelerate's pad_across_processes) and --dataloader_drop_last (the
# short last batch is left out on every rank alike: 500 predictions -> 496).
DYN=(--pad_to_max_length false --include_inputs_for_metrics true --dataloader_drop_last true)
timeout 120 "$bin" --output_dir "$T/dyn1" "${EVAL[@]}" "${DYN[@]}" > "$T/dyn1.log" 2>&1 ||
  { cat "$T/dyn1.log"; fail "single-process dynamic-padding eval"; }
timeout 180 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$T/dyn2" "${EVAL[@]}" \
  "${DYN[@]}" > "$T/dyn2.log" 2>&1 || { cat "$T/dyn2.log"; fail "2-rank dynamic-padding eval"; }
for k in eval_accuracy eval_samples; do
  a=$(get "$T/dyn1/eval_results.json" $k) b=$(get "$T/dyn2/eval_results.json" $k)
  [[ -n $a && $a == "$b" ]] || fail "dynamic padding, $k: 1 process $a, 2 ranks $b"
done
[[ $(wc -l < "$T/dyn2/predict_results_sst2.txt") -eq 497 ]] || fail "drop_last: not 496 predictions"
cmp "$T/dyn1/predict_results_sst2.txt" "$T/dyn2/predict_results_sst2.txt" ||
  fail "dynamic padding: predictions differ"
echo "ok: 2-rank eval with dynamic padding and drop_last == 1 process"

timeout 240 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$T/train2" \
  --per_device_train_batch_size 16 --disable_tqdm --report_to none > "$T/train2.log" 2>&1 ||
  { cat "$T/train2.log"; fail "2-rank training"; }
grep -q '"global_step": 378,' "$T/train2/trainer_state.json" || fail "global_step: $(grep global_step "$T/train2/trainer_state.json")"
acc=$(get "$T/train2/eval_results.json" eval_accuracy)
[[ -n $acc ]] || fail "no eval_accuracy: $(cat "$T/train2/eval_results.json")"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }' || fail "2-rank eval_accuracy $acc < 0.9"
[[ -s $T/train2/model.safetensors && -s $T/train2/vocab.txt ]] || fail "model/tokenizer not saved"
echo "run_glue_ddp_test: PASS (2-rank training eval_accuracy $acc)"
