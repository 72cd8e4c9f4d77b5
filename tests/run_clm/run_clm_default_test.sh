#!/usr/bin/env bash
# run_clm end to end: the embedded demo (a tiny Llama and a Llama-layout SentencePiece tokenizer
# trained from scratch on a generated corpus) cuts the validation perplexity to under a tenth of
# the untrained model's and writes HF's output folder, which run_clm loads back to evaluate (the
# same perplexity); and each bad input is a clear error before any training.
#   usage: run_clm_default_test.sh RUN_CLM
set -euo pipefail
bin=$1
T="$TEST_TMPDIR"
fail() { echo "FAIL: $*" >&2; exit 1; }

timeout 300 "$bin" --output_dir "$T/demo" --report_to none --disable_tqdm > "$T/demo.log" 2>&1 ||
  { cat "$T/demo.log"; fail "the demo failed"; }
before=$(sed -n 's/^run_clm: untrained model: perplexity \([0-9.e+]*\),.*/\1/p' "$T/demo.log")
after=$(sed -n 's/^run_clm: trained model: perplexity \([0-9.e+]*\),.*/\1/p' "$T/demo.log")
[[ -n $before && -n $after ]] || { cat "$T/demo.log"; fail "no perplexity lines"; }
awk -v b="$before" -v a="$after" 'BEGIN { exit !(a * 10 < b) }' ||
  fail "perplexity $before -> $after: not under a tenth"
echo "ok: demo perplexity $before -> $after"
for f in config.json generation_config.json model.safetensors tokenizer.model tokenizer_config.json \
    special_tokens_map.json training_args.bin train_results.json eval_results.json \
    all_results.json trainer_state.json README.md synthetic_data/train.txt; do
  [[ -s $T/demo/$f ]] || fail "the demo's output folder lacks $f"
done
grep -q '"perplexity"' "$T/demo/eval_results.json" || fail "no perplexity in eval_results.json"
grep -q '"eval_accuracy"' "$T/demo/eval_results.json" || fail "no eval_accuracy"
grep -q '"architectures": \[' "$T/demo/config.json" && grep -q '"LlamaForCausalLM"' "$T/demo/config.json" ||
  fail "config.json is not a LlamaForCausalLM's"
grep -q "^- Accuracy: " "$T/demo/README.md" || fail "model card without the eval accuracy"

# The saved folder loads back (model and tokenizer) and evaluates to the same perplexity.
D="$T/demo/synthetic_data"
timeout 120 "$bin" --model_name_or_path "$T/demo" --validation_file "$D/validation.txt" \
  --block_size 64 --do_eval --per_device_eval_batch_size 32 --output_dir "$T/eval" \
  --report_to none --disable_tqdm > "$T/eval.log" 2>&1 || { cat "$T/eval.log"; fail "reloading"; }
p() { sed -n 's/.*"perplexity": \([0-9.e+]*\).*/\1/p' "$1"; }
[[ $(p "$T/eval/eval_results.json") == "$(p "$T/demo/eval_results.json")" ]] ||
  fail "reloaded perplexity $(p "$T/eval/eval_results.json") vs $(p "$T/demo/eval_results.json")"
echo "ok: the saved folder evaluates to the same perplexity"

# --block_size beyond max_position_embeddings: HF's warning and the clamp.
timeout 120 "$bin" --model_name_or_path "$T/demo" --validation_file "$D/validation.txt" \
  --block_size 4096 --do_eval --max_eval_samples 4 --output_dir "$T/clamp" --report_to none \
  --disable_tqdm > "$T/clamp.log" 2>&1 || { cat "$T/clamp.log"; fail "block_size clamp run"; }
grep -q "The block_size passed (4096) is larger than the maximum length for the model (max_position_embeddings 256). Using block_size=256." "$T/clamp.log" ||
  fail "no clamp warning: $(grep -i block_size "$T/clamp.log" | head -2)"
echo "ok: --block_size 4096 clamped to 256 with a warning"

# Bad inputs: each a clear error naming the cause, no training.
bad() {  # NAME EXPECTED_TEXT FLAGS...
  local name=$1 want=$2; shift 2
  set +e
  timeout 120 "$bin" --output_dir "$T/bad_$name" --report_to none "$@" > "$T/bad_$name.log" 2>&1
  local rc=$?
  set -e
  [[ $rc -ne 0 ]] || fail "$name: accepted"
  grep -qF -- "$want" "$T/bad_$name.log" || { cat "$T/bad_$name.log"; fail "$name: no \"$want\""; }
  ! grep -q "Running training" "$T/bad_$name.log" || fail "$name: trained before failing"
  echo "ok: $name -> $(grep -F -- "$want" "$T/bad_$name.log" | head -1 | cut -c1-160)"
}
TRAIN=(--tokenizer_name "$T/demo" --train_file "$D/train.txt" --do_train --max_steps 1)
mkdir -p "$T/yarn"
sed 's/"rope_scaling": null/"rope_scaling": {"factor": 4.0, "type": "yarn"}/' "$T/demo/config.json" > "$T/yarn/config.json"
bad rope_type 'key "rope_scaling" has the type "yarn"' --config_name "$T/yarn" "${TRAIN[@]}"
bad kv_heads 'must be divisible by num_key_value_heads (4)' --model_type llama \
  --config_overrides "hidden_size=48,num_attention_heads=6,num_key_value_heads=4,intermediate_size=64,num_hidden_layers=1" \
  "${TRAIN[@]}"
mkdir -p "$T/bpe"
echo '{"version": "1.0", "model": {"type": "WordPiece", "vocab": {}}, "pre_tokenizer": {"type": "BertPreTokenizer"}}' > "$T/bpe/tokenizer.json"
bad tokenizer_json 'model type "WordPiece"' --model_type llama \
  --tokenizer_name "$T/bpe" --train_file "$D/train.txt" --do_train
mkdir -p "$T/sharded"
cp "$T/demo/config.json" "$T/demo/tokenizer.model" "$T/sharded/"
cat > "$T/sharded/model.safetensors.index.json" <<'JSON'
{"metadata": {"total_size": 4}, "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors", "model.norm.weight": "model-00002-of-00002.safetensors"}}
JSON
bad missing_shard "model-00001-of-00002.safetensors" --model_name_or_path "$T/sharded" \
  --train_file "$D/train.txt" --do_train
bad streaming "--streaming is not implemented" --streaming "${TRAIN[@]}" --model_type llama
bad model_type "--model_type gpt2" --model_type gpt2 "${TRAIN[@]}"
bad no_tokenizer "new tokenizer from scratch" --model_type llama --train_file "$D/train.txt" --do_train
bad dataset_name "no access to the Hugging Face Hub" --dataset_name wikitext "${TRAIN[@]}" --model_type llama
bad extension "should be a csv, a json or a txt file" --model_type llama --tokenizer_name "$T/demo" \
  --train_file "$D/train.parquet" --do_train
echo "run_clm_default_test: PASS"
