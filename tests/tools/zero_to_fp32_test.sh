#!/usr/bin/env bash
# //tools:zero_to_fp32 on the real DeepSpeed 0.13.5 checkpoints (ZeRO-2 and ZeRO-3, 2 ranks):
# its output, read by Python's torch.load (Debian's python3-torch), equals the engine's
# reference_full_state_dict.pt bitwise and in the same order; the safetensors output holds the
# same tensors; bad command lines exit 2, unreadable checkpoints 1 with the file named.
set -euo pipefail
tool=$1
data=$2  # tests/testdata/deepspeed
source tests/require_python_torch.sh
out=${TEST_TMPDIR:-/tmp}/zero_to_fp32_test
rm -rf "$out" && mkdir -p "$out"

for ckpt in zero2_ws2 zero3_ws2; do
  "$tool" "$data/$ckpt" "$out/$ckpt.bin" > "$out/$ckpt.log"
  grep -q "Reconstructed fp32 state dict with 41 params 139586 elements" "$out/$ckpt.log"
  "$tool" "$data/$ckpt" "$out/$ckpt.safetensors" -t global_step3 > /dev/null
  "$py" - "$out/$ckpt.bin" "$data/$ckpt/reference_full_state_dict.pt" "$out/$ckpt.safetensors" <<'PY'
import json, struct, sys
import torch
got = torch.load(sys.argv[1])
want = torch.load(sys.argv[2])
assert list(got) == list(want), "key order differs"
for k in want:
    assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
    assert torch.equal(got[k], want[k]), k
# safetensors: header length, JSON header, then the raw little-endian data (the format's spec).
with open(sys.argv[3], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    body = f.read()
names = [k for k in header if k != "__metadata__"]
assert sorted(names) == sorted(want), "safetensors names differ"
for k in names:
    h = header[k]
    assert h["dtype"] == "F32", k
    a, b = h["data_offsets"]
    t = torch.frombuffer(bytearray(body[a:b]), dtype=torch.float32).reshape(h["shape"])
    assert torch.equal(t, want[k]), k
print("ok", len(want))
PY
done

# --exclude_frozen_parameters on a checkpoint without frozen parameters changes nothing.
"$tool" "$data/zero2_ws2" "$out/ex.bin" --exclude_frozen_parameters > /dev/null
cmp "$out/ex.bin" "$out/zero2_ws2.bin"

set +e
"$tool" "$data/zero2_ws2" > /dev/null 2> "$out/err"; rc=$?
[[ $rc == 2 ]] || { echo "FAIL: one positional argument exited $rc, not 2"; exit 1; }
"$tool" "$data/zero2_ws2" "$out/x.bin" --bogus > /dev/null 2> "$out/err"; rc=$?
[[ $rc == 2 ]] && grep -q -- "--bogus" "$out/err" || { echo "FAIL: unknown option: $rc"; exit 1; }
"$tool" "$data/zero2_ws2" "$out/x.bin" -t global_step9 > /dev/null 2> "$out/err"; rc=$?
[[ $rc == 1 ]] && grep -q "global_step9" "$out/err" || { echo "FAIL: missing tag: $rc"; exit 1; }
set -e
[[ ! -e $out/x.bin ]] || { echo "FAIL: an output was written after an error"; exit 1; }
echo PASS
