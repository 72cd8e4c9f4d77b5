#!/usr/bin/env bash
# run_glue --bf16 on the embedded demo: logs "16-bits training: True" (fp32 logs
# False), reaches an eval_accuracy within 0.02 of the fp32 run, and writes fp32 weights (HF's
# amp path keeps fp32 weights) that load in the Python reference BERT and predict as run_glue did.
# Fails (never skips) without Debian's python3 + torch.
#   usage: run_glue_bf16_test.sh RUN_GLUE GLUE_LOGITS_TOOL CHECK_PY BERT_REFERENCE_PY
set -euo pipefail
run_glue=$1 tool=$2 check=$3 reference=$4
source tests/require_python_torch.sh  # sets py; FAILs without torch/numpy
fail() { echo "FAIL: $*"; exit 1; }
accuracy() { sed -n 's/.*"eval_accuracy": \([0-9.e-]*\).*/\1/p' "$1/eval_results.json"; }
for mode in fp32 bf16; do
  flags=(--output_dir "$TEST_TMPDIR/$mode" --do_train --do_eval --do_predict --disable_tqdm)
  [[ $mode == bf16 ]] && flags+=(--bf16)
  "$run_glue" "${flags[@]}" > "$TEST_TMPDIR/$mode.log" 2>&1 || { cat "$TEST_TMPDIR/$mode.log"; fail "$mode run"; }
done
grep -q "16-bits training: True" "$TEST_TMPDIR/bf16.log" || fail "bf16 run does not log 16-bits training: True"
grep -q "16-bits training: False" "$TEST_TMPDIR/fp32.log" || fail "fp32 run does not log 16-bits training: False"
grep -q "precision: bf16 autocast (cpu_amp), fp32 weights" "$TEST_TMPDIR/bf16.log" || fail "no precision line"
a32=$(accuracy "$TEST_TMPDIR/fp32") a16=$(accuracy "$TEST_TMPDIR/bf16")
[[ -n $a32 && -n $a16 ]] || fail "eval_accuracy missing"
awk -v a="$a16" -v b="$a32" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.02 && a >= 0.9) }' \
  || fail "bf16 eval_accuracy $a16 vs fp32 $a32"
grep -q '"torch_dtype": "float32"' "$TEST_TMPDIR/bf16/config.json" || fail "saved weights not fp32"
n=24
"$tool" "$TEST_TMPDIR/bf16" "$TEST_TMPDIR/bf16/synthetic_data/test.tsv" $n 32 "$TEST_TMPDIR/case.safetensors"
"$py" "$check" "$reference" "$TEST_TMPDIR/bf16" "$TEST_TMPDIR/case.safetensors" $n
echo "run_glue_bf16_test: PASS (eval_accuracy fp32 $a32, bf16 $a16)"
