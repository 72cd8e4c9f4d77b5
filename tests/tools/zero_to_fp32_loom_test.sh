#!/usr/bin/env bash
# //tools:zero_to_fp32 and DeepSpeed's own zero_to_fp32.py on loom's own ZeRO checkpoints:
# run_glue under //tools:launch with ZeRO stages 1, 2 and 3 at 1, 2 and 4 ranks saves
# checkpoint-2; the tool's consolidation of it (one safetensors file, and a directory of forced
# shards) equals the checkpoint's model.safetensors exactly (ZeRO-3 with
# stage3_gather_16bit_weights_on_model_save, so that the weights file exists to compare with),
# and so does what DeepSpeed 0.13.5's unmodified zero_to_fp32.py
# (//tests/sharding:deepspeed_zero_to_fp32.py, Debian's python3-torch) makes of the same folder,
# bitwise; for bf16 ZeRO-2 DeepSpeed's script gives the tool's fp32 masters, bitwise and in order.
#   usage: zero_to_fp32_loom_test.sh RUN_GLUE LAUNCH ZERO_TO_FP32 COMPARE_PY DEMO_MODEL_SH
#          DEEPSPEED_ZERO_TO_FP32_PY
set -euo pipefail
bin=$1 launch=$2 tool=$3 compare=$4 demo_model=$5 deepspeed_z2f=$6
T="$TEST_TMPDIR"
source tests/require_python_torch.sh
PY=$py
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
    "$PY" "$deepspeed_z2f" "$out/checkpoint-2" "$out/fp32.safetensors" "$stage" "$world" ||
      fail "DeepSpeed's zero_to_fp32.py on ZeRO-$stage at $world ranks"
    echo "ok: ZeRO-$stage at $world ranks: loom's and DeepSpeed's zero_to_fp32 == the run's weights"
  done
done
# bf16 (DeepSpeed's bf16 section): bf16_-prefixed optimizer files; the consolidated fp32 master
# weights rounded to bf16 are the run's bf16 weights.
out="$T/bf16"
timeout 240 "$launch" --standalone --nproc_per_node 2 "$bin" --output_dir "$out" \
  --model_name_or_path "$T/m" --task_name sst2 --data_dir "$T/m/synthetic_data" --do_train \
  --max_seq_length 32 --max_steps 2 --save_steps 2 --report_to none --disable_tqdm \
  --per_device_train_batch_size 4 --learning_rate 1e-3 --bf16 \
  --deepspeed '{"bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 2}}' > "$out.log" 2>&1 ||
  { cat "$out.log"; fail "bf16 ZeRO-2"; }
ls "$out/checkpoint-2/global_step2" | grep -q "^bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt$" ||
  fail "no bf16_ optimizer files"
"$tool" "$out/checkpoint-2" "$out/fp32.bin" > /dev/null
"$PY" - "$out/fp32.bin" "$out/checkpoint-2/model.safetensors" <<'PYEOF'
import json, struct, sys
import torch
fp32 = torch.load(sys.argv[1])
data = open(sys.argv[2], "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
body = bytearray(data[8 + n:])
for name, h in header.items():
    if name == "__metadata__" or h["dtype"] != "BF16":
        continue
    a, b = h["data_offsets"]
    want = torch.frombuffer(body[a:b], dtype=torch.bfloat16).reshape(h["shape"])
    assert fp32[name].dtype == torch.float32 and torch.equal(fp32[name].to(torch.bfloat16), want), name
print("ok: bf16 ZeRO-2: the fp32 masters rounded are the bf16 weights")
PYEOF
"$PY" "$deepspeed_z2f" "$out/checkpoint-2" "$out/fp32.bin" 2 2 ||
  fail "DeepSpeed's zero_to_fp32.py on bf16 ZeRO-2"
echo "zero_to_fp32_loom_test: PASS"
