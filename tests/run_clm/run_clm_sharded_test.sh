#!/usr/bin/env bash
# run_clm with the data-parallel strategies, under //tools:launch at 2 ranks, against one
# process: DDP, --deepspeed ZeRO-2 and ZeRO-3 (the Transformers DeepSpeed document's configs,
# "auto" values) and --fsdp "full_shard auto_wrap" with LlamaDecoderLayer train the same global
# batches from the demo's model: weights within 1e-6, the same logged loss and lr, grad_norm
# within 2e-5 relative, the same eval perplexity and accuracy within 1e-6 relative. (Adam moves
# every weight by ~lr whatever its gradient's size, so gradients that differ in their last bits
# leave weights ~1e-3 lr apart — 2e-7 here, up to 4e-5 of the smallest weights — and the next
# steps' gradients, taken at those weights, differ by up to ~1e-5 relative in their norm; a
# gradient summed wrongly or on the wrong shard changes the norm by tens of percent.) Every block has block_size label
# tokens, so the ranks' mean losses average to one process's mean over the global batch.
#   usage: run_clm_sharded_test.sh RUN_CLM LAUNCH COMPARE_PY SAME_LOGS_PY
set -euo pipefail
bin=$1 launch=$2 compare=$3 same_logs_py=$4
T="$TEST_TMPDIR"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
# One intra-op thread everywhere: the data-parallel split is then the only difference.
export OMP_NUM_THREADS=1

# The demo's model after one epoch (its tokenizer, config and data).
timeout 180 "$bin" --output_dir "$T/m" --do_train --num_train_epochs 1 --report_to none \
  --disable_tqdm > "$T/m.log" 2>&1 || { cat "$T/m.log"; fail "demo model"; }
D="$T/m/synthetic_data"
# lr 1e-4: a 4 x 2 batch rounds its gradients differently from an 8 batch, and Adam turns that
# into weight differences proportional to lr; 1e-6 is 1% of one step's lr, while a gradient
# reaching the wrong shard moves weights by ~lr.
TRAIN=(--model_name_or_path "$T/m" --train_file "$D/train.txt" --validation_file "$D/validation.txt"
       --block_size 64 --do_train --do_eval --max_eval_samples 32 --per_device_eval_batch_size 8
       --max_steps 20 --logging_steps 1 --learning_rate 1e-4 --max_grad_norm 0.5 --seed 9
       --save_strategy no --report_to none --disable_tqdm)
metric() { sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" "$1"; }
# Several ranks shuffle from torch's global generator; one process does the same with
# use_seedable_sampler false, so both see the same global batches.
reference() {  # OUT [flags...]
  local out=$1; shift
  "$bin" --output_dir "$out" --per_device_train_batch_size 8 "${TRAIN[@]}" \
    --accelerator_config '{"use_seedable_sampler": false}' "$@" > "$out.log" 2>&1 ||
    { cat "$out.log"; fail "one process $*"; }
  [[ -n $(metric "$out/eval_results.json" perplexity) ]] || fail "no perplexity in $out"
}
zero() {  # STAGE
  echo "{\"train_micro_batch_size_per_gpu\": \"auto\", \"train_batch_size\": \"auto\", \"gradient_accumulation_steps\": \"auto\", \"gradient_clipping\": \"auto\", \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": \"auto\", \"betas\": \"auto\", \"eps\": \"auto\", \"weight_decay\": \"auto\"}}, \"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": {\"warmup_min_lr\": \"auto\", \"warmup_max_lr\": \"auto\", \"warmup_num_steps\": \"auto\", \"total_num_steps\": \"auto\"}}, \"zero_optimization\": {\"stage\": $1, \"stage3_param_persistence_threshold\": 0, \"stage3_gather_16bit_weights_on_model_save\": true}}"
}
zero 2 > "$T/zero2.json"
zero 3 > "$T/zero3.json"
# One process plain (DDP and FSDP train with HF's AdamW and linear schedule), and one with the
# DeepSpeed config (DeepSpeed's AdamW and WarmupDecayLR, which the stage does not change).
reference "$T/ref"
reference "$T/ref_ds" --deepspeed "$T/zero2.json"
check_train() {  # NAME STRATEGY REF [flags...]
  local name=$1 strategy=$2 ref=$3; shift 3
  timeout 300 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$T/$name" \
    --per_device_train_batch_size 4 "${TRAIN[@]}" "$@" > "$T/$name.log" 2>&1 ||
    { cat "$T/$name.log"; fail "$name: 2 ranks"; }
  grep -q "data parallelism: $strategy" "$T/$name.log" ||
    fail "$name: $(grep 'data parallelism' "$T/$name.log" | head -1)"
  "$PY" "$compare" "$ref/model.safetensors" "$T/$name/model.safetensors" 1e-6 ||
    fail "$name: weights differ from one process"
  "$PY" "$same_logs_py" "$ref/trainer_state.json" "$T/$name/trainer_state.json" "$name" \
    grad_rtol=2e-5 || exit 1
  local key a b p
  for key in eval_accuracy perplexity; do
    a=$(metric "$ref/eval_results.json" $key) b=$(metric "$T/$name/eval_results.json" $key)
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 1e-6 * a) }' ||
      fail "$name: $key $b vs one process $a"
  done
  echo "ok: $name at 2 ranks == one process (perplexity $b)"
}
check_train ddp "DDP" "$T/ref"
check_train zero2 "ZeRO-2" "$T/ref_ds" --deepspeed "$T/zero2.json"
check_train zero3 "ZeRO-3" "$T/ref_ds" --deepspeed "$T/zero3.json"
check_train fsdp "FSDP full_shard" "$T/ref" --fsdp "full_shard auto_wrap" \
  --fsdp_config '{"transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"]}'
echo "run_clm_sharded_test: PASS"
