#!/usr/bin/env bash
# device_check.sh BUNDLE REPORT_DIR — the GPU-machine checks of a loom bundle (gpu/bundle.sh):
# prints one `PASS name: figures` / `FAIL name: why` line per check and writes them, with
# each check's full log (NAME.log) and output folders, into REPORT_DIR (report.txt). Runs in
# under 8 minutes on one H100/H200. Needs the machine's NVIDIA driver and a `python3` with
# torch of the bundle's version (or LOOM_TORCH_LIB; see the bundle's run.sh).
#
#   driver          nvidia-smi lists a GPU (name, driver, memory)
#   torch           run.sh finds torch's libraries, of the bundle's torch version
#   gpu_order       //tools:gpu_order maps cuda:0, and the CUDA driver agrees
#   gpu_order_env   the same under --nproc_per_node 2, CUDA_VISIBLE_DEVICES=0 / =UUID prefix /
#                   =1,0 / = (empty), CUDA_DEVICE_ORDER=PCI_BUS_ID
#   run_glue_fp32   run_glue's embedded demo on cuda:0 (finite loss, output folder, checkpoint)
#   run_glue_bf16   the same with --bf16
#   run_glue_fp16   the same with --fp16 (autocast and the GradScaler)
#   launch_nccl     //tools:launch --nproc_per_node 1 of run_glue with --ddp_backend nccl (one
#                   rank: no process group is made, so NCCL's collectives are not reached)
#   cuda_<test>     each test of //tests/gpu:cuda_checks_test on cuda:0, one process each
#                   (GradScaler and DeepSpeed loss scaling with planted infs, an NCCL group of
#                   one, ZeRO-1/2/3 and FSDP at one rank over NCCL and at two over Gloo, pinned
#                   ZeRO-Offload, NVMe offload, gradient checkpointing, checkpoints moving
#                   between CPU and GPU), with the figures the test prints
#   side_by_side    gpu/side_by_side.sh: a BERT-base fine-tune through run_glue and through
#                   the machine's own transformers Trainer, samples/s, step time, peak memory
#
# Exit status: 0 when every check passed, 1 when one failed, 2 when there is no GPU here
# (nothing else is run). gpu/gpu_order_standalone_check.sh is the Bazel-free variant of the
# gpu_order checks (the tool built with a bare compiler).
set -uo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: device_check.sh BUNDLE REPORT_DIR" >&2
  exit 2
fi
bundle=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" || exit 2
report=$(cd "$2" && pwd)
summary=$report/report.txt
: >"$summary"
failures=0
budget_s=${DEVICE_CHECK_BUDGET_S:-450} # no check starts after this
hard_s=${DEVICE_CHECK_HARD_S:-530}     # and none runs past this: the whole run stays under 9 minutes

say() {
  echo "$*" | tee -a "$summary"
}

verdict() { # verdict NAME OK(0/1) TEXT
  if [[ $2 == 0 ]]; then
    say "PASS $1: $3"
  else
    say "FAIL $1: $3 (log: $report/$1.log)"
    failures=$((failures + 1))
  fi
}

# run_logged NAME SECONDS CMD...: runs CMD with a time limit (cut to what is left before
# hard_s), output into NAME.log. A check not started says so in its log and fails.
run_logged() {
  local name=$1 limit=$2
  shift 2
  if ((SECONDS > budget_s)); then
    echo "not run: the check budget of ${budget_s}s is spent" >"$report/$name.log"
    return 124
  fi
  ((limit > hard_s - SECONDS)) && limit=$((hard_s - SECONDS))
  timeout -k 5 "$limit" "$@" >"$report/$name.log" 2>&1
}

json_value() { # json_value FILE KEY: a number from HF's flat *_results.json
  sed -n "s/^ *\"$2\": \([^,]*\),\{0,1\}$/\1/p" "$1" 2>/dev/null | head -1
}

is_finite() {
  [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]]
}

check_driver() {
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    say "device_check: no GPU here: nvidia-smi is not installed (no NVIDIA driver); nothing to check"
    return 1
  fi
  if ! nvidia-smi -L >"$report/driver.log" 2>&1 || ! grep -q '^GPU ' "$report/driver.log"; then
    say "device_check: no GPU here: nvidia-smi finds no GPU ($(head -1 "$report/driver.log")); nothing to check"
    return 1
  fi
  nvidia-smi >>"$report/driver.log" 2>&1
  local gpus
  gpus=$(nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap,pci.bus_id \
    --format=csv,noheader 2>/dev/null | tr '\n' ';')
  verdict driver 0 "$(grep -c '^GPU ' "$report/driver.log") GPU(s): ${gpus%;}"
}

check_torch() {
  local path ok=1 figures
  if path=$("$bundle/run.sh" --print-ld-library-path 2>"$report/torch.log"); then
    ok=0
    echo "LD_LIBRARY_PATH=$path" >>"$report/torch.log"
    figures="torch libraries at ${path#*:}"
  else
    figures=$(tail -1 "$report/torch.log")
  fi
  python3 -c 'import torch; print("python torch", torch.__version__, "cuda", torch.version.cuda,
    "devices", torch.cuda.device_count())' >>"$report/torch.log" 2>&1
  verdict torch "$ok" "bundle built against torch $(sed -n 's/^torch: //p' "$bundle/MANIFEST.txt"); $figures"
}

check_gpu_order() {
  run_logged gpu_order 60 "$bundle/run.sh" gpu_order
  local rc=$? ok=1
  [[ $rc == 0 ]] && grep -q 'The driver agrees with these rules' "$report/gpu_order.log" && ok=0
  # Next to nvidia-smi's own line for the GPU gpu_order names: the same UUID.
  local mapped index smi
  mapped=$(grep -m1 -- 'cuda:0 -> nvidia-smi' "$report/gpu_order.log" | sed 's/^ *//')
  index=$(sed -n 's/^cuda:0 -> nvidia-smi \([0-9]*\) .*/\1/p' <<<"$mapped")
  smi=$(nvidia-smi --query-gpu=index,name,pci.bus_id,uuid --format=csv,noheader 2>/dev/null |
    sed -n "$((${index:-0} + 1))p")
  echo "nvidia-smi: $smi" >>"$report/gpu_order.log"
  [[ -n $smi && $mapped == *"${smi##*, }"* ]] || ok=1
  verdict gpu_order "$ok" "exit $rc; $mapped; nvidia-smi says: $smi"

  local uuid agree=0 total=0 variant
  uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -1)
  : >"$report/gpu_order_env.log"
  for variant in "--nproc_per_node 2" "CUDA_VISIBLE_DEVICES=0" "CUDA_VISIBLE_DEVICES=${uuid:0:12}" \
    "CUDA_VISIBLE_DEVICES=1,0" "CUDA_VISIBLE_DEVICES=" "CUDA_DEVICE_ORDER=PCI_BUS_ID"; do
    total=$((total + 1))
    echo "--- $variant" >>"$report/gpu_order_env.log"
    local out
    if [[ $variant == --* ]]; then
      # shellcheck disable=SC2086  # the flag and its value are two words
      out=$(timeout 60 "$bundle/run.sh" gpu_order $variant 2>&1)
    else
      out=$(env "$variant" timeout 60 "$bundle/run.sh" gpu_order 2>&1)
    fi
    echo "$out" >>"$report/gpu_order_env.log"
    grep -q 'The driver agrees with these rules' <<<"$out" && agree=$((agree + 1))
  done
  verdict gpu_order_env "$([[ $agree == "$total" ]] && echo 0 || echo 1)" \
    "the driver agrees in $agree of $total environments"
}

# check_run_glue NAME DEVICE_WORDS LAUNCHER... -- RUN_GLUE_FLAGS...: the demo, checked.
check_run_glue() {
  local name=$1 expect=$2
  shift 2
  local out=$report/$name
  local cmd=()
  while [[ $1 != -- ]]; do
    cmd+=("$1")
    shift
  done
  shift
  run_logged "$name" 150 "${cmd[@]}" --output_dir "$out" --save_strategy steps --save_steps 100 "$@"
  local rc=$? problems=() f loss
  [[ $rc == 0 ]] || problems+=("exit $rc")
  grep -q "$expect" "$report/$name.log" || problems+=("the log does not say '$expect'")
  loss=$(json_value "$out/all_results.json" train_loss)
  is_finite "$loss" || problems+=("train_loss '${loss}' is not finite")
  for f in model.safetensors config.json trainer_state.json all_results.json vocab.txt \
    checkpoint-100/model.safetensors checkpoint-100/trainer_state.json \
    checkpoint-100/optimizer.pt checkpoint-100/scheduler.pt; do
    [[ -s $out/$f ]] || problems+=("no $f")
  done
  local figures
  figures="train_loss $loss, eval_accuracy $(json_value "$out/all_results.json" eval_accuracy),"
  figures+=" $(json_value "$out/all_results.json" train_samples_per_second) samples/s,"
  figures+=" train_runtime $(json_value "$out/all_results.json" train_runtime) s"
  if ((${#problems[@]})); then
    verdict "$name" 1 "$(IFS=';'; echo "${problems[*]}"); $figures"
  else
    verdict "$name" 0 "$figures"
  fi
}

# Each test of cuda_checks_test on cuda:0 in a process of its own (the two-rank test forks,
# which must come before CUDA is touched); a test's "figure" lines are its figures.
check_cuda_tests() {
  local test rc figures
  for test in Fp16GradScalerSkipsPlantedInf DeepSpeedLossScalerHysteresis \
    ProcessGroupOfOneCollectives ShardedStrategiesAtOneRank TwoGlooRanksWithDeviceTensors \
    ZeroOffloadPinsHostMemory NvmeOffload GradientCheckpointing CheckpointsMoveBetweenDevices; do
    mkdir -p "$report/cuda_tmp/$test"
    LOOM_CHECK_DEVICE=cuda OMP_NUM_THREADS=1 TEST_TMPDIR="$report/cuda_tmp/$test" \
      run_logged "cuda_$test" 150 "$bundle/run.sh" cuda_checks_test --gtest_filter="CudaChecks.$test"
    rc=$?
    figures=$(sed -n 's/^figure [a-z0-9_]*: //p' "$report/cuda_$test.log" | paste -sd '|' | sed 's/|/ | /g')
    if [[ $rc == 0 ]] && grep -q '^\[  PASSED  \] 1 test' "$report/cuda_$test.log"; then
      verdict "cuda_$test" 0 "$figures"
    else
      verdict "cuda_$test" 1 "exit $rc; $(grep -m3 -E 'Failure|Expected|Which is|error' \
        "$report/cuda_$test.log" | tr '\n' ' ' | cut -c1-400); $figures"
    fi
  done
}

# gpu/side_by_side.sh: loom's run_glue and transformers' Trainer on one BERT-base fine-tune.
check_side_by_side() {
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  # The steps' own limits (60 + 100 + 100 + 60 s) fit in the check's 330 s.
  SBS_PREPARE_TIMEOUT=60 SBS_HF_TIMEOUT=100 SBS_LOOM_TIMEOUT=100 SBS_HF_CONTROL_TIMEOUT=60 \
    run_logged side_by_side 330 "$here/side_by_side.sh" "$bundle" "$report/side_by_side"
  local rc=$?
  local line
  line=$(grep -m1 '^PASS side_by_side: ' "$report/side_by_side.log" | sed 's/^PASS side_by_side: //')
  if [[ $rc == 0 && -n $line ]]; then
    verdict side_by_side 0 "$line"
  else
    verdict side_by_side 1 "exit $rc; $(tail -2 "$report/side_by_side.log" | tr '\n' ' ')"
  fi
}

main() {
  say "device_check: bundle $bundle ($(sed -n 's/^commit: //p' "$bundle/MANIFEST.txt" 2>/dev/null)), $(date -u +%FT%TZ)"
  if ! check_driver; then
    say "FAIL driver: no GPU found; the GPU checks were not run"
    exit 2
  fi
  check_torch
  check_gpu_order
  check_cuda_tests
  local run=("$bundle/run.sh" run_glue)
  check_run_glue run_glue_fp32 "device: cuda:0" "${run[@]}" --
  check_run_glue run_glue_bf16 "device: cuda:0" "${run[@]}" -- --bf16
  check_run_glue run_glue_fp16 "device: cuda:0" "${run[@]}" -- --fp16
  # One process: the launcher makes no process group at WORLD_SIZE=1, so this proves its rank
  # setup on cuda:0 and that --ddp_backend nccl is accepted (an NCCL group of one, given to the
  # Trainer, is cuda_ProcessGroupOfOneCollectives / cuda_ShardedStrategiesAtOneRank).
  check_run_glue launch_nccl "Process rank: 0, device: cuda:0" \
    "$bundle/run.sh" launch --standalone --nproc_per_node 1 "$bundle/bin/run_glue" -- \
    --ddp_backend nccl --num_train_epochs 2
  check_side_by_side
  say "device_check: $failures check(s) failed, ${SECONDS}s"
  ((failures == 0))
}

main
