#!/usr/bin/env bash
# The embedded demo: run_glue with no model and no data (only --output_dir, so the test writes
# under TEST_TMPDIR) trains the built-in tiny BERT on the generated SST-2-format task, reaches
# eval_accuracy >= 0.9 and writes HF's output folder (model, config with the task's labels,
# tokenizer files, trainer state, results). Then run_glue's argument errors exit 2 naming the fix.
#   usage: run_glue_default_test.sh RUN_GLUE
set -euo pipefail
bin=$1
out="$TEST_TMPDIR/out"
fail() { echo "FAIL: $*"; exit 1; }
start=$(date +%s)
"$bin" --output_dir "$out" > "$TEST_TMPDIR/log.txt" 2>&1 || { cat "$TEST_TMPDIR/log.txt"; fail "run_glue exited $?"; }
echo "default run: $(( $(date +%s) - start )) s"
for f in model.safetensors config.json vocab.txt tokenizer_config.json special_tokens_map.json \
         trainer_state.json all_results.json train_results.json eval_results.json \
         training_args.bin synthetic_data/train.tsv synthetic_data/dev.tsv synthetic_data/test.tsv; do
  [[ -s $out/$f ]] || fail "$out/$f missing"
done
grep -q "running loom's embedded demo" "$TEST_TMPDIR/log.txt" || fail "no demo announcement"
grep -q "Sample [0-9]* of the training set: {'sentence': " "$TEST_TMPDIR/log.txt" || fail "no samples logged"
[[ $(wc -l < "$out/synthetic_data/train.tsv") -eq 2001 ]] || fail "train.tsv rows"
[[ $(wc -l < "$out/synthetic_data/dev.tsv") -eq 501 ]] || fail "dev.tsv rows"
[[ $(head -1 "$out/synthetic_data/train.tsv") == $'sentence\tlabel' ]] || fail "train.tsv header"

acc=$(sed -n 's/.*"eval_accuracy": \([0-9.e-]*\).*/\1/p' "$out/eval_results.json")
[[ -n $acc ]] || fail "no eval_accuracy in eval_results.json: $(cat "$out/eval_results.json")"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }' || fail "eval_accuracy $acc < 0.9"
grep -q '"eval_samples": 500' "$out/eval_results.json" || fail "eval_samples"
grep -q '"train_samples": 2000' "$out/train_results.json" || fail "train_samples"
grep -q '"eval_accuracy"' "$out/all_results.json" && grep -q '"train_loss"' "$out/all_results.json" || fail "all_results.json"
grep -q '"global_step": 378,' "$out/trainer_state.json" || fail "global_step (2000/32 -> 63 x 6 epochs)"

# config.json: run_glue's labels for the task (num_labels 2 = the two id2label entries, as HF
# saves it).
tr -d ' \n' < "$out/config.json" > "$TEST_TMPDIR/config.min"
grep -q '"id2label":{"0":"negative","1":"positive"}' "$TEST_TMPDIR/config.min" || fail "id2label: $(cat "$out/config.json")"
grep -q '"label2id":{"negative":0,"positive":1}' "$TEST_TMPDIR/config.min" || fail "label2id"
grep -q '"finetuning_task":"sst2"' "$TEST_TMPDIR/config.min" || fail "finetuning_task"
grep -q '"architectures":\["BertForSequenceClassification"\]' "$TEST_TMPDIR/config.min" || fail "architectures"
grep -q '"hidden_size":64,' "$TEST_TMPDIR/config.min" || fail "hidden_size"
[[ $(head -5 "$out/vocab.txt" | tr '\n' ' ') == "[PAD] [UNK] [CLS] [SEP] [MASK] " ]] || fail "vocab.txt"
grep -q '"vocab_size":'"$(wc -l < "$out/vocab.txt")"'}' "$TEST_TMPDIR/config.min" || fail "vocab_size != vocab.txt lines"
grep -q '"do_lower_case": true' "$out/tokenizer_config.json" || fail "tokenizer_config.json"
grep -q '"pad_token": "\[PAD\]"' "$out/special_tokens_map.json" || fail "special_tokens_map.json"

# Argument errors: exit 2 and a message naming the flag.
expect_error() {
  local want=$1; shift
  set +e
  "$bin" "$@" > /dev/null 2> "$TEST_TMPDIR/err.txt"
  local rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "exit $rc for $*: $(cat "$TEST_TMPDIR/err.txt")"
  grep -qF -- "$want" "$TEST_TMPDIR/err.txt" || fail "no '$want' for $*: $(cat "$TEST_TMPDIR/err.txt")"
}
e="$TEST_TMPDIR/e"
expect_error "cola, mnli, mrpc, qnli, qqp, rte, sst2, stsb, wnli" --output_dir "$e" --task_name glu --data_dir "$e"
expect_error "--dataset_name imdb: loom has no access to the Hugging Face Hub" --output_dir "$e" --dataset_name imdb
expect_error "--trust_remote_code" --output_dir "$e" --trust_remote_code
expect_error "pass --data_dir" --output_dir "$e" --task_name MRPC
expect_error "Need either a GLUE task, a training/validation file or a dataset name" --output_dir "$e" --train_file a.csv
expect_error '`validation_file` should have the same extension' --output_dir "$e" --train_file a.csv --validation_file b.json
expect_error "Need either a GLUE task or a test file for \`do_predict\`" --output_dir "$e" --train_file a.csv --validation_file b.csv --do_predict
expect_error "--output_dir is required" --model_name_or_path "$out" --task_name sst2 --data_dir "$out/synthetic_data"
echo "run_glue_default_test: PASS (eval_accuracy $acc)"

# `--fsdp full_shard` on one process (HF refuses it outside distributed training): FSDP over a
# world of one rank, with a note saying so; it trains as the plain single process does.
"$bin" --output_dir "$TEST_TMPDIR/plain1" --num_train_epochs 1 > "$TEST_TMPDIR/plain1.log" 2>&1 ||
  { cat "$TEST_TMPDIR/plain1.log"; fail "1-epoch run"; }
"$bin" --output_dir "$TEST_TMPDIR/fsdp1" --num_train_epochs 1 --fsdp full_shard \
  > "$TEST_TMPDIR/fsdp1.log" 2>&1 || { cat "$TEST_TMPDIR/fsdp1.log"; fail "--fsdp full_shard on one process"; }
grep -q -- "--fsdp on one process: a world of one rank" "$TEST_TMPDIR/fsdp1.log" || fail "no one-process FSDP note"
a=$(sed -n 's/.*"eval_loss": \([0-9.e-]*\).*/\1/p' "$TEST_TMPDIR/plain1/eval_results.json")
b=$(sed -n 's/.*"eval_loss": \([0-9.e-]*\).*/\1/p' "$TEST_TMPDIR/fsdp1/eval_results.json")
[[ -n $a && -n $b ]] || fail "eval_loss missing: '$a' '$b'"
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; exit !(d < 1e-5 && d > -1e-5) }' ||
  fail "one-process FSDP eval_loss $b vs plain $a"
echo "ok: --fsdp full_shard on one process trains as one process (eval_loss $b vs $a)"

# The model-state line: before the first step the optimizer's states do not exist yet (said so),
# after it their size is logged.
grep -q "model state on this rank: .*optimizer states 0 B.*allocates its states at the first step" "$TEST_TMPDIR/plain1.log" ||
  fail "no start-up model-state line with the first-step note"
grep -q "model state on this rank after the first step: .*optimizer states [1-9]" "$TEST_TMPDIR/plain1.log" ||
  fail "no model-state line after the first step"
