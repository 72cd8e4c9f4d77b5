#!/usr/bin/env bash
# bundle_test.sh COLLECT DEVICE_CHECK TORCH_LIB RUN_GLUE LAUNCH GPU_ORDER: collects the
# binaries of this build into a bundle with gpu/collect_bundle.sh, then runs them as the GPU
# machine would, in a stripped environment (`env -i`, PATH=/usr/bin:/bin) whose libraries are
# the bundle's, the wheel's torch/lib (LOOM_TORCH_LIB: this machine has no python3 with torch
# 2.11), the CPU stand-ins for the NVIDIA libraries missing here (beside torch/ in the venv's
# nvidia/*/lib, where the GPU machine's torch has the real ones) and the CUDA 13 toolkit:
#   - ldd resolves every library of every binary from those folders or from glibc /
#     libstdc++ / libgcc_s (never from Debian's other libraries)
#   - run_glue's demo trains on the CPU (exit 0, finite loss, HF's output files), directly and
#     under `launch --nproc_per_node 1`
#   - gpu_order says in one line that there is no driver, and exits 0
#   - device_check.sh says there is no GPU and exits 2 (not a crash)
set -euo pipefail
shopt -s inherit_errexit

collect=$1
device_check=$2
torch_lib=$3
binaries=("$4" "$5" "$6")

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

cuda_lib=/usr/local/cuda/lib64
[[ -f $torch_lib/libc10.so ]] || fail "$torch_lib is not the torch wheel's lib folder"
stand_ins=()
for d in "$torch_lib"/../../nvidia/*/lib; do
  [[ -d $d ]] && stand_ins+=("$(cd "$d" && pwd -P)")
done
((${#stand_ins[@]} == 3)) ||
  fail "expected the 3 CPU stand-in folders beside torch/ (nvidia/*/lib), found: ${stand_ins[*]:-none}; ./bazelw makes them"

bundle=$TEST_TMPDIR/bundle
work=$TEST_TMPDIR/work
mkdir -p "$work"

echo "=== collect"
LD_LIBRARY_PATH=$cuda_lib LOOM_TORCH_LIB=$torch_lib LOOM_BUNDLE_COMMIT=test \
  "$collect" "$bundle" "${binaries[@]}" || fail "collect_bundle.sh failed"
cat "$bundle/MANIFEST.txt"
for b in run_glue launch gpu_order; do
  [[ -x $bundle/bin/$b ]] || fail "the bundle has no bin/$b"
done
[[ -x $bundle/run.sh ]] || fail "the bundle has no run.sh"
grep -q '^torch: 2\.11\.0' "$bundle/MANIFEST.txt" || fail "MANIFEST.txt does not name torch 2.11.0"

# The stripped environment every run below uses.
stripped=(env -i PATH=/usr/bin:/bin "LOOM_TORCH_LIB=$torch_lib" "LD_LIBRARY_PATH=$cuda_lib")

echo "=== ldd"
ld_path=$("${stripped[@]}" "$bundle/run.sh" --print-ld-library-path) || fail "run.sh --print-ld-library-path failed"
echo "LD_LIBRARY_PATH=$ld_path"
allowed_dirs=()
for d in "$bundle/lib" "$bundle/lib/fallback" "$torch_lib" "${stand_ins[@]}" "$cuda_lib"; do
  [[ -d $d ]] && allowed_dirs+=("$(cd "$d" && pwd -P)")
done
allowed() { # allowed SONAME PATH (compared as physical folders: the wheel's RPATH has $ORIGIN/..)
  local dir
  dir=$(cd "$(dirname "$2")" && pwd -P)
  for d in "${allowed_dirs[@]}"; do
    [[ $dir == "$d" ]] && return 0
  done
  case $1 in # glibc, the dynamic loader, the compiler's runtime
    libc.so.6 | libm.so.6 | libdl.so.2 | libpthread.so.0 | librt.so.1 | libutil.so.1 | \
      libresolv.so.2 | ld-linux-x86-64.so.2 | libstdc++.so.6 | libgcc_s.so.1)
      return 0 ;;
  esac
  return 1
}
for b in "$bundle"/bin/*; do
  out=$(env -i "LD_LIBRARY_PATH=$ld_path" /usr/bin/ldd "$b") || fail "ldd $b failed: $out"
  ! grep -q 'not found' <<<"$out" || fail "$b: unresolved libraries: $(grep 'not found' <<<"$out")"
  count=0
  while read -r soname arrow path _; do
    [[ $arrow == "=>" ]] || continue
    allowed "$soname" "$path" || fail "$(basename "$b") resolves $soname from $path, outside the bundle, torch/lib, the stand-ins, CUDA and glibc"
    count=$((count + 1))
  done <<<"$out"
  echo "$(basename "$b"): $count libraries, all from the bundle, torch/lib, the stand-ins, CUDA or glibc/libstdc++"
done

# check_demo NAME LOG OUT_DIR: run_glue's exit status was 0; loss and files.
check_demo() {
  local loss f
  loss=$(sed -n 's/^ *"train_loss": \([^,]*\),\{0,1\}$/\1/p' "$3/all_results.json" 2>/dev/null)
  [[ $loss =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]] || fail "$1: train_loss '$loss' is not a finite number"
  grep -q "'train_loss': " "$2" || fail "$1: no train_loss in the log"
  for f in model.safetensors config.json trainer_state.json all_results.json train_results.json \
    eval_results.json vocab.txt tokenizer_config.json; do
    [[ -s $3/$f ]] || fail "$1: the output folder has no $f"
  done
  echo "$1: train_loss $loss, eval_accuracy $(sed -n 's/^ *"eval_accuracy": \([^,]*\),\{0,1\}$/\1/p' "$3/all_results.json")"
}

echo "=== run_glue demo on the CPU"
rc=0
"${stripped[@]}" "$bundle/run.sh" run_glue --output_dir "$work/demo" --num_train_epochs 1 \
  >"$work/demo.log" 2>&1 || rc=$?
[[ $rc == 0 ]] || { tail -30 "$work/demo.log"; fail "run_glue exited $rc"; }
grep -q 'device: cpu' "$work/demo.log" || fail "run_glue did not say it trains on the CPU"
check_demo run_glue "$work/demo.log" "$work/demo"

echo "=== launch --nproc_per_node 1 run_glue"
rc=0
"${stripped[@]}" "$bundle/run.sh" launch --standalone --nproc_per_node 1 "$bundle/bin/run_glue" \
  --output_dir "$work/launch" --max_steps 20 >"$work/launch.log" 2>&1 || rc=$?
[[ $rc == 0 ]] || { tail -30 "$work/launch.log"; fail "launch exited $rc"; }
grep -q 'Process rank: 0, device: cpu' "$work/launch.log" || fail "run_glue under launch did not run as local rank 0"
check_demo launch "$work/launch.log" "$work/launch"

echo "=== gpu_order"
rc=0
out=$("${stripped[@]}" "$bundle/run.sh" gpu_order 2>&1) || rc=$?
echo "$out"
[[ $rc == 0 ]] || fail "gpu_order exited $rc"
[[ $(wc -l <<<"$out") == 1 ]] || fail "gpu_order printed more than its one line"
grep -q 'no NVIDIA driver here' <<<"$out" || fail "gpu_order did not say there is no driver"

echo "=== device_check.sh"
rc=0
out=$("${stripped[@]}" "$device_check" "$bundle" "$work/report" 2>&1) || rc=$?
echo "$out"
[[ $rc == 2 ]] || fail "device_check.sh exited $rc, not 2 (no GPU)"
grep -q 'no GPU here' <<<"$out" || fail "device_check.sh did not say there is no GPU"
grep -q '^FAIL driver' "$work/report/report.txt" || fail "device_check.sh wrote no report"

echo "PASS: the bundle ($(sed -n 's/^total_bytes: //p' "$bundle/MANIFEST.txt") bytes as carried) runs from its own libraries"
