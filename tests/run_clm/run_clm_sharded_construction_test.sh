#!/usr/bin/env bash
# Sharded construction (DeepSpeed's zero.Init, FSDP's meta-device loading): a Llama whose fp32
# weights (76 MiB) exceed the per-rank LOOM_CPU_MEMORY_LIMIT (66 MiB) is loaded from an HF folder
# of sharded safetensors (written by the REAL transformers 4.41 save_pretrained, with
# model.safetensors.index.json) and evaluated at 2 ranks under --deepspeed ZeRO-3 and under
# --fsdp full_shard: each rank makes only its shards, one decoder layer at a time, reports its
# peak CPU tensor memory below the whole model's size, and evaluates to one unlimited process's
# eval_loss within 1e-6. DDP under the same limit would hold the whole model on each rank: it
# fails before any work with the memory-budget error naming the fix.
#   usage: run_clm_sharded_construction_test.sh RUN_CLM LAUNCH MAKE_FOLDER_PY PATHS_SH
set -euo pipefail
bin=$1 launch=$2 make_folder=$3 paths=$4
source tests/require_python_transformers.sh "$paths" 4.41
T="$TEST_TMPDIR"
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMP_NUM_THREADS=1
LIMIT_MIB=66

# The demo's tokenizer and texts (one step is enough).
timeout 180 "$bin" --output_dir "$T/demo" --do_train --max_steps 1 --report_to none \
  --disable_tqdm > "$T/demo.log" 2>&1 || { cat "$T/demo.log"; fail "demo"; }
vocab=$(sed -n 's/.*"vocab_size": \([0-9]*\).*/\1/p' "$T/demo/config.json")
[[ -n $vocab ]] || fail "no vocab_size in the demo's config.json"
# 20 layers of hidden 256 / intermediate 1024, GQA 8/4 heads, untied: 19.9 M parameters.
python_with_transformers 4.41 "$make_folder" "$T/big" "$vocab" 256 1024 20 8 4 16MB ||
  fail "transformers could not write the model folder"
shards=$(ls "$T/big"/model-*-of-*.safetensors | wc -l)
[[ $shards -ge 3 && -f $T/big/model.safetensors.index.json ]] ||
  fail "expected a sharded safetensors folder, got: $(ls "$T/big")"
whole=$(stat -c %s "$T/big"/model-*.safetensors | awk '{ s += $1 } END { print s }')
(( whole > LIMIT_MIB * 1048576 )) || fail "the weights ($whole bytes) fit the limit: no test"

EVAL=(--model_name_or_path "$T/big" --tokenizer_name "$T/demo"
      --validation_file "$T/demo/synthetic_data/validation.txt" --block_size 64 --do_eval
      --max_eval_samples 16 --per_device_eval_batch_size 4 --report_to none --disable_tqdm)
metric() { sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" "$1"; }
timeout 300 "$bin" --output_dir "$T/one" "${EVAL[@]}" > "$T/one.log" 2>&1 ||
  { cat "$T/one.log"; fail "one process"; }
ref=$(metric "$T/one/eval_results.json" eval_loss)
[[ -n $ref ]] || fail "no eval_loss from one process"

# stage3_param_persistence_threshold 0: DeepSpeed's default (1e5 elements) would keep this small
# model's attention matrices whole on every rank.
echo '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}}' > "$T/z3.json"
check_sharded() {  # NAME [flags...]
  local name=$1; shift
  LOOM_CPU_MEMORY_LIMIT=${LIMIT_MIB}MiB timeout 300 "$launch" --standalone --nproc_per_node 2 \
    "$bin" --output_dir "$T/$name" "${EVAL[@]}" "$@" > "$T/$name.log" 2>&1 ||
    { cat "$T/$name.log"; fail "$name: 2 ranks within ${LIMIT_MIB} MiB"; }
  local line peak full
  line=$(grep -m1 "sharded construction: LlamaForCausalLM" "$T/$name.log") ||
    fail "$name: no sharded construction reported"
  full=$(sed -n 's/.*whole parameters being \([0-9.]*\) MiB.*/\1/p' <<< "$line")
  peak=$(sed -n 's/.*peak CPU tensor memory while building: \([0-9.]*\) MiB.*/\1/p' <<< "$line")
  awk -v p="$peak" -v f="$full" 'BEGIN { exit !(p != "" && f > 0 && p < 0.6 * f) }' ||
    fail "$name: construction peaked at $peak MiB for a $full MiB model"
  local loss
  loss=$(metric "$T/$name/eval_results.json" eval_loss)
  awk -v a="$ref" -v b="$loss" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b != "" && d <= 1e-6 * a) }' ||
    fail "$name: eval_loss $loss vs one process $ref"
  echo "ok: $name built a $full MiB model at a peak of $peak MiB per rank, eval_loss $loss"
}
check_sharded zero3 --deepspeed "$T/z3.json"
check_sharded fsdp --fsdp "full_shard auto_wrap" \
  --fsdp_config '{"transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"], "cpu_ram_efficient_loading": true}'

# Replicated, each rank would hold the whole model: refused before any work, naming the fix.
set +e
LOOM_CPU_MEMORY_LIMIT=${LIMIT_MIB}MiB timeout 300 "$launch" --standalone --nproc_per_node 2 \
  "$bin" --output_dir "$T/ddp" "${EVAL[@]}" > "$T/ddp.log" 2>&1
rc=$?
set -e
[[ $rc -ne 0 ]] || fail "DDP within ${LIMIT_MIB} MiB succeeded"
grep -q "^run_clm: error: building LlamaForCausalLM whole on this rank (.* MiB of parameters) does not fit: .*LOOM_CPU_MEMORY_LIMIT.*Build it sharded instead.*--deepspeed with zero_optimization.stage 3.*--fsdp" "$T/ddp.log" ||
  { cat "$T/ddp.log"; fail "DDP: no memory-budget error naming the fix"; }
[[ ! -e $T/ddp/eval_results.json ]] || fail "DDP wrote results"
echo "ok: DDP refused: $(grep -m1 '^run_clm: error' "$T/ddp.log" | cut -c1-160)..."

# An unreadable --deepspeed file is its own error, not the memory budget's (whether the model
# would be sharded cannot be told from it).
set +e
LOOM_CPU_MEMORY_LIMIT=${LIMIT_MIB}MiB timeout 120 "$bin" --output_dir "$T/bad_ds" "${EVAL[@]}" \
  --deepspeed "$T/no_such_config.json" > "$T/bad_ds.log" 2>&1
rc=$?
set -e
[[ $rc -ne 0 ]] || fail "a missing --deepspeed file was accepted"
grep -q "^run_clm: error: .*--deepspeed: .*no_such_config.json" "$T/bad_ds.log" ||
  { cat "$T/bad_ds.log"; fail "a missing --deepspeed file: no error naming it"; }
grep -q "does not fit" "$T/bad_ds.log" && fail "a missing --deepspeed file reported as the memory budget"
echo "ok: a missing --deepspeed file: $(grep -m1 '^run_clm: error' "$T/bad_ds.log" | cut -c1-160)"
echo "run_clm_sharded_construction_test: PASS"
