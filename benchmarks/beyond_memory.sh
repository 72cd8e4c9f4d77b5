#!/usr/bin/env bash
# beyond_memory: a Llama-architecture model of 1.54 B parameters — fp32 model states of
# 16 B/param = 24.6 GB, more than a 24 GiB machine holds, and what DDP would need on each rank —
# trained on this machine at 2 ranks under ZeRO-3 with offload_param and offload_optimizer on
# NVMe (a local folder), each rank under LOOM_CPU_MEMORY_LIMIT; then saved, consolidated by
# //tools:zero_to_fp32 into sharded safetensors, evaluated by run_clm from that folder (ZeRO-3
# sharded construction streams it), and resumed for one more step. DeepSpeed's ZeRO-Infinity recipe
# (offload both to NVMe, sub_group_size 1e8, max_in_cpu 0) on loom.
#
#   ./bazelw run -c opt //benchmarks:beyond_memory [-- WORK_DIR]
#       WORK_DIR (default /tmp/loom_beyond_memory) needs about 45 GB free (at most: the swap
#       files and two checkpoints of 19 GB each); it is removed at the end (KEEP=1 keeps the
#       resumed run's checkpoint).
#       LIMIT (default 8GB): each rank's LOOM_CPU_MEMORY_LIMIT; STEPS (default 3).
#
# Prints the machine (CPU flags, cores, memory, disk), DeepSpeed's estimator for this model
# (//tools:estimate_memory), the disk's rates (//tools:aio_bench), then per phase: wall time,
# peak RSS per rank (VmHWM), bytes read and written per rank, the losses, the step time, the
# bytes per step and the disk bandwidth a step achieved against aio_bench's; and checks that no
# swap file is left behind.
set -euo pipefail
here="${BASH_SOURCE[0]}.runfiles/loom"
[[ -d $here ]] || here="${RUNFILES_DIR:-$0.runfiles}/loom"
run_clm="$here/examples/clm/run_clm"
launch="$here/tools/launch"
zero_to_fp32="$here/tools/zero_to_fp32"
estimate="$here/tools/estimate_memory"
aio_bench="$here/tools/aio_bench"
work=${1:-/tmp/loom_beyond_memory}
limit=${LIMIT:-8GB}
steps=${STEPS:-3}
fail() { echo "beyond_memory: $*" >&2; exit 1; }

mkdir -p "$work"
work=$(cd "$work" && pwd)
swap="$work/swap"
free_gb=$(df -BG --output=avail "$work" | tail -1 | tr -dc 0-9)
((free_gb >= 45)) || fail "$work has ${free_gb} GB free; the run needs about 45 GB (swap files 19 GB, checkpoints of 19 GB, consolidated weights 6 GB)"
cleanup() {
  [[ -n ${watcher:-} ]] && kill "$watcher" 2> /dev/null || true
  [[ -n ${remover:-} ]] && kill "$remover" 2> /dev/null || true
  if [[ ${KEEP:-0} == 1 ]]; then rm -rf "$swap"; else rm -rf "$work"; fi
}
trap cleanup EXIT
rm -rf "$swap" "$work/out" "$work/fp32"
mkdir -p "$swap"

echo "== machine"
echo "cpu: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs;" \
     "flags: $(grep -m1 -o -w 'avx512_bf16\|avx512f\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo);" \
     "disk: $(df -h --output=source,fstype,size,avail "$work" | tail -1 | tr -s ' ')"

# The model: Llama 2 7B's shape narrowed to 1.54 B (hidden 2048, 32 layers, GQA 32/4 heads).
overrides="hidden_size=2048,intermediate_size=5632,num_hidden_layers=32,num_attention_heads=32,num_key_value_heads=4,vocab_size=32000"
params=1540491264   # 32 x 44044288 (layers) + 2 x 65536000 (embeddings, lm_head) + 2048
largest=65536000

echo
echo "== DeepSpeed's estimator (//tools:estimate_memory), 1 node x 2 ranks"
"$estimate" --stage 3 --total_params "$params" --largest_layer_params "$largest" \
  --num_gpus_per_node 2

echo
echo "== the disk under nvme_path (//tools:aio_bench, the config's aio section and a deeper queue)"
"$aio_bench" --folder "$swap" --bytes 1GB --block_sizes 1048576 --queue_depths 8,32 \
  --thread_counts 1 | tee "$work/aio.txt"
aio_read=$(sed -n 's/.*raw O_DIRECT loop.*read \([0-9.e+-]*\) GB\/s.*/\1/p' "$work/aio.txt")
aio_write=$(sed -n 's/.*raw O_DIRECT loop.*write \([0-9.e+-]*\) GB\/s.*/\1/p' "$work/aio.txt")

# A tokenizer and text: run_clm's embedded demo (its SentencePiece model and generated corpus).
"$run_clm" --output_dir "$work/demo" --max_steps 1 > "$work/demo.log" 2>&1 ||
  { tail -20 "$work/demo.log"; fail "the demo (tokenizer) run failed"; }
data="$work/demo/synthetic_data"

cat > "$work/ds.json" << EOF
{"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
 "train_batch_size": "auto", "gradient_clipping": "auto",
 "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto",
                                           "weight_decay": "auto"}},
 "zero_optimization": {"stage": 3, "sub_group_size": 100000000,
   "offload_param": {"device": "nvme", "nvme_path": "$swap", "max_in_cpu": 0},
   "offload_optimizer": {"device": "nvme", "nvme_path": "$swap"},
   "stage3_gather_16bit_weights_on_model_save": false}}
EOF
cat > "$work/ds_eval.json" << EOF
{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3}}
EOF

# Samples every process named $1 twice a second: "SECONDS PID VmHWM_KB READ_BYTES WRITE_BYTES
# LOSS_LINES" (LOSS_LINES: the loss logs so far in $2), into $3.
watch() {
  local name=$1 log=$2 out=$3
  : > "$out"
  while true; do
    local lines
    lines=$(grep -c "^{'loss'" "$log" 2> /dev/null || true)
    for p in $(pgrep -x "$name"); do
      local hwm rb wb
      hwm=$(awk '/VmHWM/ {print $2}' "/proc/$p/status" 2> /dev/null) || continue
      rb=$(awk '/^read_bytes/ {print $2}' "/proc/$p/io" 2> /dev/null) || continue
      wb=$(awk '/^write_bytes/ {print $2}' "/proc/$p/io" 2> /dev/null) || continue
      [[ -n $hwm && -n $rb && -n $wb ]] && echo "$(date +%s.%N) $p $hwm $rb $wb ${lines:-0}" >> "$out"
    done
    sleep 0.5
  done
}

# Runs a phase under the watcher: NAME LOG PROCESS_NAME COMMAND...; prints its figures.
phase() {
  local name=$1 log=$2 proc=$3
  shift 3
  watch "$proc" "$log" "$work/$name.samples" &
  watcher=$!
  local start=$SECONDS
  "$@" > "$log" 2>&1 || { kill "$watcher"; tail -30 "$log"; fail "$name failed"; }
  kill "$watcher" 2> /dev/null || true
  wait "$watcher" 2> /dev/null || true
  watcher=""
  echo
  echo "== $name: $((SECONDS - start)) s"
  awk '{hwm[$2] = $3; rb[$2] = $4; wb[$2] = $5}
       END {r = 0; for (p in hwm) printf "  process %d: peak RSS %.2f GiB, read %.2f GB, wrote %.2f GB\n",
              r++, hwm[p] / 1048576, rb[p] / 1e9, wb[p] / 1e9}' "$work/$name.samples"
  [[ -z "$(ls -A "$swap")" ]] || fail "$name left swap files: $(ls -A "$swap")"
}

common=(--tokenizer_name "$work/demo" --block_size 32 --report_to none --disable_tqdm
        --logging_steps 1 --learning_rate 3e-5)
train=(--model_type llama --config_overrides "$overrides" --train_file "$data/train.txt"
       --max_train_samples 2 --per_device_train_batch_size 1 --do_train
       --deepspeed "$work/ds.json")

export LOOM_CPU_MEMORY_LIMIT=$limit
echo
echo "== training: $steps steps on one repeated batch, 2 ranks, LOOM_CPU_MEMORY_LIMIT=$limit per rank"
phase train "$work/train.log" run_clm \
  "$launch" --standalone --nproc_per_node 2 "$run_clm" --output_dir "$work/out" "${common[@]}" \
  "${train[@]}" --max_steps "$steps" --save_strategy steps --save_steps "$steps"
grep -h "sharded construction" "$work/train.log" | sed 's/^.*\] /  /' | head -1
grep "^{'loss'" "$work/train.log" | sed 's/^/  /'
grep -o "'train_runtime': [0-9.]*" "$work/train.log" | sed 's/^/  /'
[[ -d $work/out/checkpoint-$steps/global_step$steps ]] || fail "no checkpoint-$steps"
echo "  checkpoint: $(du -sh "$work/out/checkpoint-$steps" | cut -f1)"
# A step's I/O: from the end of step 1 (the first loss line) to the end of the last step (the
# last one, before the save), over the steps between.
awk -v steps="$steps" -v r="$aio_read" -v w="$aio_write" '
  $6 >= 1 && !($2 in t0) { t0[$2] = $1; rb0[$2] = $4; wb0[$2] = $5 }
  $6 >= steps && !($2 in t1) { t1[$2] = $1; rb1[$2] = $4; wb1[$2] = $5 }
  END { n = steps - 1; if (n < 1) exit;
        for (p in t1) {
          dt = (t1[p] - t0[p]) / n; rd = (rb1[p] - rb0[p]) / n; wr = (wb1[p] - wb0[p]) / n;
          if (dt <= 0) continue;
          printf "  a step, process %s: %.1f s, read %.2f GB, wrote %.2f GB: %.2f GB/s read, %.2f GB/s write (aio_bench raw O_DIRECT: %s / %s GB/s)\n",
                 p, dt, rd / 1e9, wr / 1e9, rd / dt / 1e9, wr / dt / 1e9, r, w } }' \
  "$work/train.samples"

echo
echo "== zero_to_fp32: checkpoint-$steps into sharded safetensors"
phase zero_to_fp32 "$work/zero_to_fp32.log" zero_to_fp32 \
  "$zero_to_fp32" "$work/out/checkpoint-$steps" "$work/fp32" --safe_serialization \
  --max_shard_size 2GB
sed 's/^/  /' "$work/zero_to_fp32.log" | tail -6
for f in config.json tokenizer.model tokenizer_config.json special_tokens_map.json; do
  [[ -f $work/out/checkpoint-$steps/$f ]] && cp "$work/out/checkpoint-$steps/$f" "$work/fp32/"
done
[[ -f $work/fp32/tokenizer.model ]] || cp "$work/demo/tokenizer.model" "$work/demo/tokenizer_config.json" "$work/fp32/"

echo
echo "== run_clm evaluation from the consolidated folder (ZeRO-3, sharded construction)"
phase eval "$work/eval.log" run_clm \
  "$launch" --standalone --nproc_per_node 2 "$run_clm" --output_dir "$work/eval" \
  --model_name_or_path "$work/fp32" "${common[@]}" --validation_file "$data/validation.txt" \
  --do_eval --max_eval_samples 4 --per_device_eval_batch_size 1 --deepspeed "$work/ds_eval.json"
grep -h "sharded construction" "$work/eval.log" | sed 's/^.*\] /  /' | head -1
echo "  eval_results.json: $(tr -d '\n' < "$work/eval/eval_results.json" | tr -s ' ')"
echo
echo "== resume from checkpoint-$steps for one more step"
# The resumed run ends with HF's save_model, which under ZeRO-3 without
# stage3_gather_16bit_weights_on_model_save writes a full checkpoint of its own: with the swap
# files, three copies of the optimizer state do not fit a 64 GB disk, so checkpoint-$steps
# (consolidated above) is removed once the resumed run has loaded it.
(
  while ! grep -q "Running training" "$work/resume.log" 2> /dev/null; do sleep 2; done
  rm -rf "$work/out/checkpoint-$steps"
) &
remover=$!
rm -rf "$work/fp32" "$work/eval"
phase resume "$work/resume.log" run_clm \
  "$launch" --standalone --nproc_per_node 2 "$run_clm" --output_dir "$work/out" "${common[@]}" \
  "${train[@]}" --max_steps $((steps + 1)) --save_strategy no \
  --resume_from_checkpoint "$work/out/checkpoint-$steps"
kill "$remover" 2> /dev/null || true
grep -h "Loading model from\|Running training" "$work/resume.log" | sed 's/^.*\] /  /' | head -2
grep "^{'loss'" "$work/resume.log" | sed 's/^/  /'
[[ -f $work/out/global_step$((steps + 1))/zero_pp_rank_0_mp_rank_00_optim_states.pt ]] ||
  fail "the resumed run saved no ZeRO checkpoint"

echo
echo "no swap files left under $swap"
