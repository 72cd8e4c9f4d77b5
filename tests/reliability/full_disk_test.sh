#!/usr/bin/env bash
# Full disks and I/O errors during saves, end to end. A filesystem too small for the next save
# (a tmpfs with a size limit, in a private mount namespace) or writes failing with EIO
# (libeio_shim.so, LD_PRELOAD) while:
#   hf     run_glue saves checkpoint-4 (one process; ENOSPC)
#   eio    run_glue saves checkpoint-4 (one process; EIO from write/fsync)
#   zero2  / zero3: 2 ranks under //tools:launch save their ZeRO checkpoint-4 (ENOSPC)
#   nvme   2 ranks of ZeRO-3 with the optimizer offloaded to NVMe swap it out after checkpoint-2
#          (EIO from io_submit)
#   hub    --push_to_hub copies checkpoint-4's files for their push (EIO)
#   z2f    //tools:zero_to_fp32 writes sharded safetensors (OUTPUT_DIR, --max_shard_size) (ENOSPC)
# Each must end non-zero with an error naming the path and the cause, leave checkpoint-2
# byte-identical to the uninterrupted run's and the last one resume picks, leave no file or
# staging folder under a final name, and a rerun with room resumes from it and ends with the
# uninterrupted run's weights and log, bitwise.
#   usage: full_disk_test.sh RUN_GLUE LAUNCH ZERO_TO_FP32 DEMO_MODEL_SH EIO_SHIM SAME_LOGS_PY
set -euo pipefail
bin=$1 launch=$2 z2f=$3 demo_model=$4 shim=$5 same_logs=$6
case $shim in /*) ;; *) shim="$PWD/$shim" ;; esac
T="$TEST_TMPDIR"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
unshare -m true || fail "unshare -m (a private mount namespace for the small tmpfs) is refused here"

"$demo_model" "$bin" "$T/m"
COMMON=(--model_name_or_path "$T/m" --task_name sst2 --data_dir "$T/m/synthetic_data" --do_train
        --max_seq_length 32 --logging_steps 1 --report_to none --disable_tqdm --seed 7
        --per_device_train_batch_size 4 --max_steps 6 --save_steps 2
        --logging_dir "$T/runs")  # a fixed logging_dir: training_args.bin equal across runs
# ZeRO-3 gathers the weights into model.safetensors at the end, to compare them.
ds() {
  local gather=""
  [[ $1 == 3 ]] && gather=',"stage3_gather_16bit_weights_on_model_save":true'
  echo "{\"zero_optimization\":{\"stage\":$1$gather$2}}"
}
NVME=',"offload_optimizer":{"device":"nvme","nvme_path":"NVME","buffer_count":2},"sub_group_size":20000'
flags() {  # CASE OUT_NAME -> the strategy's flags, one per line
  case $1 in
    zero2) printf '%s\n' --deepspeed "$(ds 2 '')" ;;
    zero3) printf '%s\n' --deepspeed "$(ds 3 '')" ;;
    nvme) printf '%s\n' --deepspeed "$(ds 3 "${NVME//NVME/$T/nvme_$2}")" --optim adamw_torch_fused ;;
  esac
}
ranks() { case $1 in hf|eio) echo 1 ;; *) echo 2 ;; esac; }
run() {  # CASE OUT LOG [more flags]: run_glue (or 2 ranks of it) into OUT
  local case=$1 out=$2 log=$3; shift 3
  local world; world=$(ranks "$case")
  local -a f; mapfile -t f < <(flags "$case" "$(basename "$out")")
  mkdir -p "$T/nvme_$(basename "$out")"
  if [[ $world == 1 ]]; then
    timeout 240 "$bin" --output_dir "$out" "${COMMON[@]}" "${f[@]}" "$@" > "$log" 2>&1
  else
    timeout 240 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$out" \
      "${COMMON[@]}" "${f[@]}" "$@" > "$log" 2>&1
  fi
}
same_files() {  # A B: every file of folder A equals B's, and B has no others
  diff <(cd "$1" && find . -type f | sort) <(cd "$2" && find . -type f | sort) ||
    fail "$1 and $2 hold different files"
  while read -r f; do cmp -s "$1/$f" "$2/$f" || fail "$2/$f differs from $1/$f"; done \
    < <(cd "$1" && find . -type f)
}
# After a failed save into OUT: the error names PATH_PART and CAUSE, checkpoint-2 is intact and
# alone, a rerun with room resumes from it and ends as the uninterrupted run REF.
check_failed_save() {  # CASE OUT LOG REF CAUSE
  local case=$1 out=$2 log=$3 ref=$4 cause=$5
  grep -q "error: .*$out/.*$cause" "$log" || { tail -20 "$log"; fail "$case: no error naming $out and '$cause'"; }
  [[ $(ls -A "$out") == checkpoint-2 ]] ||
    { ls -la "$out"; fail "$case: $out holds more than checkpoint-2 after the failed save"; }
  same_files "$ref/checkpoint-2" "$out/checkpoint-2"
}
resume_and_compare() {  # CASE OUT REF
  local case=$1 out=$2 ref=$3
  run "$case" "$out" "$out.rerun.log" --resume_from_checkpoint "$out/checkpoint-2" ||
    { tail -30 "$out.rerun.log"; fail "$case: the rerun with room failed"; }
  cmp "$ref/model.safetensors" "$out/model.safetensors" ||
    fail "$case: resumed weights differ from the uninterrupted run's"
  "$PY" "$same_logs" "$ref/trainer_state.json" "$out/trainer_state.json" "$case log" exact
  echo "ok: $case: the failed save left checkpoint-2 intact; resumed from it == uninterrupted (bitwise)"
}

# The uninterrupted run into OUT (the same output_dir as the faulty run's, which
# training_args.bin records), kept as REF; OUT is then emptied for the faulty run.
reference() {  # CASE OUT REF [more flags]
  local case=$1 out=$2 ref=$3; shift 3
  run "$case" "$out" "$ref.log" "$@" || { tail -30 "$ref.log"; fail "$case: the reference run"; }
  cp -a "$out" "$ref" && rm -rf "$out"
}

# A case on a tmpfs at OUT's parent, sized for checkpoint-2 and half of another: the reference
# (on the tmpfs made large), the failed run, then the rerun after the filesystem grows again,
# inside one private mount namespace.
enospc_case() {  # CASE
  local case=$1 dir="$T/small_$1"
  mkdir -p "$dir"
  { declare -f; declare -p T PY bin launch same_logs COMMON NVME; } > "$T/functions.sh"
  unshare -m bash -c "set -e; source '$T/functions.sh'
    mount -t tmpfs -o size=256m tmpfs '$dir'
    reference $case '$dir/out' '$T/ref_$case'
    ckpt=\$(du -sb '$T/ref_$case/checkpoint-2' | cut -f1)
    mount -o remount,size=\$(( ckpt + ckpt / 2 + 16384 )) '$dir'
    if run $case '$dir/out' '$dir.log'; then fail '$case: the save onto a full disk succeeded'; fi
    check_failed_save $case '$dir/out' '$dir.log' '$T/ref_$case' 'No space left on device'
    mount -o remount,size=256m '$dir'
    resume_and_compare $case '$dir/out' '$T/ref_$case'"
}

for case in hf zero2 zero3; do enospc_case "$case"; done

# EIO on every write of checkpoint-4's files (its staging folder's name holds "checkpoint-4").
reference eio "$T/eio" "$T/ref_eio"
if LD_PRELOAD="$shim" LOOM_EIO_PATH=checkpoint-4 run eio "$T/eio" "$T/eio.log"; then
  fail "eio: the save succeeded through EIO"
fi
grep -q "eio_shim: EIO on $T/eio/" "$T/eio.log" || { tail "$T/eio.log"; fail "eio: no EIO was injected"; }
check_failed_save eio "$T/eio" "$T/eio.log" "$T/ref_eio" "Input/output error"
resume_and_compare eio "$T/eio" "$T/ref_eio"

# NVMe swap: EIO once checkpoint-2 is saved (the swap writes of the first 2 steps and of the save
# are allowed: their count comes from a run of 2 steps).
reference nvme "$T/nvme" "$T/ref_nvme"
LD_PRELOAD="$shim" LOOM_EIO_PATH="$T/nvme_count" LOOM_EIO_AFTER=1000000000000 \
  LOOM_EIO_COUNT_FILE="$T/nvme_bytes" run nvme "$T/count" "$T/count.log" --max_steps 2 ||
  { tail -30 "$T/count.log"; fail "nvme: counting run"; }
bytes=$(cat "$T/nvme_bytes".*  | sort -n | tail -1)
if LD_PRELOAD="$shim" LOOM_EIO_PATH="$T/nvme_nvme" LOOM_EIO_AFTER="$bytes" \
  run nvme "$T/nvme" "$T/nvme.log"; then
  fail "nvme: training went on through EIO on the swap files"
fi
grep -q "error: .*$T/nvme_nvme/.*Input/output error" "$T/nvme.log" ||
  { tail -30 "$T/nvme.log"; fail "nvme: no error naming the swap file and EIO"; }
[[ $(ls -A "$T/nvme") == checkpoint-2 ]] || { ls -la "$T/nvme"; fail "nvme: more than checkpoint-2 left"; }
same_files "$T/ref_nvme/checkpoint-2" "$T/nvme/checkpoint-2"
resume_and_compare nvme "$T/nvme" "$T/ref_nvme"

# --push_to_hub: EIO while checkpoint-4's files are copied for their push (output_dir/_push-2):
# the run fails naming the copy, the push folder is gone, checkpoint-2 is intact, and the
# rerun resumes, pushes and ends bitwise. A bare repository over file:// is the remote.
export HOME="$T/home" && mkdir -p "$HOME"
git config --global user.name loom-test && git config --global user.email test@loom
git lfs install --skip-repo > /dev/null
git init -q --bare -b main "$T/hub.git"
HUB=(--push_to_hub --hub_always_push --hub_model_id "file://$T/hub.git")
reference hf "$T/hub" "$T/ref_hub" "${HUB[@]}"
rm -rf "$T/hub.git" && git init -q --bare -b main "$T/hub.git"
if LD_PRELOAD="$shim" LOOM_EIO_PATH=/_push-2/ run hf "$T/hub" "$T/hub.log" "${HUB[@]}"; then
  fail "hub: the push copy succeeded through EIO"
fi
grep -q "error: .*copying $T/hub/checkpoint-4/.* to $T/hub/_push-2/.*Input/output error" "$T/hub.log" ||
  { tail -20 "$T/hub.log"; fail "hub: no error naming the push copy and EIO"; }
[[ -z $(ls -d "$T/hub/_push-"* 2>/dev/null) ]] || fail "hub: a push folder was left"
same_files "$T/ref_hub/checkpoint-2" "$T/hub/checkpoint-2"
run hf "$T/hub" "$T/hub.rerun.log" "${HUB[@]}" --resume_from_checkpoint "$T/hub/checkpoint-2" ||
  { tail -30 "$T/hub.rerun.log"; fail "hub: the rerun failed"; }
cmp "$T/ref_hub/model.safetensors" "$T/hub/model.safetensors" || fail "hub: resumed weights differ"
[[ $(git -C "$T/hub.git" log --format=%s main) == *"End of training"* ]] || fail "hub: nothing pushed"
echo "ok: hub: the failed push copy left no push folder and checkpoint-2 intact; resumed and pushed == uninterrupted (bitwise)"

# zero_to_fp32 into OUTPUT_DIR shards on a full disk: no shard or index under a final name.
"$z2f" "$T/ref_zero3/checkpoint-6" "$T/z2f_ref" --max_shard_size 100KB --safe_serialization \
  > "$T/z2f_ref.log" 2>&1 || { cat "$T/z2f_ref.log"; fail "zero_to_fp32 reference"; }
total=$(du -sb "$T/z2f_ref" | cut -f1)
mkdir -p "$T/small_z2f"
unshare -m bash -c "mount -t tmpfs -o size=$(( total / 2 )) tmpfs '$T/small_z2f' &&
  if '$z2f' '$T/ref_zero3/checkpoint-6' '$T/small_z2f/out' --max_shard_size 100KB --safe_serialization > '$T/z2f.log' 2>&1; then exit 3; fi &&
  grep -q '$T/small_z2f/out/.*No space left on device' '$T/z2f.log' || exit 4
  [[ -z \$(ls -A '$T/small_z2f/out') ]] || exit 5
  mount -o remount,size=256m '$T/small_z2f' &&
  '$z2f' '$T/ref_zero3/checkpoint-6' '$T/small_z2f/out' --max_shard_size 100KB --safe_serialization > '$T/z2f2.log' 2>&1 || exit 6
  diff -r '$T/z2f_ref' '$T/small_z2f/out'" ||
  { rc=$?; cat "$T/z2f.log"; fail "zero_to_fp32 on a full disk (step $rc)"; }
echo "ok: z2f: a full OUTPUT_DIR left no shard or index under a final name; rerun with room == reference"
echo "full_disk_test: PASS"
