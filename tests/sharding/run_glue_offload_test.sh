#!/usr/bin/env bash
# ZeRO-Offload through run_glue under //tools:launch at 2 ranks (issue 16):
#   1. offload_optimizer cpu at stages 2 and 3 and offload_param cpu at stage 3 (alone and with
#      the optimizer) each end with weights within 1e-6 of the same stage without offload (clipping on, AdamW from the
#      config: offloaded runs step with loom's fused CPU Adam, the others with torch's AdamW).
#   2. A client optimizer: --optim adamw_torch_fused is loom's CPU Adam and is taken; the default
#      adamw_torch is refused before any work with DeepSpeed's zero_force_ds_cpu_optimizer
#      message, and taken with "zero_force_ds_cpu_optimizer": false.
#   3. Resume from an offloaded checkpoint (stage 2 cpu, stage 3 cpu+cpu) equals the
#      uninterrupted run bit for bit, losses included.
#   (NVMe offload is refused by the plan until ZeRO-Infinity's swapper lands.)
#   usage: run_glue_offload_test.sh RUN_GLUE LAUNCH COMPARE_PY DEMO_MODEL_SH SAME_LOGS_PY
set -euo pipefail
bin=$1 launch=$2 compare=$3 demo_model=$4 same_logs_py=$5
T="$TEST_TMPDIR"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }

"$demo_model" "$bin" "$T/m"
COMMON=(--model_name_or_path "$T/m" --task_name sst2 --data_dir "$T/m/synthetic_data" --do_train
        --max_seq_length 32 --logging_steps 1 --report_to none --disable_tqdm --seed 7
        --max_grad_norm 0.05 --learning_rate 1e-3 --weight_decay 0.01
        --per_device_train_batch_size 4 --gradient_accumulation_steps 2)
ds() {  # STAGE ZERO_EXTRA [TOP_EXTRA] [OPTIMIZER(1|0)]
  local opt='"optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},'
  [[ "${4:-1}" == 1 ]] || opt=''
  echo "{$opt ${3:-} \"train_micro_batch_size_per_gpu\": \"auto\", \"gradient_accumulation_steps\": \"auto\", \"gradient_clipping\": \"auto\", \"zero_optimization\": {\"stage\": $1, \"stage3_param_persistence_threshold\": 0, \"stage3_gather_16bit_weights_on_model_save\": true $2}}"
}
CPU_OPT=', "offload_optimizer": {"device": "cpu", "pin_memory": true}'
CPU_PARAM=', "offload_param": {"device": "cpu", "pin_memory": true}'
launched() {  # OUT [flags...]
  local out=$1; shift
  timeout 240 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$out" \
    "${COMMON[@]}" "$@" > "$out.log" 2>&1 || { cat "$out.log"; fail "$out: $*"; }
}
same() {  # REF OUT TOL WHAT
  "$PY" "$compare" "$1/model.safetensors" "$2/model.safetensors" "$3" || fail "$4"
}

# 1. Equal to the same stage without offload.
launched "$T/ref2" --max_steps 4 --save_strategy no --deepspeed "$(ds 2 '')"
launched "$T/ref3" --max_steps 4 --save_strategy no --deepspeed "$(ds 3 '')"
check() {  # NAME REF STRATEGY CONFIG [flags...]
  local name=$1 ref=$2 strategy=$3 config=$4; shift 4
  set -- "$name" "$ref" "$strategy" "$config" "$@"
  launched "$T/$name" --max_steps 4 --save_strategy no --deepspeed "$config" "${@:5}"
  grep -q "data parallelism: $3" "$T/$1.log" ||
    fail "$1: strategy $(grep 'data parallelism' "$T/$1.log")"
  same "$T/$2" "$T/$1" 1e-6 "$1: weights differ from $2 (no offload)"
  echo "ok: $1 ($3) == $2 within 1e-6"
}
check off2 ref2 "ZeRO-2 (offload: optimizer cpu)" "$(ds 2 "$CPU_OPT")"
check off3 ref3 "ZeRO-3 (offload: optimizer cpu)" "$(ds 3 "$CPU_OPT")"
check off3p ref3 "ZeRO-3 (offload: params cpu)" "$(ds 3 "$CPU_PARAM")"
check off3pp ref3 "ZeRO-3 (offload: optimizer cpu, params cpu)" "$(ds 3 "$CPU_OPT$CPU_PARAM")"

# 2. Client optimizers.
# The reference: the same stage with torch's AdamW from --optim (HF's two weight-decay groups).
launched "$T/ref2c" --max_steps 4 --save_strategy no --deepspeed "$(ds 2 '' '' 0)"
check fused2 ref2c "ZeRO-2 (offload: optimizer cpu)" "$(ds 2 "$CPU_OPT" '' 0)" --optim adamw_torch_fused
set +e
timeout 120 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$T/refused" \
  "${COMMON[@]}" --max_steps 4 --deepspeed "$(ds 2 "$CPU_OPT" '' 0)" > "$T/refused.log" 2>&1
rc=$?
set -e
[[ $rc -ne 0 ]] || fail "a client torch AdamW with the optimizer offloaded was accepted"
grep -q 'zero_force_ds_cpu_optimizer": false' "$T/refused.log" || { cat "$T/refused.log"; fail "no DeepSpeed message"; }
grep -q "Training\|'loss'" "$T/refused.log" && fail "training started before the refusal"
[[ ! -e "$T/refused/model.safetensors" ]] || fail "the refused run wrote weights"
launched "$T/forced" --max_steps 4 --save_strategy no \
  --deepspeed "$(ds 2 "$CPU_OPT" '"zero_force_ds_cpu_optimizer": false,' 0)"
same "$T/ref2c" "$T/forced" 1e-6 "forced: weights differ from ref2c"
echo "ok: client optimizers (adamw_torch_fused taken, adamw_torch refused, then forced)"

# 3. Resume bit for bit.
resume() {  # NAME CONFIG
  launched "$T/$1" --max_steps 6 --save_steps 2 --deepspeed "$2"
  mkdir -p "$T/$1r" && cp -r "$T/$1/checkpoint-2" "$T/$1r/"
  launched "$T/$1r" --max_steps 6 --save_steps 2 --deepspeed "$2" \
    --resume_from_checkpoint "$T/$1r/checkpoint-2"
  same "$T/$1" "$T/$1r" 0 "$1: resumed weights differ"
  "$PY" "$same_logs_py" "$T/$1/trainer_state.json" "$T/$1r/trainer_state.json" "$1 resume" 1 ||
    exit 1
  echo "ok: $1 resumed from checkpoint-2 == uninterrupted, bit for bit"
}
resume res2 "$(ds 2 "$CPU_OPT")"
resume res3 "$(ds 3 "$CPU_OPT$CPU_PARAM")"
