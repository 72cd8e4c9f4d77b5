#!/usr/bin/env bash
# loom's run_glue against the REAL Hugging Face Trainer: transformers 4.38.2 with accelerate
# 0.27.2 (pinned in third_party/python/interop-transformers-4.38.txt, installed by ./bazelw),
# run by the Python torch of the build (the pinned 2.11 wheel's; Debian's 1.13 under
# --config=debian), CPU, one process, default threads (hf_trainer_glue.py
# makes the calls of transformers 4.38's run_glue.py: set_seed, from_pretrained, tokenize with
# padding to max_seq_length, Trainer, train, save_model, evaluate).
#
# Both train run_glue's demo BERT (its config's dropout ON: hidden and attention 0.1) on the
# first 20 rows of its synthetic SST-2 train.tsv (3 batches of 8, 8, 4 per epoch), 10 steps, so
# the run crosses three epoch boundaries (the sampler's per-epoch reshuffle, a DataLoader
# iterator per epoch), with warmup, clipping, and an evaluation on 64 dev rows every 5 steps
# (its DataLoader draws from the global generator too). Compared (compare_hf_trainer_run.py):
# every step's logged `loss` equal, `grad_norm` and `learning_rate` within 1e-5 relative (equal
# today), every `eval_loss` equal (numpy's float32 mean on the HF side) and the final
# model.safetensors bit-equal (the same torch kernels on both sides, on as many threads: on
# 2.11 loom's thread plan gives MKL the intra-op threads Python torch gives it). Then the same
# run switched mid-way, both directions:
#   - the HF Trainer resumes (train(resume_from_checkpoint=...)) from loom's checkpoint-4 and
#     logs what loom's uninterrupted run logged from step 5 on, ending with the same weights;
#   - loom resumes (--resume_from_checkpoint) from the HF Trainer's checkpoint-4 (its
#     model.safetensors, optimizer.pt, scheduler.pt, rng_state.pth, trainer_state.json) and
#     logs what the HF Trainer's uninterrupted run logged from step 5 on.
# Then the same run from a copy of the model without its classifier weights: transformers
# initialises that one module after run_glue.py's set_seed (from_pretrained's fast init), and
# loom's run_glue must give it the same values (the whole run compared as above).
# From a checkpoint without the classifier (a bare BERT's weights): transformers initialises
# just the missing classifier, its weight taking the first draws after run_glue.py's
# set_seed(42) (from_pretrained's fast init); loom's run_glue must give it the same values.
# And a check that dropout matters here: the same first step with the dropout-free config logs
# another loss. Fails (never skips) when Python, torch, numpy or the pinned packages are missing.
#   usage: run_glue_hf_trainer_test.sh RUN_GLUE HF_TRAINER_GLUE_PY COMPARE_PY PYTHON_INTEROP_PATHS_SH
set -euo pipefail
bin=$1 hf_script=$2 compare=$3
source tests/require_python_transformers.sh "$4" 4.38
T="$TEST_TMPDIR"
fail() { echo "FAIL: $*" >&2; exit 1; }

# The demo model (trained one step by run_glue) and its data, dropout as the demo sets it.
timeout 120 "$bin" --output_dir "$T/m" --max_steps 1 --save_strategy no --report_to none \
  --disable_tqdm > "$T/m.log" 2>&1 || { cat "$T/m.log"; fail "demo model"; }
# transformers 4.38's BERT has eager attention only; loom, as transformers >= 4.41, picks
# "sdpa" where LibTorch has it (2.1.1 on): config.json's "_attn_implementation" (which 4.38
# reads too) pins eager for both sides, so the comparison holds on every LibTorch.
"$py" - "$T/m/config.json" <<'PYEOF' || exit 1
import json, sys
c = json.load(open(sys.argv[1]))
p = (c["hidden_dropout_prob"], c["attention_probs_dropout_prob"])
if p != (0.1, 0.1):
    sys.exit(f"FAIL: the demo config's dropout is {p}, not (0.1, 0.1)")
c["_attn_implementation"] = "eager"
json.dump(c, open(sys.argv[1], "w"), indent=2)
PYEOF
data="$T/m/synthetic_data"

# The same run on both sides: loom's flags and the TrainingArguments the script builds.
LOOM=(--model_name_or_path "$T/m" --task_name sst2 --data_dir "$data" --do_train --do_eval
      --max_seq_length 32 --max_train_samples 20 --max_eval_samples 64 --seed 42
      --per_device_train_batch_size 8 --per_device_eval_batch_size 16 --max_steps 10
      --learning_rate 1e-3 --warmup_steps 2 --logging_steps 1 --evaluation_strategy steps
      --eval_steps 5 --save_strategy steps --save_steps 4 --report_to none --disable_tqdm)
HF_ARGS='{"seed": 42, "per_device_train_batch_size": 8, "per_device_eval_batch_size": 16,
  "max_steps": 10, "learning_rate": 1e-3, "warmup_steps": 2, "logging_steps": 1,
  "evaluation_strategy": "steps", "eval_steps": 5, "save_strategy": "steps", "save_steps": 4,
  "use_cpu": true, "report_to": "none", "disable_tqdm": true}'
loom() {  # OUT [FLAGS...]
  local out=$1
  shift
  timeout 120 "$bin" --output_dir "$out" "${LOOM[@]}" "$@" > "$out.log" 2>&1 ||
    { cat "$out.log"; fail "loom run_glue $out"; }
}
hf() {  # OUT RESUME_FROM|- [MODEL]
  python_with_transformers 4.38 "$hf_script" "${3:-$T/m}" "$data" "$1" 32 20 64 "$2" -- "$HF_ARGS" \
    > "$1.log" 2>&1 || { cat "$1.log"; fail "the HF Trainer ($1)"; }
}
compare() {  # LOOM_OUT HF_OUT FIRST_STEP WHAT
  echo "== $4"
  python_with_transformers 4.38 "$compare" "$1" "$2" "$3" || fail "$4"
}

loom "$T/loom"
hf "$T/hf" -
compare "$T/loom" "$T/hf" 1 "loom run_glue == the HF Trainer, every step"

hf "$T/hf_from_loom" "$T/loom/checkpoint-4"
compare "$T/loom" "$T/hf_from_loom" 5 "the HF Trainer resumed from loom's checkpoint-4 == loom"

loom "$T/loom_from_hf" --resume_from_checkpoint "$T/hf/checkpoint-4"
compare "$T/loom_from_hf" "$T/hf" 5 "loom resumed from the HF Trainer's checkpoint-4 == HF"

cp -r "$T/m" "$T/bare"
python_with_transformers 4.38 - "$T/bare/model.safetensors" <<'PYEOF'
import sys
from safetensors.torch import load_file, save_file
w = load_file(sys.argv[1])
save_file({k: v for k, v in w.items() if not k.startswith("classifier.")}, sys.argv[1],
          metadata={"format": "pt"})
PYEOF
hf "$T/hf_bare" - "$T/bare"
grep -q "newly initialized: \['classifier.bias', 'classifier.weight'\]" "$T/hf_bare.log" ||
  fail "transformers did not initialise the classifier afresh: $(cat "$T/hf_bare.log")"
loom "$T/loom_bare" --model_name_or_path "$T/bare"
compare "$T/loom_bare" "$T/hf_bare" 1 "from a checkpoint without the classifier: loom == HF"

# Dropout is on in these runs: without it the first step's loss is another number.
cp -r "$T/m" "$T/m0"
"$py" - "$T/m0/config.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["hidden_dropout_prob"] = c["attention_probs_dropout_prob"] = 0.0
json.dump(c, open(sys.argv[1], "w"), indent=2)
PYEOF
loom "$T/nodrop" --model_name_or_path "$T/m0" --max_steps 1 --save_strategy no
"$py" - "$T/loom/trainer_state.json" "$T/nodrop/trainer_state.json" <<'PYEOF' || exit 1
import json, sys
a, b = (json.load(open(p))["log_history"][0]["loss"] for p in sys.argv[1:])
print(f"step-1 loss: {a} with dropout 0.1, {b} without")
if a == b:
    sys.exit("FAIL: the step-1 loss is the same without dropout: the test does not exercise it")
PYEOF
echo "run_glue_hf_trainer_test: PASS"
