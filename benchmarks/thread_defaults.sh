#!/usr/bin/env bash
# thread_defaults: run_glue's training throughput on a tiny workload (the embedded demo
# BERT, batch 8, accumulation 2, seq 64, 160 steps) with loom's thread defaults (no variable
# set) against every manual setting of OMP_NUM_THREADS x OPENBLAS_NUM_THREADS in {1, cores},
# one process and under //tools:launch --nproc_per_node 2; rounds alternate between settings
# and each figure is the median of the rounds (this 2-vCPU machine varies +-20% run to run).
#
#   ./bazelw run -c opt //benchmarks:thread_defaults [-- ROUNDS [MODES]]
#       ROUNDS default 7; MODES "single launch" (default), "single" or "launch"
#
# Prints one table per mode and "defaults / best manual = N.NN" (the goal: >= 0.95).
set -euo pipefail
here="${BASH_SOURCE[0]}.runfiles/loom"
[[ -d $here ]] || here="${RUNFILES_DIR:-$0.runfiles}/loom"
run_glue="$here/examples/glue/run_glue"
launch="$here/tools/launch"
rounds=${1:-7}
modes=${2:-single launch}
cores=$(nproc)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
workload=(--per_device_train_batch_size 8 --gradient_accumulation_steps 2 --max_seq_length 64
          --max_steps 160 --do_train --logging_steps 1000 --disable_tqdm --report_to none
          --overwrite_output_dir)
echo "cpu: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $cores CPUs," \
     "$(lscpu | sed -n 's/^Thread(s) per core: *//p') thread(s) per core;" \
     "flags: $(grep -m1 -o -w 'avx512_bf16\|avx512f\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"

settings=("defaults")
for omp in 1 "$cores"; do
  for blas in 1 "$cores"; do settings+=("OMP_NUM_THREADS=$omp OPENBLAS_NUM_THREADS=$blas"); done
done

# samples/s of one run; $1 = "single" or "launch", $2 = setting
one_run() {
  local mode=$1 setting=$2 env=()
  [[ $setting != defaults ]] && read -r -a env <<< "$setting"
  local cmd=("$run_glue" --output_dir "$out/$mode" "${workload[@]}")
  [[ $mode == launch ]] && cmd=("$launch" --standalone --nproc_per_node 2 "${cmd[@]}")
  env -u OMP_NUM_THREADS -u OPENBLAS_NUM_THREADS -u GOTO_NUM_THREADS -u MKL_NUM_THREADS \
    "${env[@]}" "${cmd[@]}" 2>&1 | grep -o "'train_samples_per_second': [0-9.]*" | head -1 | cut -d' ' -f2
}

for mode in $modes; do
  declare -A results=()
  for ((r = 0; r < rounds; ++r)); do
    for s in "${settings[@]}"; do results[$s]+=" $(one_run "$mode" "$s")"; done
  done
  echo
  echo "$mode process$([[ $mode == launch ]] && echo 'es (launch --nproc_per_node 2)'): samples/s, median of $rounds rounds"
  best=0 best_name="" default=0
  for s in "${settings[@]}"; do
    med=$(tr ' ' '\n' <<< "${results[$s]}" | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf '  %-46s %8.1f   (%s )\n' "$s" "$med" "${results[$s]}"
    if [[ $s == defaults ]]; then default=$med
    elif awk -v a="$med" -v b="$best" 'BEGIN { exit !(a > b) }'; then best=$med best_name=$s; fi
  done
  awk -v d="$default" -v b="$best" -v n="$best_name" \
    'BEGIN { printf "  defaults / best manual (%s) = %.2f\n", n, d / b }'
  unset results
done
