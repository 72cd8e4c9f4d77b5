#!/usr/bin/env bash
# //tools:zero_to_fp32 on the real DeepSpeed 0.13.5 checkpoints (ZeRO-2 and ZeRO-3, 2 ranks):
# its output, read by Python's torch.load (Debian's python3-torch), equals the engine's
# reference_full_state_dict.pt bitwise and in the same order; the safetensors output holds the
# same tensors; the OUTPUT_DIR form (one file, or safetensors / .bin shards with HF's index)
# holds them too; bad command lines exit 2, unreadable checkpoints 1 with DeepSpeed's message.
# DeepSpeed 0.13.5's own zero_to_fp32.py as the other tests run it (vendored, with the stand-in
# `deepspeed` package; DEEPSPEED_ZERO_TO_FP32_PY) reproduces the references bitwise too: the
# harness that checks loom's files stands in for DeepSpeed faithfully.
#   usage: zero_to_fp32_test.sh ZERO_TO_FP32 TESTDATA_DIR DEEPSPEED_ZERO_TO_FP32_PY
set -euo pipefail
tool=$1
data=$2  # tests/testdata/deepspeed
deepspeed_z2f=$3
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
for ckpt in zero2_ws2 zero3_ws2; do
  "$py" "$deepspeed_z2f" "$data/$ckpt" "$data/$ckpt/reference_full_state_dict.pt"
done

# Current DeepSpeed's OUTPUT_DIR form: one pytorch_model.bin by default; safetensors and .bin
# shards with an index when --max_shard_size forces them.
for ckpt in zero2_ws2 zero3_ws2; do
  "$tool" "$data/$ckpt" "$out/${ckpt}_dir" > /dev/null
  "$tool" "$data/$ckpt" "$out/${ckpt}_st" --safe_serialization --max_shard_size 100KB > /dev/null
  "$tool" "$data/$ckpt" "$out/${ckpt}_bin" --max_shard_size=100KB -t global_step3 > /dev/null
  "$py" - "$out/$ckpt" "$data/$ckpt/reference_full_state_dict.pt" <<'PY'
import json, os, struct, sys
import torch
base, want = sys.argv[1], torch.load(sys.argv[2])
def st(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n)); body = f.read()
    assert header["__metadata__"] == {"format": "pt"}, header.get("__metadata__")
    out = {}
    for k, h in header.items():
        if k == "__metadata__": continue
        a, b = h["data_offsets"]
        out[k] = torch.frombuffer(bytearray(body[a:b]), dtype=torch.float32).reshape(h["shape"])
    return out
def check(got, what):
    assert sorted(got) == sorted(want), what + ": names differ"
    for k in want:
        assert torch.equal(got[k], want[k]), what + ": " + k
assert os.listdir(base + "_dir") == ["pytorch_model.bin"], os.listdir(base + "_dir")
check(torch.load(base + "_dir/pytorch_model.bin"), "dir")
for kind, index_name, load in (("_st", "model.safetensors.index.json", st),
                               ("_bin", "pytorch_model.bin.index.json", torch.load)):
    d = base + kind
    text = open(os.path.join(d, index_name)).read()
    index = json.loads(text)
    assert text == json.dumps(index, indent=2, sort_keys=True) + "\n", "index not as HF writes it"
    shards = sorted(set(index["weight_map"].values()))
    assert len(shards) > 1 and sorted(os.listdir(d)) == sorted(shards + [index_name]), os.listdir(d)
    got = {}
    for s in shards:
        part = load(os.path.join(d, s))
        assert all(index["weight_map"][k] == s for k in part), s
        got.update(part)
    check(got, kind)
    assert index["metadata"]["total_size"] == sum(t.numel() * 4 for t in want.values())
print("ok: directory outputs of", os.path.basename(base))
PY
done

# gflags' single-dash spellings work too, and --help lists the flags in gflags' layout.
"$tool" "$data/zero2_ws2" "$out/gf.bin" -tag global_step3 -exclude_frozen_parameters > /dev/null
cmp "$out/gf.bin" "$out/zero2_ws2.bin"
"$tool" --help | grep -q "Flags from tools/zero_to_fp32.cc:"

# Under `bazel run` (BUILD_WORKING_DIRECTORY set), relative paths are the user's, not Bazel's
# run folder's.
abs_tool=$(realpath "$tool")
mkdir -p "$out/userdir" && cp -rL "$data/zero2_ws2" "$out/userdir/ckpt"
(cd / && BUILD_WORKING_DIRECTORY="$out/userdir" "$abs_tool" ckpt rel.bin > /dev/null)
cmp "$out/userdir/rel.bin" "$out/zero2_ws2.bin"

# --exclude_frozen_parameters on a checkpoint without frozen parameters changes nothing.
"$tool" "$data/zero2_ws2" "$out/ex.bin" --exclude_frozen_parameters > /dev/null
cmp "$out/ex.bin" "$out/zero2_ws2.bin"

set +e
"$tool" "$data/zero2_ws2" > /dev/null 2> "$out/err"; rc=$?
[[ $rc == 2 ]] || { echo "FAIL: one positional argument exited $rc, not 2"; exit 1; }
"$tool" "$data/zero2_ws2" "$out/x.bin" --bogus > /dev/null 2> "$out/err"; rc=$?
[[ $rc == 2 ]] && grep -q -- "--bogus" "$out/err" || { echo "FAIL: unknown option: $rc"; exit 1; }
"$tool" "$data/zero2_ws2" "$out/x.bin" --safe_serialization > /dev/null 2> "$out/err"; rc=$?
[[ $rc == 2 ]] && grep -q "apply to an OUTPUT_DIR" "$out/err" || { echo "FAIL: file + dir flag: $rc"; exit 1; }
"$tool" "$data/zero2_ws2" "$out/xdir" --max_shard_size lots > /dev/null 2> "$out/err"; rc=$?
[[ $rc == 2 ]] && grep -q -- "--max_shard_size" "$out/err" || { echo "FAIL: bad shard size: $rc"; exit 1; }
"$tool" "$data/zero2_ws2" "$out/x.bin" -t global_step9 > /dev/null 2> "$out/err"; rc=$?
[[ $rc == 1 ]] && grep -q "Directory '.*global_step9' doesn't exist" "$out/err" || { echo "FAIL: missing tag: $rc"; exit 1; }
set -e
[[ ! -e $out/x.bin ]] || { echo "FAIL: an output was written after an error"; exit 1; }
echo PASS
