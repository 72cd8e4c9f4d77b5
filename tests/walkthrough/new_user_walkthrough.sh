#!/usr/bin/env bash
# A new user's first hour, as the README has it: a clean clone of this repository, then the
# README's commands in the README's order — with an opt build (`-c opt`, as the README advises
# for aio_bench) in the middle — each checked for its exit code and the first lines it prints.
# Commands that name the user's own model or data (/models/bert-base-uncased, /data/glue_data)
# are run as written: on a machine without them, each must stop at once, exit 2 and say first
# that loom does not download.
#
# Not a Bazel test (it runs Bazel); .ci/run runs it after `./bazelw test //...`:
#   tests/walkthrough/new_user_walkthrough.sh [REPO]      (default: this checkout)
set -euo pipefail
repo=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
work=$(mktemp -d /tmp/loom_walkthrough.XXXXXX)
trap 'cd /; (cd "$work/loom" 2>/dev/null && ./bazelw shutdown >/dev/null 2>&1) || true; rm -rf "$work"' EXIT
fail() { echo "walkthrough: FAIL: $*" >&2; exit 1; }
git clone -q "$repo" "$work/loom"
cd "$work/loom"
step=0

# run WANT_RC PATTERN COMMAND...: the command exits WANT_RC and PATTERN (an extended regular
# expression) matches one of the first 80 lines of its output (Bazel's own lines left out).
run() {
  local want_rc=$1 pattern=$2; shift 2
  step=$((step + 1))
  local log="$work/step$step.log" start=$SECONDS rc=0
  "$@" > "$log" 2>&1 || rc=$?
  grep -vE '^(INFO|Loading|Analyzing|WARNING: .*bazel|Target |  bazel-bin|\[[0-9,]+ / )' "$log" \
    > "$log.own" || true
  [[ $rc -eq $want_rc ]] || { tail -30 "$log"; fail "step $step ($*): exit $rc, want $want_rc"; }
  head -80 "$log.own" | grep -qE -- "$pattern" ||
    { head -80 "$log.own"; fail "step $step ($*): no '$pattern' in its first lines"; }
  echo "walkthrough: step $step ok ($((SECONDS - start)) s): $*"
}

# "Two commands": the demo.
run 0 "running loom's embedded demo" ./bazelw run //trainer:run_glue
acc=$(sed -n 's/.*"eval_accuracy": \([0-9.e-]*\).*/\1/p' /tmp/loom_run_glue/eval_results.json)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.95) }' || fail "demo eval_accuracy $acc < 0.95"

# A real model folder on a GLUE task: the user's own files.
missing_model="^run_glue: error: --model_name_or_path /models/bert-base-uncased: no such model folder \(loom does not download\)"
if [[ -d /models/bert-base-uncased && -d /data/glue_data/MRPC ]]; then missing_model="eval_accuracy"; fi
want=$([[ $missing_model == eval_accuracy ]] && echo 0 || echo 2)
run "$want" "$missing_model" ./bazelw run //trainer:run_glue -- --model_name_or_path /models/bert-base-uncased --task_name mrpc --data_dir /data/glue_data/MRPC --do_train --do_eval --do_predict --max_seq_length 128 --per_device_train_batch_size 32 --learning_rate 2e-5 --num_train_epochs 3 --output_dir /tmp/mrpc

# The opt build the README advises for aio_bench moves bazel-bin; what follows must not care.
run 0 "aio_bench --folder" ./bazelw run -c opt //tools:aio_bench -- --help

# The same on 2 processes.
run "$want" "$missing_model" ./bazelw run //tools:launch -- --standalone --nproc_per_node 2 //examples/glue:run_glue --model_name_or_path /models/bert-base-uncased --task_name mrpc --data_dir /data/glue_data/MRPC --do_train --do_eval --output_dir /tmp/mrpc_ddp

# Hyperparameter search on the demo (a study left in /tmp by an earlier walkthrough resumes and
# reports at once; the table is printed either way).
run 0 "running loom's embedded demo" ./bazelw run //trainer:run_glue -- --output_dir /tmp/loom_hp_search --hp_search_trials 12 --hp_backend tpe --hp_direction maximize --eval_strategy steps --eval_steps 16 --max_train_samples 1024 --max_eval_samples 200 --hp_space '{"learning_rate": {"type": "float", "low": 3e-4, "high": 3e-3, "log": true}, "num_train_epochs": {"type": "int", "low": 2, "high": 4}, "per_device_train_batch_size": {"type": "categorical", "choices": [16, 32]}}'
grep -q "^best run: " "$work/step$step.log" || fail "the search printed no results table"

# Your own training loop.
run 0 "data parallelism: single process" ./bazelw run //examples:accelerate_tutorial
run 0 "^epoch 0 train loss: " ./bazelw run //examples:nlp_example -- --output_dir "$work/nlp"
grep -q "^epoch 2: {'accuracy': 0\.[89]" "$work/step$step.log" || fail "nlp_example did not learn"

# Honest flags.
run 0 "^field	support	seq2seq	example	note" ./bazelw run //args:show_args -- --support_table
run 0 "^usage: run_glue" ./bazelw run //trainer:run_glue -- --help
run 0 '"learning_rate": 2e-05' ./bazelw run //args:show_args -- --output_dir "$work/o" --learning_rate 2e-5
run 2 "FP16 Mixed precision training" ./bazelw run //args:show_args -- --output_dir "$work/o" --fp16

# The smaller Trainer example.
run 0 "Num Epochs = " ./bazelw run //trainer/examples:run_synthetic -- --output_dir "$work/loom_demo" --do_train --do_eval

# Causal language modeling: the demo, then a Llama folder of the user's on 2 processes.
run 0 "running loom's embedded demo" ./bazelw run //examples:run_clm
ppl=$(sed -n 's/.*"perplexity": \([0-9.e+]*\).*/\1/p' /tmp/loom_run_clm/eval_results.json)
awk -v p="$ppl" 'BEGIN { exit !(p < 10) }' || fail "run_clm demo perplexity $ppl >= 10"
missing_llama="^run_clm: error: --model_name_or_path /models/TinyLlama-1.1B: no such model folder \(loom does not download\)"
if [[ -d /models/TinyLlama-1.1B && -d data ]]; then missing_llama="perplexity"; fi
want_llama=$([[ $missing_llama == perplexity ]] && echo 0 || echo 2)
run "$want_llama" "$missing_llama" ./bazelw run //tools:launch -- --standalone --nproc_per_node 2 //examples/clm:run_clm --model_name_or_path /models/TinyLlama-1.1B --train_file data/train.txt --validation_file data/valid.txt --block_size 512 --do_train --do_eval --output_dir /tmp/clm

echo "walkthrough: PASS ($step README commands on a clean clone)"
