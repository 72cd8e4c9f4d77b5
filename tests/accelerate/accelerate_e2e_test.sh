#!/usr/bin/env bash
# loom's Accelerator end to end, real processes under //tools:launch over Gloo:
#   1. The tutorial example: the plain and the Accelerator versions give the same weights bit for
#      bit in one process; on 2 ranks (torchrun style, accelerate style with a YAML config, and
#      FSDP full_shard from an accelerate config) with half the batch each, the weights equal the
#      one-process run within 1e-6.
#   2. GatherForMetrics: 37 examples at 1, 2 and 4 ranks give exactly 0..36 in order (Gather
#      alone returns the even_batches duplicates); the nlp_example's gathered evaluation
#      predictions and accuracy at 2 and 4 ranks equal one process's.
#   3. Accumulate() with 4 micro-steps per window on 2 ranks: DDP reduces only on every 4th
#      micro-step (counted from DDP's own all-reduce counters), and the weights equal
#      accumulation written by hand in one process with the global batch (1e-6).
#   4. SaveState mid-epoch, then LoadState + SkipFirstBatches in a new process (1 and 2 ranks):
#      the remaining losses and the final weights equal the uninterrupted run bit for bit; Python
#      torch.load reads optimizer.bin, scheduler.bin and random_states_<i>.pkl, and accelerate's
#      own restore calls (random.setstate, np.random.set_state, torch.set_rng_state) take them.
#   5. Bad use from the command line: fp16 on a CPU-only build, a DeepSpeed config with its own
#      optimizer section.
#   (2 also runs the nlp_example under an accelerate DeepSpeed ZeRO-2 config: equal to DDP.)
#   usage: accelerate_e2e_test.sh PLAIN ACCELERATED NLP_EXAMPLE WORKER LAUNCH RUN_GLUE
#          DEMO_MODEL_SH COMPARE_PY
set -euo pipefail
plain=$(realpath "$1") accel=$(realpath "$2") nlp=$(realpath "$3") worker=$(realpath "$4")
launch=$(realpath "$5") run_glue=$(realpath "$6") demo_model=$(realpath "$7")
compare=$(realpath "$8")
T="$TEST_TMPDIR"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
"$demo_model" "$run_glue" "$T/m"
DATA=(--model_dir "$T/m" --data_dir "$T/m/synthetic_data")
ranks() {  # N LOG PROGRAM [args...]
  local n=$1 log=$2; shift 2
  timeout 300 "$launch" --standalone --nproc_per_node "$n" "$@" > "$log" 2>&1 ||
    { cat "$log"; fail "$n ranks: $*"; }
}
one() {  # LOG PROGRAM [args...]
  local log=$1; shift
  timeout 300 "$@" > "$log" 2>&1 || { cat "$log"; fail "$*"; }
}

# 1. The tutorial.
TUT=("${DATA[@]}" --max_train_samples 128)
# One thread for LibTorch and for its BLAS in both (the user's variables, which the Accelerator
# keeps): otherwise the plain program runs on the libraries' defaults and the Accelerator on
# loom's thread plan, and a BLAS's rounding can depend on how many threads split a matmul
# (LibTorch 2.11's MKL does).
ONE_THREAD=(env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1)
one "$T/plain.log" "${ONE_THREAD[@]}" "$plain" "${TUT[@]}" --output_dir "$T/plain"
one "$T/accel1.log" "${ONE_THREAD[@]}" "$accel" "${TUT[@]}" --output_dir "$T/accel1"
cmp -s "$T/plain/model.safetensors" "$T/accel1/model.safetensors" ||
  fail "tutorial: the Accelerator version differs from the plain one in one process"
ranks 2 "$T/accel2.log" "$accel" "${TUT[@]}" --batch_size 4 --output_dir "$T/accel2"
grep -q "data parallelism: DDP" "$T/accel2.log" || fail "tutorial: 2 ranks without DDP"
"$PY" "$compare" "$T/plain/model.safetensors" "$T/accel2/model.safetensors" 1e-6 ||
  fail "tutorial: 2 ranks differ from one process"
cat > "$T/accelerate.yaml" <<'YAML'
compute_environment: LOCAL_MACHINE
distributed_type: MULTI_CPU
mixed_precision: 'no'
num_machines: 1
num_processes: 2
use_cpu: true
YAML
timeout 300 "$launch" --config_file "$T/accelerate.yaml" "$accel" "${TUT[@]}" --batch_size 4 \
  --output_dir "$T/accel_yaml" > "$T/accel_yaml.log" 2>&1 ||
  { cat "$T/accel_yaml.log"; fail "tutorial under an accelerate config"; }
"$PY" "$compare" "$T/plain/model.safetensors" "$T/accel_yaml/model.safetensors" 1e-6 ||
  fail "tutorial: the accelerate-config run differs from one process"
# FSDP from an accelerate config's FSDP section: the same strategy the Trainer takes.
cat > "$T/fsdp.yaml" <<'YAML'
distributed_type: FSDP
mixed_precision: 'no'
num_machines: 1
num_processes: 2
use_cpu: true
fsdp_config:
  fsdp_sharding_strategy: FULL_SHARD
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_transformer_layer_cls_to_wrap: BertLayer
YAML
timeout 300 "$launch" --config_file "$T/fsdp.yaml" "$accel" "${TUT[@]}" --batch_size 4 \
  --output_dir "$T/accel_fsdp" > "$T/accel_fsdp.log" 2>&1 ||
  { cat "$T/accel_fsdp.log"; fail "tutorial under an FSDP accelerate config"; }
grep -q "data parallelism: FSDP full_shard" "$T/accel_fsdp.log" || fail "FSDP config: not FSDP"
"$PY" "$compare" "$T/plain/model.safetensors" "$T/accel_fsdp/model.safetensors" 1e-6 ||
  fail "tutorial: FSDP full_shard on 2 ranks differs from one process"
echo "ok: tutorial: plain == Accelerator (bitwise, 1 process); 2 ranks (DDP, an accelerate config, FSDP full_shard) == 1 process (1e-6)"

# 2. GatherForMetrics.
want="metrics: $(seq -s ' ' 0 36)"
for n in 1 2 4; do
  ranks "$n" "$T/gather$n.log" "$worker" gather "$T/gather$n.txt" 37
  [[ "$(head -1 "$T/gather$n.txt")" == "$want" ]] ||
    fail "GatherForMetrics at $n ranks: $(head -1 "$T/gather$n.txt")"
done
# Gather keeps the duplicates: 5 global batches of 8 in rounds of n (the last round padded).
[[ "$(tail -1 "$T/gather1.txt")" == "gather: 37" ]] || fail "Gather, 1 process: $(tail -1 "$T/gather1.txt")"
[[ "$(tail -1 "$T/gather2.txt")" == "gather: 48" ]] || fail "Gather, 2 ranks: $(tail -1 "$T/gather2.txt")"
[[ "$(tail -1 "$T/gather4.txt")" == "gather: 64" ]] || fail "Gather, 4 ranks: $(tail -1 "$T/gather4.txt")"
NLP=("${DATA[@]}" --max_train_samples 96 --max_eval_samples 37 --gradient_accumulation_steps 2
     --num_epochs 2 --with_tracking)
one "$T/nlp1.log" "$nlp" "${NLP[@]}" --output_dir "$T/nlp1"
for n in 2 4; do
  ranks "$n" "$T/nlp$n.log" "$nlp" "${NLP[@]}" --batch_size $((8 / n)) --output_dir "$T/nlp$n"
  [[ $(wc -l < "$T/nlp$n/predictions_epoch_1.txt") -eq 37 ]] || fail "nlp_example: not 37 predictions"
  cmp -s "$T/nlp1/predictions_epoch_1.txt" "$T/nlp$n/predictions_epoch_1.txt" ||
    fail "nlp_example: $n ranks' gathered predictions differ from one process's"
  [[ "$(grep -o "epoch 1: .*" "$T/nlp1.log")" == "$(grep -o "epoch 1: .*" "$T/nlp$n.log" | head -1)" ]] ||
    fail "nlp_example: $n ranks' accuracy differs"
done
echo "ok: GatherForMetrics: 37 in order at 1/2/4 ranks; nlp_example predictions and accuracy equal"
# ZeRO-2 from an accelerate config's DeepSpeed section (the plugin form: "auto" batch sizes from
# the prepared loader) equals DDP on the same 2 ranks (the example clips at 1.0 in both).
printf 'distributed_type: DEEPSPEED\nnum_processes: 2\nuse_cpu: true\ndeepspeed_config:\n  zero_stage: 2\n' \
  > "$T/zero2.yaml"
timeout 300 "$launch" --config_file "$T/zero2.yaml" "$nlp" "${NLP[@]}" --batch_size 4 \
  --output_dir "$T/nlp_zero2" > "$T/nlp_zero2.log" 2>&1 ||
  { cat "$T/nlp_zero2.log"; fail "nlp_example under a DeepSpeed ZeRO-2 accelerate config"; }
grep -q "data parallelism: ZeRO-2" "$T/nlp_zero2.log" || fail "DeepSpeed config: not ZeRO-2"
"$PY" "$compare" "$T/nlp2/model.safetensors" "$T/nlp_zero2/model.safetensors" 1e-6 ||
  fail "nlp_example: ZeRO-2 differs from DDP"
echo "ok: an accelerate DeepSpeed (ZeRO-2) config trains the nlp_example as DDP does (1e-6)"

# 3. Accumulate.
ranks 2 "$T/acc.log" "$worker" accumulate "$T/acc" 4 4
one "$T/byhand.log" "$worker" byhand "$T/byhand" 4 8
"$PY" - "$T/acc/comm.txt" <<'PYEOF'
import sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1])]
assert len(rows) == 16, rows
windows = 0
for step, sync, syncs, allreduces in rows:
    expect_sync = step % 4 == 0
    assert sync == expect_sync, f"micro-step {step}: sync {sync}"
    windows += expect_sync
    assert syncs == windows, f"micro-step {step}: DDP reduced {syncs} windows, expected {windows}"
buckets = rows[3][3]
assert buckets >= 1 and all(r[3] == buckets * r[2] for r in rows), rows
print(f"DDP reduced after micro-steps {[r[0] for r in rows if r[1]]} only ({buckets} bucket(s))")
PYEOF
"$PY" "$compare" "$T/byhand/model.safetensors" "$T/acc/model.safetensors" 1e-6 ||
  fail "Accumulate on 2 ranks differs from accumulation by hand"
echo "ok: Accumulate: no communication on inner micro-steps; equals accumulation by hand"

# 4. SaveState / LoadState mid-epoch.
for n in 1 2; do
  bs=$((8 / n))
  ranks "$n" "$T/ra$n.log" "$nlp" "${NLP[@]}" --batch_size $bs --output_dir "$T/ra$n"
  ranks "$n" "$T/rb$n.log" "$nlp" "${NLP[@]}" --batch_size $bs --output_dir "$T/rb$n" \
    --checkpointing_steps 6 --stop_after_steps 6
  [[ -e "$T/rb$n/step_6/random_states_$((n - 1)).pkl" && ! -e "$T/rb$n/model.safetensors" ]] ||
    fail "resume: the interrupted run's state folder: $(ls "$T/rb$n" "$T/rb$n/step_6")"
  ranks "$n" "$T/rc$n.log" "$nlp" "${NLP[@]}" --batch_size $bs --output_dir "$T/rc$n" \
    --resume_from_checkpoint "$T/rb$n/step_6"
  cmp -s "$T/ra$n/model.safetensors" "$T/rc$n/model.safetensors" ||
    fail "resume at $n ranks: final weights differ from the uninterrupted run"
  "$PY" - "$T/ra$n/nlp_example/metrics.jsonl" "$T/rc$n/nlp_example/metrics.jsonl" <<'PYEOF'
import json, sys
def losses(p):
    return {e["step"]: e["loss"] for e in map(json.loads, open(p)) if "loss" in e}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
assert sorted(b) == list(range(7, 25)), sorted(b)
bad = [s for s in b if a[s] != b[s]]
assert not bad, f"losses differ at steps {bad}"
PYEOF
done
"$PY" - "$T/rb2/step_6" <<'PYEOF'
import random, sys
import numpy as np
import torch
d = sys.argv[1]
opt = torch.load(f"{d}/optimizer.bin")
assert set(opt) == {"state", "param_groups"} and len(opt["state"]) > 0, opt.keys()
sched = torch.load(f"{d}/scheduler.bin")
# 3 optimizer steps on 2 processes: accelerate steps a prepared schedule once per process.
assert sched["last_epoch"] == 6, sched
for rank in (0, 1):
    states = torch.load(f"{d}/random_states_{rank}.pkl")
    random.setstate(states["random_state"])
    np.random.set_state(states["numpy_random_seed"])
    torch.set_rng_state(states["torch_manual_seed"])
print("python: optimizer.bin, scheduler.bin, random_states_{0,1}.pkl load")
PYEOF
echo "ok: SaveState mid-epoch + LoadState + SkipFirstBatches: bitwise at 1 and 2 ranks; Python reads the files"

# 5. Bad use.
if ACCELERATE_MIXED_PRECISION=fp16 "$accel" "${TUT[@]}" --output_dir "$T/fp16" > "$T/fp16.log" 2>&1; then
  if ! grep -q libtorch_cuda <<< "$(ldd "$accel")"; then fail "fp16 on a CPU-only build was accepted"; fi
else
  grep -q "bf16" "$T/fp16.log" || fail "fp16: no clear error: $(tail -3 "$T/fp16.log")"
fi
# A DeepSpeed config with its own optimizer section is refused (the loop's optimizer is the one
# prepared).
echo '{"optimizer": {"type": "AdamW", "params": {"lr": "auto"}}, "train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}' > "$T/ds_opt.json"
printf 'distributed_type: DEEPSPEED\nnum_processes: 2\nuse_cpu: true\ndeepspeed_config:\n  deepspeed_config_file: %s\n' \
  "$T/ds_opt.json" > "$T/ds_opt.yaml"
if timeout 120 "$launch" --config_file "$T/ds_opt.yaml" "$accel" "${TUT[@]}" --output_dir "$T/ds" \
    > "$T/ds.log" 2>&1; then
  fail "a DeepSpeed config with an optimizer section was accepted by the Accelerator"
fi
grep -q "DeepSpeed config's \"optimizer\" section" "$T/ds.log" ||
  fail "DeepSpeed optimizer section: no clear error: $(grep -i error "$T/ds.log" | head -3)"
[[ ! -e "$T/ds/model.safetensors" ]] || fail "DeepSpeed optimizer section: trained anyway"
echo "ok: bad use refused"
echo PASS
