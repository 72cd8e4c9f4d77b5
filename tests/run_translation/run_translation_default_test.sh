#!/usr/bin/env bash
# The embedded demo: run_translation with no model and no data (only --output_dir, so the test
# writes under TEST_TMPDIR) trains a SentencePiece model and a tiny T5 from scratch on the
# generated English -> Romanian task; its BLEU beats the untrained model's by far, and it writes
# HF's output folder (model, generation config, tokenizer files, results,
# generated_predictions.txt). Then run_translation's bad inputs exit 2 naming the fix, before any
# training.
#   usage: run_translation_default_test.sh RUN_TRANSLATION
set -euo pipefail
bin=$1
out="$TEST_TMPDIR/out"
fail() { echo "FAIL: $*"; exit 1; }
start=$(date +%s)
"$bin" --output_dir "$out" > "$TEST_TMPDIR/log.txt" 2>&1 || { cat "$TEST_TMPDIR/log.txt"; fail "run_translation exited $?"; }
echo "default run: $(( $(date +%s) - start )) s"
for f in model.safetensors config.json generation_config.json spiece.model tokenizer_config.json \
         special_tokens_map.json trainer_state.json all_results.json train_results.json \
         eval_results.json predict_results.json generated_predictions.txt training_args.bin \
         README.md synthetic_data/train.json synthetic_data/validation.json synthetic_data/test.json; do
  [[ -s $out/$f ]] || fail "$out/$f missing"
done
grep -q "running loom's embedded demo" "$TEST_TMPDIR/log.txt" || fail "no demo announcement"
untrained=$(sed -n 's/.*untrained model: BLEU \([0-9.e-]*\),.*/\1/p' "$TEST_TMPDIR/log.txt")
bleu=$(sed -n 's/.*"eval_bleu": \([0-9.e-]*\).*/\1/p' "$out/eval_results.json")
[[ -n $untrained && -n $bleu ]] || fail "BLEU missing: untrained '$untrained', eval '$bleu'"
awk -v a="$bleu" -v u="$untrained" 'BEGIN { exit !(a >= 40 && a >= u + 30) }' ||
  fail "eval_bleu $bleu does not clearly beat the untrained model's $untrained"
grep -q '"eval_gen_len": ' "$out/eval_results.json" || fail "eval_gen_len"
grep -q '"eval_samples": 200' "$out/eval_results.json" || fail "eval_samples"
grep -q '"predict_bleu": ' "$out/predict_results.json" || fail "predict_bleu"
grep -q '"predict_samples": 100' "$out/predict_results.json" || fail "predict_samples"
grep -q '"train_samples": 2000' "$out/train_results.json" || fail "train_samples"
grep -q '"global_step": 756,' "$out/trainer_state.json" || fail "global_step (2000/32 -> 63 x 12 epochs)"
[[ $(wc -l < "$out/synthetic_data/train.json") -eq 2000 ]] || fail "train.json lines"
# generated_predictions.txt: one line per test pair, joined with "\n" (no trailing newline).
[[ $(( $(wc -l < "$out/generated_predictions.txt") + 1 )) -eq 100 ]] || fail "generated_predictions.txt lines"
tr -d ' \n' < "$out/config.json" > "$TEST_TMPDIR/config.min"
grep -q '"architectures":\["T5ForConditionalGeneration"\]' "$TEST_TMPDIR/config.min" || fail "architectures"
grep -q '"d_model":64,' "$TEST_TMPDIR/config.min" || fail "d_model"
grep -q '"decoder_start_token_id": 0' "$out/generation_config.json" || fail "generation_config.json"
echo "run_translation_default_test: demo PASS (eval_bleu $bleu, untrained $untrained)"

# Bad input: exit 2 and a message naming the fix, before any training.
# expect_error_rc RC MESSAGE ARGS...: bad arguments exit 2; a model or tokenizer folder that
# cannot be used (FailedPrecondition) exits 1.
expect_error_rc() {
  local want_rc=$1 want=$2; shift 2
  set +e
  "$bin" "$@" > "$TEST_TMPDIR/err_out.txt" 2> "$TEST_TMPDIR/err.txt"
  local rc=$?
  set -e
  [[ $rc -eq $want_rc ]] || fail "exit $rc for $*: $(tail -5 "$TEST_TMPDIR/err.txt")"
  grep -qF -- "$want" "$TEST_TMPDIR/err.txt" || fail "no '$want' for $*: $(tail -5 "$TEST_TMPDIR/err.txt")"
  ! grep -q "'loss'" "$TEST_TMPDIR/err_out.txt" "$TEST_TMPDIR/err.txt" || fail "trained before failing: $*"
}
expect_error() { expect_error_rc 2 "$@"; }
e="$TEST_TMPDIR/e"
data="$out/synthetic_data"
common=(--output_dir "$e" --overwrite_output_dir --do_train --do_eval --predict_with_generate
        --train_file "$data/train.json" --validation_file "$data/validation.json")
# A language the data does not have.
expect_error '"translation" has no "de"' "${common[@]}" --source_lang de --target_lang ro
# A pretrained T5 without --source_prefix (HF's warning, as an error with the fix).
expect_error "didn't provide a source prefix" "${common[@]}" --source_lang en --target_lang ro \
  --model_name_or_path "$out"
# num_beams < num_return_sequences (the generation config's), before training.
echo '{"num_beams": 4, "num_return_sequences": 4}' > "$TEST_TMPDIR/generation_config.json"
expect_error "has to be smaller or equal to \`num_beams\` (2)" "${common[@]}" --source_lang en \
  --target_lang ro --model_name_or_path "$out" --source_prefix "translate English to Romanian: " \
  --generation_config "$TEST_TMPDIR/generation_config.json" --num_beams 2
# A tokenizer folder without spiece.model.
mkdir -p "$TEST_TMPDIR/fast_only" && echo '{}' > "$TEST_TMPDIR/fast_only/tokenizer.json"
expect_error_rc 1 "has tokenizer.json but no spiece.model" "${common[@]}" --source_lang en --target_lang ro \
  --model_name_or_path "$out" --source_prefix "" --tokenizer_name "$TEST_TMPDIR/fast_only"
# A JSON line without the translation field: the file and the line are named.
{ head -2 "$data/train.json"; echo '{"text": "no translation here"}'; } > "$TEST_TMPDIR/bad.json"
expect_error "$TEST_TMPDIR/bad.json:3" --output_dir "$e" --overwrite_output_dir --do_train \
  --train_file "$TEST_TMPDIR/bad.json" --source_lang en --target_lang ro
expect_error "Need to specify the source language and the target language" "${common[@]}"
expect_error "should be a jsonlines file" --output_dir "$e" --do_train --train_file a.csv \
  --source_lang en --target_lang ro
expect_error "--dataset_name wmt16: loom has no access to the Hugging Face Hub" --output_dir "$e" \
  --dataset_name wmt16 --source_lang en --target_lang ro
expect_error "--forced_bos_token" "${common[@]}" --source_lang en --target_lang ro --forced_bos_token ro_RO
echo "run_translation_default_test: PASS"
