#!/usr/bin/env bash
# Honest flags: every TrainingArguments field that show_args --support_table marks
# "not yet" or "unsupported" is refused by run_glue with exit 2 and a message naming the flag,
# before any work (the output directory is never created). A "not applicable" field runs with
# a warning naming it; the first line a run prints is never glog's early-logging warning.
#   usage: run_glue_refusals_test.sh RUN_GLUE SHOW_ARGS
set -euo pipefail
run_glue=$1 show_args=$2
fail() { echo "FAIL: $*"; exit 1; }
"$show_args" --support_table > "$TEST_TMPDIR/table.tsv"
[[ $(head -1 "$TEST_TMPDIR/table.tsv") == $'field\tsupport\tseq2seq\texample\tnote' ]] || fail "table header"
rows=$(($(wc -l < "$TEST_TMPDIR/table.tsv") - 1))
[[ $rows -ge 130 ]] || fail "only $rows fields in the table"
checked=0
# Tabs become \037 so that read keeps empty columns (tab is IFS whitespace, which collapses).
while IFS=$'\037' read -r field support seq2seq example note; do
  [[ $field == field ]] && continue
  case "$support" in
    "not yet") want="--$field is not implemented in loom yet" ;;
    unsupported) want="--$field is not supported by loom" ;;
    implemented|"not applicable") continue ;;
    *) fail "--$field has support '$support'" ;;
  esac
  [[ $seq2seq == 1 ]] && continue  # run_glue parses TrainingArguments, not Seq2Seq's fields
  out="$TEST_TMPDIR/out_$field"
  args=(--output_dir "$out" "--$field")
  [[ -n $example ]] && args+=("$example")
  set +e
  "$run_glue" "${args[@]}" > /dev/null 2> "$TEST_TMPDIR/err.txt"
  rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "--$field $example: exit $rc: $(head -c 400 "$TEST_TMPDIR/err.txt")"
  grep -qF -- "$want" "$TEST_TMPDIR/err.txt" || fail "--$field: no '$want': $(cat "$TEST_TMPDIR/err.txt")"
  [[ ! -e $out ]] || fail "--$field: $out was created before the refusal"
  if [[ $field == *token* && -n $example ]] && grep -qF -- "$example" "$TEST_TMPDIR/err.txt"; then
    fail "--$field: its value (a hub token) was printed"
  fi
  checked=$((checked + 1))
done < <(tr '\t' '\037' < "$TEST_TMPDIR/table.tsv")
[[ $checked -ge 10 ]] || fail "only $checked refusals checked"

# The README's honest-flag cases, each refused before any work.
expect_refusal() {
  local want=$1; shift
  set +e
  "$run_glue" --output_dir "$TEST_TMPDIR/x" "$@" > /dev/null 2> "$TEST_TMPDIR/err.txt"
  local rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "$*: exit $rc: $(cat "$TEST_TMPDIR/err.txt")"
  grep -qF -- "$want" "$TEST_TMPDIR/err.txt" || fail "$*: no '$want': $(cat "$TEST_TMPDIR/err.txt")"
  [[ ! -e $TEST_TMPDIR/x ]] || fail "$*: output written before the refusal"
}
expect_refusal "--deepspeed: DeepSpeed config: cannot open '/nonexistent.json'" --deepspeed /nonexistent.json
expect_refusal "--deepspeed: DeepSpeed config <inline JSON>: not valid JSON" --deepspeed '{bad'
expect_refusal "- ds fp16.enabled=True vs hf fp16|fp16_full_eval+fp16_backend(amp)=False" --deepspeed '{"fp16": {"enabled": true}}'
# The documents' fp16 configs on a CPU: each refusal says what to change in the config.
expect_refusal 'On a CPU, replace the config'"'"'s "fp16" section with "bf16": {"enabled": "auto"} and pass --bf16' --deepspeed '{"fp16": {"enabled": true}}'
expect_refusal 'With --deepspeed, replace the config'"'"'s "fp16" section with "bf16"' --fp16 --deepspeed '{"fp16": {"enabled": true}}'
expect_refusal 'On a CPU, replace the config'"'"'s "fp16" section' --bf16 --deepspeed '{"fp16": {"enabled": true}, "zero_optimization": {"stage": 2}}'
# --deepspeed configs loom cannot train with (sharding/zero/deepspeed_plan.h), each naming the key.
expect_refusal "bf16.enabled: bf16 weights with ZeRO stage 3" --bf16 --deepspeed '{"bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 3}}'
expect_refusal "zero_optimization.offload_optimizer.nvme_path" --deepspeed '{"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/no/such/nvme"}}}' --optim adamw_torch_fused
expect_refusal "zero_optimization.stage3_max_live_parameters" --deepspeed '{"zero_optimization": {"stage": 3, "stage3_max_live_parameters": "many"}}'
expect_refusal "zero_optimization.stage" --deepspeed '{"zero_optimization": {"stage": 5}}'
expect_refusal "bf16.enabled" --bf16 --deepspeed '{"bf16": {"enabled": "auto"}}'
expect_refusal "zero_force_ds_cpu_optimizer" --deepspeed '{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}'
expect_refusal "ds train_batch_size=10 vs hf train_batch_size (calculated)=8" --per_device_train_batch_size 8 --deepspeed '{"train_batch_size": 10}'
expect_refusal "optimizer.type \"Lamb\"" --deepspeed '{"optimizer": {"type": "Lamb"}}'
expect_refusal "--optim sgd" --optim sgd --deepspeed '{"optimizer": {"type": "AdamW"}}'
expect_refusal "\"zero_optimisation\"" --deepspeed '{"zero_optimisation": {"stage": 2}}'
expect_refusal '"zero_optimisation" is not a DeepSpeed key loom implements; did you mean "zero_optimization"?' --deepspeed '{"zero_optimisation": {"stage": 2}}'
expect_refusal '"zero_optimization.stgae" is not a DeepSpeed key loom implements; did you mean "zero_optimization.stage"?' --deepspeed '{"zero_optimization": {"stgae": 2}}'
expect_refusal "zero_optimization.round_robin_gradients" --deepspeed '{"zero_optimization": {"stage": 3, "round_robin_gradients": true}}'
expect_refusal "steps_per_print" --deepspeed '{"steps_per_print": "auto"}'
expect_refusal "zero_optimization.offload_param" --deepspeed '{"zero_optimization": {"stage": 2, "offload_param": {"device": "nvme", "nvme_path": "/tmp"}}}'
expect_refusal "ds amp.enabled=True" --deepspeed '{"zero_optimization": {"stage": 2, "overlap_comm": false}, "amp": {"enabled": true}}'
expect_refusal "communication_data_type" --deepspeed '{"zero_optimization": {"stage": 2}, "communication_data_type": "fp16"}'
expect_refusal "scheduler.type \"OneCycle\"" --deepspeed '{"scheduler": {"type": "OneCycle"}}'
expect_refusal "optimizer.params.max_grad_norm" --deepspeed '{"optimizer": {"type": "AdamW", "params": {"max_grad_norm": 1.0}}}'
expect_refusal "zero_allow_untested_optimizer" --deepspeed '{"zero_optimization": {"stage": 1}, "optimizer": {"type": "SGD", "params": {"lr": "auto"}}}'
expect_refusal "--lr_scheduler_type cosine" --lr_scheduler_type cosine --deepspeed '{"scheduler": {"type": "WarmupLR"}}'
expect_refusal "ds gradient_clipping=2.0 vs hf max_grad_norm=1.0" --deepspeed '{"gradient_clipping": 2.0}'
expect_refusal "\"bf16\": {\"enabled\": \"auto\"}" --bf16 --deepspeed '{"zero_optimization": {"stage": 2}}'
# A remote with a password in it: refused before the argument dump, which never echoes it.
expect_refusal "the remote URL carries credentials" --push_to_hub --hub_model_id https://me:s3cret@127.0.0.1/r.git
grep -q s3cret "$TEST_TMPDIR/err.txt" && fail "a --hub_model_id password was printed"
# A model folder that does not exist (or a Hub id): said first — loom does not download.
expect_refusal "--model_name_or_path /no/such/bert: no such model folder (loom does not download)" --model_name_or_path /no/such/bert --task_name sst2 --data_dir /tmp
expect_refusal "--model_name_or_path bert-base-uncased: no such model folder (it looks like a Hugging Face Hub id; loom does not download)" --model_name_or_path bert-base-uncased --task_name sst2 --data_dir /tmp
grep -q "Training/evaluation parameters" "$TEST_TMPDIR/err.txt" && fail "the missing model folder was reported after the argument dump"
expect_refusal "At most one of --fp16 and --bf16" --bf16 --fp16
expect_refusal "--fp16 with --half_precision_backend apex" --fp16 --half_precision_backend apex
# --fsdp: HF's rules (transformers 4.41 TrainingArguments.__post_init__), before any work.
expect_refusal "Using --fsdp xxx together with --deepspeed is not possible, deactivate one of those flags." --fsdp full_shard --deepspeed '{"zero_optimization": {"stage": 2}}'
expect_refusal "--hub_private_repo: --hub_model_id file:///x.git is a git URL or path" --push_to_hub --hub_model_id file:///x.git --hub_private_repo
expect_refusal "--gradient_checkpointing_kwargs: unknown key \"debug\"" --gradient_checkpointing --gradient_checkpointing_kwargs '{"debug": true}'
if [[ $("$show_args" --support_table | grep -c $'^use_cpu\timplemented') -ne 1 ]]; then fail "use_cpu row"; fi
# --fp16 on this CPU-only LibTorch: refused with the advice to use --bf16.
if ! grep -q libtorch_cuda <<< "$(ldd "$run_glue")"; then
  expect_refusal "use --bf16" --fp16
fi

# A not-applicable field trains with a warning; no run starts with glog's early warning.
"$run_glue" --output_dir "$TEST_TMPDIR/na" --tpu_num_cores 8 --num_train_epochs 1 \
  --do_train --max_train_samples 64 --disable_tqdm > /dev/null 2> "$TEST_TMPDIR/na.txt" || fail "tpu_num_cores run: $(tail -5 "$TEST_TMPDIR/na.txt")"
grep -qF -- "--tpu_num_cores is ignored by loom: TPUs do not exist for loom" "$TEST_TMPDIR/na.txt" || fail "no tpu warning"
! grep -q "Logging before InitGoogleLogging" "$TEST_TMPDIR/na.txt" "$TEST_TMPDIR/err.txt" || fail "glog's early-logging warning printed"
echo "run_glue_refusals_test: PASS ($checked fields refused)"

# show_args refuses what a run refuses before any work (runtime::PreflightRun), not only HF's
# __post_init__ checks.
show_refusal() {
  local want=$1; shift
  set +e
  "$show_args" --output_dir "$TEST_TMPDIR/s" "$@" > /dev/null 2> "$TEST_TMPDIR/err.txt"
  local rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "show_args $*: exit $rc: $(cat "$TEST_TMPDIR/err.txt")"
  grep -qF -- "$want" "$TEST_TMPDIR/err.txt" || fail "show_args $*: no '$want': $(cat "$TEST_TMPDIR/err.txt")"
}
show_refusal "--fp16: FP16 Mixed precision training" --fp16
show_refusal "zero_optimization.stage" --deepspeed '{"zero_optimization": {"stage": 5}}'
show_refusal "bf16.enabled: bf16 weights with ZeRO stage 3" --bf16 --deepspeed '{"bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 3}}'
show_refusal "Using --fsdp xxx together with --deepspeed is not possible" --fsdp full_shard --deepspeed '{"zero_optimization": {"stage": 2}}'
"$show_args" --output_dir "$TEST_TMPDIR/s" --learning_rate 2e-5 > "$TEST_TMPDIR/ok.json" ||
  fail "show_args with a plain command line"
grep -q '"learning_rate": 2e-05' "$TEST_TMPDIR/ok.json" || fail "show_args output: $(head -5 "$TEST_TMPDIR/ok.json")"
echo "ok: show_args refuses what the run refuses"

