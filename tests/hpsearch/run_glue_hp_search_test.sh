#!/usr/bin/env bash
# run_glue --hp_search_trials on the embedded demo (a tiny BERT on the generated SST-2 task):
#   1. a 12-trial TPE search (median pruner, evaluation every 8 steps, maximize accuracy):
#      12 run folders with trainer_state.json (trial_params), hp_search.json with every trial,
#      pruned ones included, and the BestRun; the results table on stdout;
#   2. the same search killed (SIGKILL) at a random moment and started again ends with the same
#      study: trials, parameters, states, objectives, intermediate values and best run;
#   3. real optuna 4.6 reads the study journal and finds the same trials and best trial;
#   4. 2 ranks (//tools:launch, batch 16 each) run the same trials (parameters, objectives,
#      pruned ones) with the same best run as one process with batch 32;
#   5. bad input stops before any work: an unknown backend, a contradictory space, an --hp_*
#      flag without --hp_search_trials, and a journal of another study.
#   usage: run_glue_hp_search_test.sh RUN_GLUE LAUNCH COMPARE_PY PATHS_SH DROPOUT_FREE_SH
set -euo pipefail
bin=$1 launch=$2 compare=$3 paths=$4 dropout_free=$5
source tests/hpsearch/require_optuna.sh "$paths"  # sets py and optuna_dir
T="$TEST_TMPDIR"
fail() { echo "FAIL: $*" >&2; exit 1; }

SPACE='{"learning_rate": {"type": "float", "low": 3e-4, "high": 3e-3, "log": true},
        "num_train_epochs": {"type": "int", "low": 2, "high": 4},
        "per_device_train_batch_size": {"type": "categorical", "choices": [16, 32]}}'
COMMON=(--max_train_samples 1024 --max_eval_samples 200 --eval_strategy steps --eval_steps 16
        --logging_steps 16 --disable_tqdm --report_to none --hp_search_trials 12 --hp_backend tpe
        --hp_direction maximize)

# 1. The whole search.
start=$(date +%s)
timeout 600 "$bin" --output_dir "$T/a" "${COMMON[@]}" --hp_space "$SPACE" > "$T/a.log" 2>&1 ||
  { tail -50 "$T/a.log"; fail "the search"; }
took=$(( $(date +%s) - start ))
grep -q "^best run: " "$T/a.log" || fail "no results table on stdout"
for n in $(seq 0 11); do
  [[ -f $T/a/run-$n/trainer_state.json ]] || fail "run-$n/trainer_state.json missing"
  grep -q '"trial_name": "run-'$n'"' "$T/a/run-$n/trainer_state.json" || fail "run-$n trial_name"
done
$py "$compare" summary "$T/a/hp_search.json"
grep -q '"state": "pruned"' "$T/a/hp_search.json" || fail "no trial was pruned"
echo "ok: 12 trials in ${took}s"

# 2. Killed at a random moment, then started again.
delay=$(( 2 + RANDOM % (took > 6 ? took - 4 : 2) ))
"$bin" --output_dir "$T/b" "${COMMON[@]}" --hp_space "$SPACE" > "$T/b1.log" 2>&1 &
pid=$!
sleep "$delay"
kill -KILL "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
echo "killed the search after ${delay}s ($(grep -c '"op_code": 4' "$T/b/hp_search.journal" 2>/dev/null || echo 0) trials started)"
timeout 600 "$bin" --output_dir "$T/b" "${COMMON[@]}" --hp_space "$SPACE" > "$T/b2.log" 2>&1 ||
  { tail -50 "$T/b2.log"; fail "the resumed search"; }
$py "$compare" same "$T/a/hp_search.json" "$T/b/hp_search.json"

# 3. optuna reads the journal.
PYTHONPATH="$optuna_dir" $py "$compare" optuna "$T/b/hp_search.journal" "$T/b/hp_search.json"

# 4. 2 ranks with the same global batch. The training itself must then be the same: the demo
# model without dropout (each rank would draw its own masks), one intra-op thread per process
# (MKL rounds a matmul differently per thread split), and one process shuffling as the ranks
# do (accelerate 0.27 leaves HF's generator-less RandomSampler under its BatchSamplerShard:
# use_seedable_sampler false), as //tests/run_glue:run_glue_deepspeed_test does.
"$dropout_free" "$bin" "$T/m"
export OMP_NUM_THREADS=1
SPACE2='{"learning_rate": {"type": "float", "low": 3e-4, "high": 3e-3, "log": true},
         "num_train_epochs": {"type": "int", "low": 2, "high": 4}}'
R=(--model_name_or_path "$T/m" --task_name sst2 --data_dir "$T/m/synthetic_data" --max_seq_length 32
   --do_train --do_eval --max_train_samples 1024 --max_eval_samples 200 --eval_strategy steps
   --eval_steps 16 --logging_steps 16 --disable_tqdm --report_to none --hp_search_trials 12
   --hp_backend tpe --hp_direction maximize --hp_space "$SPACE2")
timeout 600 "$bin" --output_dir "$T/one" "${R[@]}" --per_device_train_batch_size 32 \
  --accelerator_config '{"use_seedable_sampler": false}' > "$T/one.log" 2>&1 ||
  { tail -50 "$T/one.log"; fail "1-process search"; }
timeout 600 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$T/two" "${R[@]}" \
  --per_device_train_batch_size 16 > "$T/two.log" 2>&1 || { tail -50 "$T/two.log"; fail "2-rank search"; }
$py "$compare" same "$T/one/hp_search.json" "$T/two/hp_search.json"
unset OMP_NUM_THREADS

# 5. Bad input: exit 2 before anything is written.
bad() {
  local name=$1 want=$2
  shift 2
  local rc=0
  "$bin" --output_dir "$T/bad_$name" --disable_tqdm --report_to none "$@" > "$T/bad_$name.log" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || { cat "$T/bad_$name.log"; fail "$name: exit $rc, want 2"; }
  grep -q -- "$want" "$T/bad_$name.log" || { cat "$T/bad_$name.log"; fail "$name: no '$want'"; }
  [[ ! -e $T/bad_$name/run-0 ]] || fail "$name: a trial ran"
}
bad backend "invalid choice" --hp_search_trials 2 --hp_backend hyperband
bad low_high '`low <= high` must hold' --hp_search_trials 2 \
  --hp_space '{"learning_rate": {"type": "float", "low": 1e-3, "high": 1e-5}}'
bad log_low '`low > 0` must hold for `log=True`' --hp_search_trials 2 \
  --hp_space '{"learning_rate": {"type": "float", "low": 0, "high": 1e-3, "log": true}}'
bad empty "the search space is empty" --hp_search_trials 2 --hp_space '{}'
bad not_a_field "is not a TrainingArguments field" --hp_search_trials 2 \
  --hp_space '{"dropout": {"type": "float", "low": 0, "high": 0.5}}'
bad without_trials "without --hp_search_trials" --hp_backend random
bad overwrite "does not discard it" --hp_search_trials 2 --overwrite_output_dir
bad predict "a search predicts nothing" --hp_search_trials 2 --do_train --do_eval --do_predict
mkdir -p "$T/bad_journal"
cp "$T/a/hp_search.journal" "$T/bad_journal/other.journal"
bad journal "is another study's" --hp_search_trials 2 --hp_backend random \
  --hp_journal "$T/bad_journal/other.journal"
echo "ok: bad input refused"
