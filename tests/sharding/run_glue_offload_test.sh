#!/usr/bin/env bash
# ZeRO-Offload through run_glue under //tools:launch at 2 ranks:
#   1. offload_optimizer cpu at stages 2 and 3, offload_param cpu at stage 3 (alone and with
#      the optimizer), offload_optimizer nvme, and offload_optimizer + offload_param nvme at
#      stage 3 (ZeRO-Infinity, nvme_path in a temp folder, several sub-groups, max_in_cpu 0 so
#      every wrapped unit's shard is read back for each use) each end with weights within 1e-6 of the same stage without
#      offload (clipping on, AdamW from the
#      config: offloaded runs step with loom's fused CPU Adam, the others with torch's AdamW).
#   2. A client optimizer: --optim adamw_torch_fused is loom's CPU Adam and is taken; the default
#      adamw_torch is refused before any work with DeepSpeed's zero_force_ds_cpu_optimizer
#      message, and taken with "zero_force_ds_cpu_optimizer": false.
#   3. Resume from an offloaded checkpoint (stage 2 cpu, stage 3 cpu+cpu, stage 3 nvme+nvme) equals
#      the uninterrupted run bit for bit, losses included.
#   4. NVMe: no swap file or folder is left under nvme_path after a run, nor after a run killed
#      with SIGTERM mid-training; a missing, non-folder or read-only nvme_path, a bad
#      aio.block_size and a too-small filesystem are each one clear error before training.
#   6. round_robin_gradients (with offload_optimizer cpu, where DeepSpeed meant it) at stage 2 on
#      2 ranks equals the run without it (1e-6); its checkpoint keeps DeepSpeed's round-robin
#      param_shapes order, consolidates independently to model.safetensors, resumes bitwise on
#      2 ranks, and on 4 ranks (another order) and 1 rank without it within 1e-6 of the
#      uninterrupted run.
#   usage: run_glue_offload_test.sh RUN_GLUE LAUNCH COMPARE_PY DEMO_MODEL_SH SAME_LOGS_PY
#          CHECK_ZERO_PY
set -euo pipefail
bin=$1 launch=$2 compare=$3 demo_model=$4 same_logs_py=$5 check=$6
T="$TEST_TMPDIR"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }

"$demo_model" "$bin" "$T/m"
COMMON=(--model_name_or_path "$T/m" --task_name sst2 --data_dir "$T/m/synthetic_data" --do_train
        --max_seq_length 32 --logging_steps 1 --report_to none --disable_tqdm --seed 7
        --max_grad_norm 0.05 --learning_rate 1e-3 --weight_decay 0.01
        --gradient_accumulation_steps 2)
BATCH=(--per_device_train_batch_size 4)  # 2 ranks: a global batch of 16
ds() {  # STAGE ZERO_EXTRA [TOP_EXTRA] [OPTIMIZER(1|0)]
  local opt='"optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},'
  [[ "${4:-1}" == 1 ]] || opt=''
  echo "{$opt ${3:-} \"train_micro_batch_size_per_gpu\": \"auto\", \"gradient_accumulation_steps\": \"auto\", \"gradient_clipping\": \"auto\", \"zero_optimization\": {\"stage\": $1, \"stage3_param_persistence_threshold\": 0, \"stage3_gather_16bit_weights_on_model_save\": true $2}}"
}
CPU_OPT=', "offload_optimizer": {"device": "cpu", "pin_memory": true}'
CPU_PARAM=', "offload_param": {"device": "cpu", "pin_memory": true}'
nvme_param() { echo ", \"offload_param\": {\"device\": \"nvme\", \"nvme_path\": \"$1\", \"buffer_count\": 3, \"max_in_cpu\": 0}"; }
nvme_opt() { echo ", \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"$1\", \"buffer_count\": 2}, \"sub_group_size\": 20000, \"aio\": {\"block_size\": ${2:-4096}, \"queue_depth\": 4}"; }
launched() {  # OUT [flags...]
  local out=$1; shift
  timeout 240 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$out" \
    "${COMMON[@]}" "${BATCH[@]}" "$@" > "$out.log" 2>&1 || { cat "$out.log"; fail "$out: $*"; }
}
same() {  # REF OUT TOL WHAT
  "$PY" "$compare" "$1/model.safetensors" "$2/model.safetensors" "$3" || fail "$4"
}

# 1. Equal to the same stage without offload.
mkdir -p "$T/nvme"
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
check nvme3 ref3 "ZeRO-3 (offload: optimizer nvme)" "$(ds 3 "$(nvme_opt "$T/nvme")")"
grep -q "NVMe swap: optimizer state of .* in [2-9][0-9]* sub-group(s)" "$T/nvme3.log" ||
  { grep "NVMe swap" "$T/nvme3.log"; fail "nvme3: no NVMe swap over several sub-groups"; }
[[ -z "$(ls -A "$T/nvme")" ]] || fail "swap files left under nvme_path: $(ls -AR "$T/nvme")"
echo "ok: nothing left under nvme_path"
check nvme3pp ref3 "ZeRO-3 (offload: optimizer nvme, params nvme)" \
  "$(ds 3 "$(nvme_opt "$T/nvme")$(nvme_param "$T/nvme")")"
grep -q "NVMe swap: [1-9][0-9]* parameter shard(s)" "$T/nvme3pp.log" ||
  fail "nvme3pp: no parameter swap in the log"
[[ -z "$(ls -A "$T/nvme")" ]] || fail "swap files left under nvme_path: $(ls -AR "$T/nvme")"

# 2. Client optimizers.
# The reference: the same stage with torch's AdamW from --optim (HF's two weight-decay groups).
launched "$T/ref2c" --max_steps 4 --save_strategy no --deepspeed "$(ds 2 '' '' 0)"
check fused2 ref2c "ZeRO-2 (offload: optimizer cpu)" "$(ds 2 "$CPU_OPT" '' 0)" --optim adamw_torch_fused
set +e
timeout 120 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$T/refused" \
  "${COMMON[@]}" "${BATCH[@]}" --max_steps 4 --deepspeed "$(ds 2 "$CPU_OPT" '' 0)" > "$T/refused.log" 2>&1
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
resume resn "$(ds 3 "$(nvme_opt "$T/nvme")$(nvme_param "$T/nvme")")"
[[ -z "$(ls -A "$T/nvme")" ]] || fail "swap files left under nvme_path after resuming"

# 4. SIGTERM mid-run: the swap folders are removed by the signal handler.
timeout 240 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$T/term" \
  "${COMMON[@]}" "${BATCH[@]}" --max_steps 100000 --save_strategy no \
  --deepspeed "$(ds 3 "$(nvme_opt "$T/nvme")$(nvme_param "$T/nvme")")" > "$T/term.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q "'loss'" "$T/term.log" 2>/dev/null && break
  sleep 0.2
done
grep -q "'loss'" "$T/term.log" || { kill -9 "$pid"; cat "$T/term.log"; fail "term: no step logged"; }
[[ $(ls -A "$T/nvme" | wc -l) -eq 4 ]] ||
  fail "term: expected 4 swap folders (2 ranks x optimizer, params) while training"
# SIGTERM to the launcher (as a scheduler stops a job); it forwards it to the ranks. (Not to
# timeout(1), which would signal its whole process group as well: the launcher, signalled
# twice, then kills the ranks with SIGKILL, as torchrun does.)
lpid=$(pgrep -P "$pid" | head -1)
[[ -n "$lpid" ]] || fail "term: no launcher process under timeout"
kill -TERM "$lpid"
wait "$pid" || true
# timeout(1) may return before the ranks have finished dying: give them a moment.
for _ in $(seq 1 50); do
  [[ -z "$(ls -A "$T/nvme")" ]] && ! pgrep -f "output_dir $T/term" > /dev/null && break
  sleep 0.2
done
[[ -z "$(ls -A "$T/nvme")" ]] || { tail -5 "$T/term.log"; fail "swap files left after SIGTERM: $(ls -AR "$T/nvme")"; }
echo "ok: SIGTERM mid-run leaves nothing under nvme_path"

# 5. Bad nvme input: one clear error before training.
refused() {  # WHAT CONFIG EXPECTED...
  local what=$1 config=$2; shift 2
  set +e
  timeout 120 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$T/bad" \
    "${COMMON[@]}" "${BATCH[@]}" --max_steps 4 --deepspeed "$config" > "$T/bad.log" 2>&1
  local rc=$?
  set -e
  [[ $rc -ne 0 ]] || fail "$what: accepted"
  for e in "$@"; do grep -qF -- "$e" "$T/bad.log" || { cat "$T/bad.log"; fail "$what: no '$e'"; }; done
  grep -q "'loss'" "$T/bad.log" && fail "$what: training started"
  echo "ok: $what refused: $(grep -m1 -o 'error: .*' "$T/bad.log" | cut -c1-150)"
}
refused "missing nvme_path" "$(ds 3 "$(nvme_opt "$T/nope")")" "nvme_path: $T/nope"
touch "$T/afile"
refused "nvme_path not a folder" "$(ds 3 "$(nvme_opt "$T/afile")")" "$T/afile is not a folder"
refused "read-only nvme_path" "$(ds 3 "$(nvme_opt /sys)")" "nvme_path" "/sys"
refused "aio.block_size" "$(ds 3 "$(nvme_opt "$T/nvme" 1000)")" "aio.block_size: 1000"
refused "offload_param below stage 3" "$(ds 2 "$CPU_PARAM")" "valid only with ZeRO stage 3"
# A filesystem too small for the swap files: a 64 KiB tmpfs in a private mount namespace where
# the sandbox allows one; otherwise the statvfs check is covered by
# //sharding/offload:optimizer_swapper_test (CheckSwapSpace) and this says so.
if unshare -m true 2>/dev/null; then
  set +e
  unshare -m bash -c "mkdir -p '$T/small' && mount -t tmpfs -o size=64k tmpfs '$T/small' &&
    timeout 120 '$launch' --standalone --nproc_per_node 2 '$bin' --output_dir '$T/bad' \
      ${COMMON[*]@Q} --max_steps 4 --deepspeed '$(ds 3 "$(nvme_opt "$T/small")")'" \
    > "$T/small.log" 2>&1
  rc=$?
  set -e
  [[ $rc -ne 0 ]] || fail "a 64 KiB nvme_path was accepted"
  grep -q "bytes free but the swap files need" "$T/small.log" ||
    { cat "$T/small.log"; fail "full disk: no clear error"; }
  echo "ok: a too-small filesystem is refused before training"
else
  echo "note: no mount namespace here; the free-space check is tested by optimizer_swapper_test"
fi

# 6. round_robin_gradients.
RR=', "round_robin_gradients": true'
check rr2 off2 "ZeRO-2 (offload: optimizer cpu)" "$(ds 2 "$CPU_OPT$RR")"
launched "$T/rr" --max_steps 6 --save_steps 2 --deepspeed "$(ds 2 "$CPU_OPT$RR")"
"$PY" - "$T/rr/checkpoint-2" <<'PY' || fail "round-robin order not in param_shapes"
import glob, sys, torch
states = torch.load(glob.glob(sys.argv[1] + "/global_step*/mp_rank_00_model_states.pt")[0])
names = [list(g.keys()) for g in states["param_shapes"]]
module = list(states["module"].keys())
for group in names:
    order = [n for n in module if n in group]
    want = order[0::2] + order[1::2]  # DeepSpeed's _round_robin_reorder over 2 ranks
    assert group == want, (group[:4], want[:4])
print("param_shapes in round-robin order:", [len(g) for g in names])
PY
"$PY" "$check" "$T/rr/checkpoint-2" 2 2 > /dev/null || fail "round-robin checkpoint consolidation"
mkdir -p "$T/rrr" && cp -r "$T/rr/checkpoint-2" "$T/rrr/"
launched "$T/rrr" --max_steps 6 --save_steps 2 --deepspeed "$(ds 2 "$CPU_OPT$RR")" \
  --resume_from_checkpoint "$T/rrr/checkpoint-2"
same "$T/rr" "$T/rrr" 0 "round-robin resume on 2 ranks"
# Several ranks shuffle from torch's global generator (accelerate 0.27 leaves HF's generator-less
# RandomSampler under its BatchSamplerShard); one process does the same with
# use_seedable_sampler false, so a 1-process resume walks the 2 ranks' order.
GLOBAL_ORDER=(--accelerator_config '{"use_seedable_sampler": false}')
for world in 4 1; do
  rr=$([[ $world == 4 ]] && echo "$RR" || echo "")
  order=(); [[ $world == 1 ]] && order=("${GLOBAL_ORDER[@]}")
  out="$T/rr_w$world"
  mkdir -p "$out" && cp -r "$T/rr/checkpoint-2" "$out/"
  timeout 240 "$launch" --standalone --nproc_per_node "$world" "$bin" --output_dir "$out" \
    "${COMMON[@]}" --max_steps 6 --save_steps 2 --deepspeed "$(ds 2 "$CPU_OPT$rr")" \
    --resume_from_checkpoint "$out/checkpoint-2" --per_device_train_batch_size $((8 / world)) \
    "${order[@]}" > "$out.log" 2>&1 ||
    { cat "$out.log"; fail "round-robin checkpoint resumed on $world ranks"; }
  same "$T/rr" "$out" 1e-6 "round-robin checkpoint resumed on $world ranks"
done
echo "ok: round_robin_gradients: == without, DeepSpeed's order in the files, resumed on 2 (bitwise), 4 and 1 ranks"
