#!/usr/bin/env bash
# ZeRO checkpoints through run_glue --deepspeed under //tools:launch:
#   1. a 2-rank ZeRO-2 and a ZeRO-1 run save DeepSpeed's layout in checkpoint-N/; Python's
#      torch.load reads every file without DeepSpeed and an independent consolidation
#      (check_zero_checkpoint.py, as DeepSpeed 0.13.5's zero_to_fp32.py) equals model.safetensors
#      bitwise; //tools:zero_to_fp32 on it gives the same tensors;
#   2. resuming checkpoint-2 on 2 ranks ends bitwise equal to the uninterrupted run, with the
#      same log; on 1 and on 4 ranks (the same global batch) within 1e-6, the same logged loss;
#   bf16 ZeRO-2 writes bf16_-prefixed optimizer files and bf16 weights (the fp32 masters
#   rounded), and resumes bitwise;
#   3. kill -9 of rank 1 while a checkpoint is being saved: launch exits non-zero naming rank 1,
#      no half-written checkpoint-N is visible, and rerunning with --resume_from_checkpoint
#      resumes from the last complete one and ends bitwise equal to an uninterrupted run.
#   usage: run_glue_zero_checkpoint_test.sh RUN_GLUE LAUNCH ZERO_TO_FP32 CHECK_PY COMPARE_PY
#          DEMO_MODEL_SH SAME_LOGS_PY
set -euo pipefail
bin=$1 launch=$2 z2f=$3 check=$4 compare=$5 demo_model=$6 same_logs_py=$7
T="$TEST_TMPDIR"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }

"$demo_model" "$bin" "$T/m"
COMMON=(--model_name_or_path "$T/m" --task_name sst2 --data_dir "$T/m/synthetic_data" --do_train
        --max_seq_length 32 --logging_steps 1 --report_to none --disable_tqdm --seed 7
        --max_grad_norm 0.05 --learning_rate 1e-3 --weight_decay 0.01)
ds() { echo "{\"gradient_clipping\": \"auto\", \"zero_optimization\": {\"stage\": $1}}"; }
same_loss() { "$PY" "$same_logs_py" "$1" "$2" "ZeRO log" "$3"; }  # A B EXACT(1|0)
train() {  # OUT WORLD STAGE [more flags...]
  local out=$1 world=$2 stage=$3; shift 3
  timeout 240 "$launch" --standalone --nproc_per_node "$world" "$bin" --output_dir "$out" \
    --per_device_train_batch_size $((8 / world)) "${COMMON[@]}" --deepspeed "$(ds "$stage")" \
    "$@" > "$out.log" 2>&1 || { cat "$out.log"; fail "$out: $world ranks, stage $stage"; }
}

# 1. The files.
for stage in 2 1; do
  train "$T/full$stage" 2 "$stage" --max_steps 6 --save_steps 2
  for step in 2 4 6; do
    "$PY" "$check" "$T/full$stage/checkpoint-$step" "$stage" 2 || fail "ZeRO-$stage checkpoint-$step"
  done
  [[ ! -e $T/full$stage/checkpoint-2/optimizer.pt ]] || fail "optimizer.pt written under ZeRO"
done
"$z2f" "$T/full2/checkpoint-4" "$T/fp32.safetensors" > "$T/z2f.log" 2>&1 ||
  { cat "$T/z2f.log"; fail "zero_to_fp32 on loom's checkpoint"; }
"$PY" "$compare" "$T/full2/checkpoint-4/model.safetensors" "$T/fp32.safetensors" 0 ||
  fail "zero_to_fp32's output differs from the checkpoint's weights"

# 2. Resume: the same world size bitwise; another one within 1e-6.
for stage in 2 1; do
  mkdir -p "$T/same$stage" && cp -r "$T/full$stage/checkpoint-2" "$T/same$stage/"
  train "$T/same$stage" 2 "$stage" --max_steps 6 --save_steps 2 \
    --resume_from_checkpoint "$T/same$stage/checkpoint-2"
  "$PY" "$compare" "$T/full$stage/model.safetensors" "$T/same$stage/model.safetensors" 0 ||
    fail "ZeRO-$stage resumed on 2 ranks differs from the uninterrupted run"
  same_loss "$T/full$stage/trainer_state.json" "$T/same$stage/trainer_state.json" 1 ||
    fail "ZeRO-$stage resumed on 2 ranks: log differs"
  echo "ok: ZeRO-$stage checkpoint-2 resumed on 2 ranks == uninterrupted (bitwise)"
done
# Several ranks shuffle from torch's global generator (accelerate 0.27 leaves HF's generator-less
# RandomSampler under its BatchSamplerShard); one process does the same with
# use_seedable_sampler false, so a 1-process resume walks the 2 ranks' order.
GLOBAL_ORDER=(--accelerator_config '{"use_seedable_sampler": false}')
for world in 1 4; do
  mkdir -p "$T/w$world" && cp -r "$T/full2/checkpoint-2" "$T/w$world/"
  order=(); [[ $world == 1 ]] && order=("${GLOBAL_ORDER[@]}")
  train "$T/w$world" "$world" 2 --max_steps 6 --save_steps 2 \
    --resume_from_checkpoint "$T/w$world/checkpoint-2" "${order[@]}"
  grep -q "Resuming a ZeRO checkpoint of 2 ranks on $world" "$T/w$world.log" ||
    fail "no repartitioning note"
  "$PY" "$compare" "$T/full2/model.safetensors" "$T/w$world/model.safetensors" 1e-6 ||
    fail "2-rank checkpoint resumed on $world ranks differs from the uninterrupted run"
  same_loss "$T/full2/trainer_state.json" "$T/w$world/trainer_state.json" 0 ||
    fail "2-rank checkpoint resumed on $world ranks: loss curve differs"
  "$PY" "$check" "$T/w$world/checkpoint-6" 2 "$world" || fail "checkpoint written on $world ranks"
  echo "ok: 2-rank ZeRO-2 checkpoint resumed on $world ranks == uninterrupted (1e-6)"
done

# bf16 (DeepSpeed's bf16 section): bf16_ optimizer files, bf16 weights equal to the fp32
# masters rounded; a resume on the same world size is bitwise.
BF16=(--bf16 --deepspeed '{"bf16": {"enabled": "auto"}, "gradient_clipping": "auto", "zero_optimization": {"stage": 2}}')
timeout 240 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$T/bf16" \
  --per_device_train_batch_size 4 "${COMMON[@]}" --max_steps 6 --save_steps 2 "${BF16[@]}" \
  > "$T/bf16.log" 2>&1 || { cat "$T/bf16.log"; fail "bf16 ZeRO-2"; }
grep -q "16-bits training: True" "$T/bf16.log" || fail "bf16: no '16-bits training: True'"
"$PY" "$check" "$T/bf16/checkpoint-4" 2 2 bf16 || fail "bf16 checkpoint-4"
mkdir -p "$T/bf16r" && cp -r "$T/bf16/checkpoint-2" "$T/bf16r/"
timeout 240 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$T/bf16r" \
  --per_device_train_batch_size 4 "${COMMON[@]}" --max_steps 6 --save_steps 2 "${BF16[@]}" \
  --resume_from_checkpoint "$T/bf16r/checkpoint-2" > "$T/bf16r.log" 2>&1 ||
  { cat "$T/bf16r.log"; fail "bf16 resume"; }
cmp "$T/bf16/model.safetensors" "$T/bf16r/model.safetensors" ||
  fail "bf16 ZeRO-2 resumed on 2 ranks differs from the uninterrupted run"
same_loss "$T/bf16/trainer_state.json" "$T/bf16r/trainer_state.json" 1 || fail "bf16 resumed log"
echo "ok: bf16 ZeRO-2 checkpoint (bf16_ files) resumed on 2 ranks == uninterrupted (bitwise)"

# 3. kill -9 during a save, then resume.
train "$T/ref" 2 2 --max_steps 40 --save_steps 1 --save_total_limit 3
out="$T/killed"
"$launch" --standalone --nproc_per_node 2 --grace_period_s 3 "$bin" --output_dir "$out" \
  --per_device_train_batch_size 4 "${COMMON[@]}" --deepspeed "$(ds 2)" --max_steps 40 \
  --save_steps 1 --save_total_limit 3 > "$out.log" 2>&1 &
launcher=$!
victim=""
for _ in $(seq 1 3000); do
  if [[ -z $victim ]]; then
    for pid in $(pgrep -P "$launcher" || true); do
      if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "RANK=1"; then victim=$pid; fi
    done
  fi
  # Mid-save: a staging folder of a checkpoint after the first few exists.
  if [[ -n $victim ]] && ls -A "$out" 2>/dev/null | grep -Eq '^\.loom-staging-checkpoint-([3-9]|[1-3][0-9])\.'; then
    kill -9 "$victim"
    break
  fi
  sleep 0.005
done
code=0
wait "$launcher" || code=$?
[[ $code -ne 0 ]] || fail "the run was not killed mid-save (it finished: make the save window larger)"
grep -q "rank 1" "$out.log" || { tail -20 "$out.log"; fail "launch did not name rank 1"; }
ls -A "$out" | grep -E '^checkpoint-' > "$T/visible.txt" || true
echo "killed mid-save; launch exited $code; visible: $(tr '\n' ' ' < "$T/visible.txt")"
while read -r c; do
  "$PY" "$check" "$out/$c" 2 2 > /dev/null || fail "$c is visible but not a complete checkpoint"
done < "$T/visible.txt"
timeout 240 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$out" \
  --per_device_train_batch_size 4 "${COMMON[@]}" --deepspeed "$(ds 2)" --max_steps 40 \
  --save_steps 1 --save_total_limit 3 > "$out.rerun.log" 2>&1 ||
  { cat "$out.rerun.log"; fail "rerun after the kill"; }
grep -q "Checkpoint detected, resuming training" "$out.rerun.log" || fail "the rerun did not resume"
"$PY" "$compare" "$T/ref/model.safetensors" "$out/model.safetensors" 0 ||
  fail "the resumed run differs from the uninterrupted one"
same_loss "$T/ref/trainer_state.json" "$out/trainer_state.json" 1 || fail "resumed log differs"
echo "run_glue_zero_checkpoint_test: PASS"
