#!/usr/bin/env bash
# side_by_side.sh BUNDLE OUT [--tiny] [RUN OPTIONS...] — loom's run_glue against HF
# transformers' Trainer on the same BERT-base model, data and hyper-parameters (see the header of
# gpu/side_by_side.py): prepare -> hf -> loom -> hf_skipmem -> report, each with a time limit and
# its log in OUT (prepare.log, hf.log, loom.log + loom_stdout.log / loom_stderr.log,
# hf_skipmem.log), the results in OUT/side_by_side_*.json and the table in OUT/side_by_side.txt.
# The model, data and the runs' output folders go to SBS_WORK (default /tmp/side_by_side_work),
# not OUT: the BERT-base weights are 418 MiB.
#
# BUNDLE is a gpu/bundle.sh folder (run as BUNDLE/run.sh run_glue) or a run_glue binary.
# --tiny prepares the 2-layer model; RUN OPTIONS go to the hf and loom steps (--steps,
# --warmup-steps, --batch, --seq, --device, --precision). hf_skipmem, a control run of HF with
# its default skip_memory_metrics=True, is left out with SBS_HF_CONTROL=0.
# Python: SBS_PYTHON (default python3). About 2-3 minutes on an H200; exits 0 on PASS.
#
#   gpu/side_by_side.sh gpu/bundle "$OUT/sbs"                       # the GPU machine
#   SBS_PYTHON=... gpu/side_by_side.sh bazel-bin/examples/glue/run_glue /tmp/sbs --tiny \
#     --device cpu --steps 12 --warmup-steps 2 --batch 4 --seq 32    # CPU dry run
set -uo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: side_by_side.sh BUNDLE OUT [--tiny] [RUN OPTIONS...]" >&2
  exit 2
fi
runner=$1
mkdir -p "$2" || exit 2
out=$(cd "$2" && pwd)
shift 2
prepare_opts=()
if [[ ${1:-} == --tiny ]]; then
  prepare_opts+=(--tiny)
  shift
fi
py=${SBS_PYTHON:-python3}
work=${SBS_WORK:-/tmp/side_by_side_work}
script=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/side_by_side.py
export PYTHONUNBUFFERED=1

step() { # step NAME SECONDS CMD...: CMD with a time limit, output into OUT/NAME.log
  local name=$1 limit=$2 start=$SECONDS rc
  shift 2
  timeout -k 10 "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  echo "side_by_side.sh: $name exit $rc after $((SECONDS - start)) s (log: $out/$name.log)"
  tail -1 "$out/$name.log"
  return $rc
}

rm -f "$out"/side_by_side*.json
rm -rf "$work"
step prepare "${SBS_PREPARE_TIMEOUT:-90}" "$py" "$script" prepare "$work" "${prepare_opts[@]}" ||
  { echo "FAIL side_by_side: prepare failed (log: $out/prepare.log)"; exit 1; }
step hf "${SBS_HF_TIMEOUT:-120}" "$py" "$script" hf "$work" "$out" "$@"
# loom kills run_glue itself at --timeout, so that its partial result is still written.
step loom "${SBS_LOOM_TIMEOUT:-120}" "$py" "$script" loom "$work" "$out" "$runner" \
  --timeout "$((${SBS_LOOM_TIMEOUT:-120} - 15))" "$@"
if [[ ${SBS_HF_CONTROL:-1} != 0 ]]; then
  step hf_skipmem "${SBS_HF_CONTROL_TIMEOUT:-90}" "$py" "$script" hf "$work" "$out" --skip-memory-metrics "$@"
fi
"$py" "$script" report "$out"
