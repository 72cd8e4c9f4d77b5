#!/usr/bin/env bash
# //tools:zero_to_fp32 on loom's own ZeRO checkpoints (issue 15): run_glue under //tools:launch
# with ZeRO stages 1, 2 and 3 at 1, 2 and 4 ranks saves checkpoint-2; the tool's consolidation
# of it (one safetensors file, and a directory of forced shards) equals the checkpoint's
# model.safetensors exactly (ZeRO-3 with stage3_gather_16bit_weights_on_model_save, so that the
# weights file exists to compare with).
#   usage: zero_to_fp32_loom_test.sh RUN_GLUE LAUNCH ZERO_TO_FP32 COMPARE_PY DEMO_MODEL_SH
set -euo pipefail
bin=$1 launch=$2 tool=$3 compare=$4 demo_model=$5
T="$TEST_TMPDIR"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
"$demo_model" "$bin" "$T/m"
for stage in 1 2 3; do
  for world in 1 2 4; do
    out="$T/z${stage}_$world"
    extra=""
    [[ $stage == 3 ]] && extra=', "stage3_gather_16bit_weights_on_model_save": true'
    timeout 240 "$launch" --standalone --nproc_per_node "$world" "$bin" --output_dir "$out" \
      --model_name_or_path "$T/m" --task_name sst2 --data_dir "$T/m/synthetic_data" --do_train \
      --max_seq_length 32 --max_steps 2 --save_steps 2 --report_to none --disable_tqdm \
      --per_device_train_batch_size $((8 / world)) --learning_rate 1e-3 \
      --deepspeed "{\"zero_optimization\": {\"stage\": $stage$extra}}" > "$out.log" 2>&1 ||
      { cat "$out.log"; fail "ZeRO-$stage at $world ranks"; }
    "$tool" "$out/checkpoint-2" "$out/fp32.safetensors" > "$out.z2f.log" 2>&1 ||
      { cat "$out.z2f.log"; fail "zero_to_fp32, ZeRO-$stage at $world ranks"; }
    grep -q "Detected checkpoint of type zero stage $stage, world_size: $world" "$out.z2f.log" ||
      fail "ZeRO-$stage at $world: $(grep Detected "$out.z2f.log")"
    "$PY" "$compare" "$out/checkpoint-2/model.safetensors" "$out/fp32.safetensors" 0 > /dev/null ||
      fail "ZeRO-$stage at $world ranks: the consolidation differs from the run's weights"
    "$tool" "$out/checkpoint-2" "$out/dir" --safe_serialization --max_shard_size 20KB > /dev/null
    [[ -s $out/dir/model.safetensors.index.json ]] || fail "no shards for ZeRO-$stage at $world"
    echo "ok: ZeRO-$stage at $world ranks: zero_to_fp32 == the run's weights"
  done
done
echo "zero_to_fp32_loom_test: PASS"
