#!/usr/bin/env bash
# A model whose fp32 training state does not fit one rank's memory: with every
# process capped at LOOM_CPU_MEMORY_LIMIT=350MB, a BERT of 25.6M parameters — 16P = 410 MB of
# weights, gradients and AdamW moments per replica, over the cap — fails under DDP at 2 ranks
# with a clear out-of-memory error naming the cap, the strategy and the fix (exit 1, no crash,
# no signal), and trains under --fsdp "full_shard auto_wrap" at 2 ranks (8P = 205 MB of sharded
# state per rank, plus one gathered layer and the embeddings).
#   usage: run_glue_memory_budget_test.sh RUN_GLUE LAUNCH MAKE_BERT_PY DEMO_MODEL_SH
set -euo pipefail
bin=$1 launch=$2 make_bert=$3 demo_model=$4
T="$TEST_TMPDIR"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }

"$demo_model" "$bin" "$T/m"
"$PY" "$make_bert" "$T/m" "$T/big" 512 8 2048 8 | grep -q "25.6M parameters" || fail "model size"
COMMON=(--model_name_or_path "$T/big" --task_name sst2 --data_dir "$T/m/synthetic_data" --do_train
        --max_seq_length 32 --max_steps 2 --logging_steps 1 --save_strategy no --report_to none
        --disable_tqdm --seed 7 --per_device_train_batch_size 4)
set +e
LOOM_CPU_MEMORY_LIMIT=350MB timeout 300 "$launch" --standalone --nproc_per_node 2 "$bin" \
  --output_dir "$T/ddp" "${COMMON[@]}" > "$T/ddp.log" 2>&1
rc=$?
set -e
[[ $rc -eq 1 ]] || { tail -20 "$T/ddp.log"; fail "DDP under the cap: launch exit $rc (want 1: a rank exited 1)"; }
grep -q "run_glue: error: training at step 0: DefaultCPUAllocator: can't allocate memory: .* of its LOOM_CPU_MEMORY_LIMIT of 350000000 bytes (data parallelism: DDP; model state on this rank: .*--fsdp \"full_shard auto_wrap\"" "$T/ddp.log" ||
  { tail -20 "$T/ddp.log"; fail "DDP: no clear out-of-memory error"; }
! grep -Eq "terminate called|Segmentation fault|Aborted|signal" "$T/ddp.log" || fail "DDP crashed"
echo "ok: DDP at 2 ranks under a 350MB cap fails clearly"
LOOM_CPU_MEMORY_LIMIT=350MB timeout 300 "$launch" --standalone --nproc_per_node 2 "$bin" \
  --output_dir "$T/fsdp" "${COMMON[@]}" --fsdp "full_shard auto_wrap" > "$T/fsdp.log" 2>&1 ||
  { tail -30 "$T/fsdp.log"; fail "full_shard under the cap"; }
"$PY" - "$T/fsdp/trainer_state.json" <<'PYEOF' || fail "full_shard did not train 2 steps"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["global_step"] == 2 and len([e for e in s["log_history"] if "loss" in e]) == 2, s
PYEOF
[[ -s $T/fsdp/pytorch_model.bin || -s $T/fsdp/model.safetensors ]] || fail "no weights saved"
echo "ok: FSDP full_shard at 2 ranks under the same cap trains and saves"
echo "run_glue_memory_budget_test: PASS"
