#!/usr/bin/env bash
# run_glue --deepspeed under //tools:launch: ZeRO stages 0, 1 and 2 at 2 and 4 ranks,
# with gradient accumulation 1 and 2 and clipping on (--max_grad_norm 0.05 clips every step),
# end with weights within WEIGHT_TOL of one process training the same global batch, and log the
# same loss and lr (exactly) and grad_norm (within 1e-6 of the largest) at every step. The model is
# the demo's BERT with dropout off (its random draws differ between one and several processes).
# Also: the config's optimizer and scheduler sections (DeepSpeed's AdamW and WarmupDecayLR)
# train the same under ZeRO-2 at 2 ranks as at stage 0 in one process, and the config is echoed;
# bf16 (DeepSpeed's bf16 section) under ZeRO-1/2 trains the demo (eval_accuracy >= 0.85).
#   usage: run_glue_deepspeed_test.sh RUN_GLUE LAUNCH COMPARE_SAFETENSORS_PY DEMO_MODEL_SH
set -euo pipefail
bin=$1 launch=$2 compare=$3 demo_model=$4
T="$TEST_TMPDIR"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }

"$demo_model" "$bin" "$T/m"
# The weights' tolerance. A 4 x 2 batch mean rounds differently from an 8 batch mean, and so
# does a matmul split over another number of threads (LibTorch 2.11's MKL); Adam's update
# m / (sqrt(v) + eps) turns those last-bit gradient differences into up to ~1e-6 on weights
# whose gradients are near eps (measured: 1.05e-6 with seed 7 on 1.13, 1.16e-6 with seed 8 on
# 2.11, both 4 ranks, ZeRO-2, GA 1). 1e-5 is 1% of one step's lr: a gradient reaching the wrong
# parameter or shard moves weights by ~lr, 100 times more. grad_norm, which Adam does not
# normalize (a missing average would show 2x or 4x), stays within 1e-6 (see same_logs).
WEIGHT_TOL=1e-5
# One intra-op thread in every process (the user's OMP_NUM_THREADS, which run_glue and the
# launcher keep): one process would otherwise split its matmuls over more threads than a rank,
# and LibTorch 2.11's MKL rounds a matmul differently per split; the data-parallel split is
# then the only difference between the runs.
export OMP_NUM_THREADS=1
COMMON=(--model_name_or_path "$T/m" --task_name sst2 --data_dir "$T/m/synthetic_data" --do_train
        --max_seq_length 32 --max_steps 4 --logging_steps 1 --save_strategy no --report_to none
        --disable_tqdm --seed 8 --max_grad_norm 0.05 --learning_rate 1e-3)
GLOBAL_BATCH=8
# Several ranks shuffle from torch's global generator (accelerate 0.27 leaves HF's generator-less
# RandomSampler under its BatchSamplerShard); one process does the same with
# use_seedable_sampler false, so the two runs see the same global batches.
GLOBAL_ORDER=(--accelerator_config '{"use_seedable_sampler": false}')

# Every step's loss, learning_rate and grad_norm from trainer_state.json's log_history.
log_lines() {
  "$PY" - "$1" <<'PYEOF'
import json, sys
for e in json.load(open(sys.argv[1]))["log_history"]:
    if "loss" in e:
        print(e["step"], e["loss"], e["learning_rate"], e["grad_norm"])
PYEOF
}
same_logs() {  # REF OTHER WHAT
  "$PY" - "$1" "$2" "$3" <<'PYEOF'
import json, sys
def steps(p):
    return [e for e in json.load(open(p))["log_history"] if "loss" in e]
a, b, what = steps(sys.argv[1]), steps(sys.argv[2]), sys.argv[3]
if len(a) != len(b) or not a:
    sys.exit(f"{what}: {len(a)} vs {len(b)} logged steps")
# Rounding errors scale with the gradients' magnitude, not with a norm that cancellation
# between examples made small (a step of 0.028 among steps of 0.7 differs by 3e-6 of itself on
# 2.11): grad_norm within 1e-6 of the run's largest.
scale = max(abs(x["grad_norm"]) for x in a)
for x, y in zip(a, b):
    if x["loss"] != y["loss"] or x["learning_rate"] != y["learning_rate"]:
        sys.exit(f"{what}: step {x['step']}: {x} vs {y}")
    if abs(x["grad_norm"] - y["grad_norm"]) > 1e-6 * scale:
        sys.exit(f"{what}: step {x['step']}: grad_norm {x['grad_norm']} vs {y['grad_norm']}")
PYEOF
}

for ga in 1 2; do
  timeout 120 "$bin" --output_dir "$T/ref$ga" --per_device_train_batch_size $GLOBAL_BATCH "${GLOBAL_ORDER[@]}" \
    --gradient_accumulation_steps $ga "${COMMON[@]}" > "$T/ref$ga.log" 2>&1 ||
    { cat "$T/ref$ga.log"; fail "single process, GA $ga"; }
done
echo "single process (GA 2):"; log_lines "$T/ref2/trainer_state.json"

run() {  # WORLD STAGE GA
  local world=$1 stage=$2 ga=$3 out="$T/z$1_$2_$3"
  local config="{\"train_micro_batch_size_per_gpu\": \"auto\", \"gradient_accumulation_steps\": \"auto\", \"gradient_clipping\": \"auto\", \"zero_optimization\": {\"stage\": $stage, \"reduce_bucket_size\": \"auto\"}}"
  timeout 240 "$launch" --standalone --nproc_per_node "$world" "$bin" --output_dir "$out" \
    --per_device_train_batch_size $((GLOBAL_BATCH / world)) --gradient_accumulation_steps "$ga" \
    "${COMMON[@]}" --deepspeed "$config" > "$out.log" 2>&1 ||
    { cat "$out.log"; fail "$world ranks, stage $stage, GA $ga"; }
  grep -q "data parallelism: $([[ $stage == 0 ]] && echo DDP || echo "ZeRO-$stage")" "$out.log" ||
    fail "$world ranks, stage $stage: wrong strategy: $(grep 'data parallelism' "$out.log")"
  "$PY" "$compare" "$T/ref$ga/model.safetensors" "$out/model.safetensors" $WEIGHT_TOL ||
    fail "$world ranks, stage $stage, GA $ga: weights differ from one process"
  same_logs "$T/ref$ga/trainer_state.json" "$out/trainer_state.json" \
    "$world ranks, stage $stage, GA $ga" || exit 1
  echo "ok: $world ranks, ZeRO stage $stage, GA $ga == one process"
}
for stage in 0 1 2; do
  for ga in 1 2; do run 2 $stage $ga; done
  run 4 $stage 2
done
run 4 2 1
grep -q "DeepSpeedEngine configuration:" "$T/z2_2_1.log" || fail "config not echoed"
grep -q '"reduce_bucket_size": 4096' "$T/z2_2_1.log" || fail "reduce_bucket_size auto not hidden^2 (64^2)"

# The config's own optimizer and scheduler sections.
DS_OPT='"optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}}, "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": "auto", "warmup_num_steps": "auto", "total_num_steps": "auto", "warmup_type": "linear"}}, "steps_per_print": 2'
timeout 120 "$bin" --output_dir "$T/opt1" --per_device_train_batch_size $GLOBAL_BATCH "${COMMON[@]}" "${GLOBAL_ORDER[@]}" \
  --weight_decay 0.01 --warmup_steps 2 --deepspeed "{$DS_OPT}" > "$T/opt1.log" 2>&1 || { cat "$T/opt1.log"; fail "DS sections, 1 process"; }
timeout 240 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$T/opt2" \
  --per_device_train_batch_size $((GLOBAL_BATCH / 2)) "${COMMON[@]}" --weight_decay 0.01 --warmup_steps 2 \
  --deepspeed "{$DS_OPT, \"zero_optimization\": {\"stage\": 2}}" > "$T/opt2.log" 2>&1 ||
  { cat "$T/opt2.log"; fail "DS sections, ZeRO-2 at 2 ranks"; }
"$PY" "$compare" "$T/opt1/model.safetensors" "$T/opt2/model.safetensors" $WEIGHT_TOL ||
  fail "DS sections: ZeRO-2 weights differ from one process"
same_logs "$T/opt1/trainer_state.json" "$T/opt2/trainer_state.json" "DS sections" || exit 1
# DeepSpeed's schedule: the first step runs at the optimizer's lr; then linear warmup over 2
# steps from 0 and a linear decay to 0 at step 4: logged lrs 0, 5e-4, 1e-3, 5e-4.
lrs=$(log_lines "$T/opt2/trainer_state.json" | awk '{printf "%s ", $3}')
[[ $lrs == "0.0 0.0005 0.001 0.0005 " ]] || fail "DS WarmupDecayLR lrs: $lrs"
grep -q "step=2, skipped=0, lr=\[0.0005\], mom=\[(0.9, 0.999)\]" "$T/opt2.log" ||
  fail "no DeepSpeed progress line: $(grep 'step=' "$T/opt2.log")"
# The sections differ from HF's optimizer (one group, decay on every parameter): other weights.
if "$PY" "$compare" "$T/ref1/model.safetensors" "$T/opt1/model.safetensors" $WEIGHT_TOL > /dev/null; then
  fail "the config's optimizer section changed nothing"
fi
# bf16 (DeepSpeed's bf16 section) under ZeRO-1 and ZeRO-2 at 2 ranks: the demo trains to the
# same accuracy class as fp32 (one epoch, dropout on), and the weights are saved in bf16.
for stage in 1 2; do
  out="$T/bf16_$stage"
  timeout 240 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$out" \
    --per_device_train_batch_size 4 --learning_rate 1e-3 --num_train_epochs 1 --save_strategy no --report_to none \
    --disable_tqdm --bf16 --deepspeed "{\"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": {\"stage\": $stage}}" \
    > "$out.log" 2>&1 || { cat "$out.log"; fail "bf16 ZeRO-$stage"; }
  grep -q "16-bits training: True" "$out.log" || fail "bf16 ZeRO-$stage: not 16-bit"
  acc=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['eval_accuracy'])" "$out/eval_results.json")
  "$PY" -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.85 else 1)" "$acc" ||
    fail "bf16 ZeRO-$stage: eval_accuracy $acc < 0.85"
  "$PY" - "$out/model.safetensors" <<'PYEOF' || fail "bf16 ZeRO-$stage: weights not bf16"
import json, struct, sys
data = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
dtypes = {v["dtype"] for k, v in header.items() if k != "__metadata__"}
sys.exit(0 if dtypes == {"BF16"} else f"dtypes {dtypes}")
PYEOF
  echo "ok: bf16 ZeRO-$stage at 2 ranks: eval_accuracy $acc, bf16 weights"
done
echo "run_glue_deepspeed_test: PASS"
