"""Python half of python_interop_test.sh (Debian's /usr/bin/python3 with torch 1.13 and numpy).

  check_checkpoint.py DIR

1. Reads what checkpoint_interop_tool wrote to DIR with a safetensors reader written here
   from the format description (numpy only; the safetensors package is not installed) and
   with torch.load, and compares every value with an independent Python run of the same
   training (same model, values, gradients, AdamW groups and HF linear schedule).
2. Resumes that run in Python from loom's pytorch_model.bin, optimizer.pt and scheduler.pt
   and checks the next step against loom's.
3. Writes safetensors files by hand (struct + numpy) and torch.save files (state dicts, its
   own optimizer.pt and scheduler.pt) for the C++ side to read (checkpoint_interop_tool read
   DIR).
Raises (non-zero exit) on the first mismatch.
"""
import functools
import json
import os
import struct
import sys

import numpy as np
import torch

# safetensors dtypes in the reference's Dtype order (increasing alignment).
DTYPE_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32",
               "U32", "F32", "F64", "I64", "U64"]
# numpy views of each dtype; floats are read as their bit patterns.
NUMPY_BITS = {"F64": "<u8", "F32": "<u4", "F16": "<u2", "BF16": "<u2", "I64": "<i8",
              "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "u1"}
NUMPY_VALUES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
                "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}
TORCH_TO_ST = {torch.float32: "F32", torch.int64: "I64"}


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    check(len(keys) == len(set(keys)), "duplicate JSON keys: %r" % keys)
    return dict(pairs)


def read_safetensors(path):
    """Returns (metadata, {name: (dtype, shape, raw bytes)}, names in data order)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header_bytes = data[8:8 + n]
    header = json.loads(header_bytes.decode("utf-8"), object_pairs_hook=no_duplicates)
    metadata = header.pop("__metadata__", None)
    buffer = data[8 + n:]
    entries = sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"]))
    end = 0
    tensors = {}
    for name, info in entries:
        begin, stop = info["data_offsets"]
        check(begin == end, "%s: offsets do not tile the data" % name)
        size = int(np.prod(info["shape"], dtype=np.int64)) * np.dtype(NUMPY_BITS[info["dtype"]]).itemsize
        check(stop - begin == size, "%s: byte count" % name)
        tensors[name] = (info["dtype"], info["shape"], buffer[begin:stop])
        end = stop
    check(end == len(buffer), "%s: data not fully covered" % path)
    return metadata, tensors, [name for name, _ in entries], header_bytes


def as_array(entry, bits=False):
    dtype, shape, raw = entry
    table = NUMPY_BITS if bits or dtype == "BF16" else NUMPY_VALUES
    return np.frombuffer(raw, dtype=table[dtype]).reshape(shape)


def check_reference_layout(path, metadata, tensors, header_bytes):
    """The header is what the reference writer produces for these tensors."""
    check(len(header_bytes) % 8 == 0, "%s: header not padded to 8 bytes" % path)
    text = header_bytes.decode("utf-8")
    body = text.rstrip(" ")
    check(set(text[len(body):]) <= {" "}, "%s: padding is not spaces" % path)
    order = sorted(tensors, key=lambda n: (-DTYPE_ORDER.index(tensors[n][0]), n.encode()))
    parts = []
    if metadata:
        parts.append('"__metadata__":' + json.dumps(dict(sorted(metadata.items())),
                                                    separators=(",", ":"), ensure_ascii=False))
    offset = 0
    for name in order:
        dtype, shape, raw = tensors[name]
        parts.append(json.dumps(name, ensure_ascii=False) + ':{"dtype":"%s","shape":%s,'
                     '"data_offsets":[%d,%d]}' % (dtype, json.dumps(shape, separators=(",", ":")),
                                                  offset, offset + len(raw)))
        offset += len(raw)
    check(body == "{" + ",".join(parts) + "}", "%s: header differs from the reference "
          "writer's:\n%s\n%s" % (path, body, "{" + ",".join(parts) + "}"))


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("position_ids", torch.arange(5))
        self.embed = torch.nn.Embedding(10, 4)
        self.proj = torch.nn.Linear(4, 3)
        self.norm = torch.nn.LayerNorm(3)


def pattern(like, i, scale, step, offset):
    return (torch.arange(like.numel(), dtype=torch.float32) * scale + (i * step + offset)).reshape(like.shape)


def fill(model, scale, step, offset):
    with torch.no_grad():
        for i, (name, t) in enumerate(model.state_dict().items()):
            if t.is_floating_point():
                t.copy_(pattern(t, i, scale, step, offset))


def params_of(model):
    return [model.embed.weight, model.proj.weight, model.proj.bias, model.norm.weight,
            model.norm.bias]


def set_grads(model, t):
    for i, p in enumerate(params_of(model)):
        p.grad = torch.sin(torch.arange(p.numel(), dtype=torch.float32) * float(i + 1) + t).reshape(p.shape)


# transformers' get_linear_schedule_with_warmup lambda (HF passes a functools.partial).
def linear_lambda(step, *, num_warmup_steps, num_training_steps):
    if step < num_warmup_steps:
        return float(step) / float(max(1, num_warmup_steps))
    return max(0.0, float(num_training_steps - step) / float(max(1, num_training_steps - num_warmup_steps)))


def make_run(model, lr=1e-2, decay=0.1):
    p = params_of(model)
    opt = torch.optim.AdamW([{"params": p[:2], "weight_decay": decay},
                             {"params": p[2:], "weight_decay": 0.0}], lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, functools.partial(linear_lambda, num_warmup_steps=2, num_training_steps=10))
    return opt, sched


def step(model, opt, sched, t):
    set_grads(model, t)
    opt.step()
    sched.step()


# HF transformers 4.38-4.41 modeling_utils.shard_checkpoint (sizes only), transcribed.
def hf_shard_checkpoint(state_dict, max_shard_size, weights_name="model.safetensors"):
    sharded, last, total = [{}], 0, 0
    for key, weight in state_dict.items():
        size = weight.numel() * weight.element_size()
        if last + size > max_shard_size and len(sharded[-1]) > 0:
            sharded.append({})
            last = 0
        sharded[-1][key] = weight
        last += size
        total += size
    if len(sharded) == 1:
        return {weights_name: sharded[0]}, None
    weight_map, shards = {}, {}
    for idx, shard in enumerate(sharded):
        part = "-%05d-of-%05d" % (idx + 1, len(sharded))
        name = weights_name.replace(".bin", part + ".bin").replace(".safetensors", part + ".safetensors")
        shards[name] = shard
        for key in shard:
            weight_map[key] = name
    return shards, {"metadata": {"total_size": total}, "weight_map": weight_map}


def to_numpy_bytes(t):
    return t.detach().contiguous().numpy().tobytes()


def write_safetensors(path, tensors, metadata):
    """A writer from the format description: insertion order, spaces up to 8 bytes."""
    header, offset, blobs = {}, 0, []
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        raw = to_numpy_bytes(t)
        header[name] = {"dtype": TORCH_TO_ST[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def check_model_files(d, py_model):
    expected = py_model.state_dict()
    metadata, tensors, order, header = read_safetensors(os.path.join(d, "model.safetensors"))
    check(metadata == {"format": "pt"}, "model.safetensors metadata: %r" % metadata)
    check_reference_layout("model.safetensors", metadata, tensors, header)
    check(set(tensors) == set(expected), "model.safetensors keys: %r" % sorted(tensors))
    for name, t in expected.items():
        check(np.array_equal(as_array(tensors[name]), t.numpy()),
              "model.safetensors %s differs from Python's training run" % name)

    sd = torch.load(os.path.join(d, "pytorch_model.bin"))
    check(type(sd) is dict, "pytorch_model.bin holds a %s" % type(sd))
    check(list(sd) == list(expected), "pytorch_model.bin key order: %r" % list(sd))
    fresh = Tiny()
    fresh.load_state_dict(sd)  # strict
    for name, t in fresh.state_dict().items():
        check(torch.equal(t, expected[name]), "pytorch_model.bin %s" % name)

    shards, index = hf_shard_checkpoint(expected, 100)
    sharded = os.path.join(d, "sharded")
    check(sorted(os.listdir(sharded)) == sorted(list(shards) + ["model.safetensors.index.json"]),
          "sharded files: %r" % sorted(os.listdir(sharded)))
    with open(os.path.join(sharded, "model.safetensors.index.json")) as f:
        text = f.read()
    check(text == json.dumps(index, indent=2, sort_keys=True) + "\n", "index differs from HF's:\n" + text)
    for shard_name, shard in shards.items():
        metadata, tensors, _, header = read_safetensors(os.path.join(sharded, shard_name))
        check(metadata == {"format": "pt"}, shard_name)
        check_reference_layout(shard_name, metadata, tensors, header)
        check(set(tensors) == set(shard), "%s holds %r" % (shard_name, sorted(tensors)))
        for name in shard:
            check(np.array_equal(as_array(tensors[name]), expected[name].numpy()), name)


def check_dtypes(d):
    metadata, tensors, order, header = read_safetensors(os.path.join(d, "dtypes.safetensors"))
    check(metadata == {"format": "pt", "note": 'caf\u00e9 "quoted"'}, "dtypes metadata %r" % metadata)
    check_reference_layout("dtypes.safetensors", metadata, tensors, header)
    bits = {
        "f64": ("F64", [4], [0x7ff8000000000001, 0xfff0000000000001, 0x8000000000000000, 1]),
        "f32": ("F32", [2, 3], [0x7fc00001, 0xffbfffff, 0x7f800001, 0x80000000, 1, 0x3f800000]),
        "f16": ("F16", [4], [0x7e01, 0xfc01, 0x8000, 0x0001]),
        "bf16": ("BF16", [5], [0x7fc1, 0xff81, 0x8000, 0x0001, 0x3f80]),
        "i64": ("I64", [3], [-2**63, -1, 2**63 - 1]),
        "i32": ("I32", [3], [-2**31, -1, 2**31 - 1]),
        "i16": ("I16", [3], [-2**15, -1, 2**15 - 1]),
        "i8": ("I8", [3], [-128, -1, 127]),
        "u8": ("U8", [3], [0, 128, 255]),
        "bool": ("BOOL", [3], [1, 0, 1]),
    }
    for name, (dtype, shape, values) in bits.items():
        got = tensors[name]
        check(got[0] == dtype and got[1] == shape, "%s: %s %s" % (name, got[0], got[1]))
        check(as_array(got, bits=True).reshape(-1).tolist() == values, "%s bits" % name)
    check(tensors["scalar"][:2] == ("F32", []) and as_array(tensors["scalar"]).item() == 2.5, "scalar")
    check(tensors["empty"][:2] == ("F32", [0, 3]) and tensors["empty"][2] == b"", "empty")
    check(order[-1] == "bool" and order[0] == "i64", "data order %r" % order)


def check_optimizer_and_resume(d, py_model, opt, sched):
    sd = torch.load(os.path.join(d, "optimizer.pt"))
    py = opt.state_dict()
    check(list(sd) == ["state", "param_groups"], "optimizer.pt keys %r" % list(sd))
    check(list(sd["state"]) == list(py["state"]) == [0, 1, 2, 3, 4], "state keys %r" % list(sd["state"]))
    for k, s in sd["state"].items():
        p = py["state"][k]
        check(list(s) == list(p), "state[%d] keys %r vs %r" % (k, list(s), list(p)))
        check(s["step"].dtype == torch.float32 and s["step"].dim() == 0 and s["step"].item() == 3.0,
              "state[%d] step %r" % (k, s["step"]))
        for key in ("exp_avg", "exp_avg_sq"):
            check(torch.equal(s[key], p[key]), "state[%d][%s] differs from Python's" % (k, key))
    for g, p in zip(sd["param_groups"], py["param_groups"]):
        p = {k: v for k, v in p.items() if k != "initial_lr"}  # LambdaLR adds it in Python
        check(g == p, "param group %r != %r" % (g, p))

    sched_sd = torch.load(os.path.join(d, "scheduler.pt"))
    check(sched_sd == sched.state_dict(), "scheduler.pt %r != %r" % (sched_sd, sched.state_dict()))

    # Resume like HF's Trainer: build optimizer and scheduler, then load their states.
    resumed = Tiny()
    resumed.load_state_dict(torch.load(os.path.join(d, "pytorch_model.bin")))
    opt2, sched2 = make_run(resumed, lr=0.5, decay=0.3)
    opt2.load_state_dict(torch.load(os.path.join(d, "optimizer.pt")))
    sched2.load_state_dict(torch.load(os.path.join(d, "scheduler.pt")))
    step(resumed, opt2, sched2, 3)
    step(py_model, opt, sched, 3)
    _, after, _, _ = read_safetensors(os.path.join(d, "after_step4.safetensors"))
    for name, t in resumed.state_dict().items():
        check(torch.equal(t, py_model.state_dict()[name]), "resumed %s differs from the run" % name)
        check(np.array_equal(as_array(after[name]), t.numpy()), "loom's step 4 %s differs" % name)


def write_files_for_cpp(d):
    model = Tiny()
    fill(model, 0.02, -1.0, 0.0)
    with torch.no_grad():
        model.position_ids.copy_(torch.arange(5) + 1)
    sd = model.state_dict()
    write_safetensors(os.path.join(d, "py_model.safetensors"), dict(reversed(sd.items())),
                      {"format": "pt", "writer": "numpy"})
    bad = dict(sd)
    bad["proj.weight"] = torch.zeros(4, 3)
    write_safetensors(os.path.join(d, "py_bad_shape.safetensors"), bad, {"format": "pt"})
    missing = {k: v for k, v in sd.items() if not k.startswith("norm.")}
    missing["lm_head.weight"] = torch.zeros(2, 2)
    write_safetensors(os.path.join(d, "py_missing.safetensors"), missing, None)
    torch.save(sd, os.path.join(d, "py_state_dict.bin"))  # an OrderedDict with _metadata
    torch.save(dict(sd), os.path.join(d, "py_plain.bin"))
    torch.save(sd, os.path.join(d, "py_legacy.bin"), _use_new_zipfile_serialization=False)


def main():
    d = sys.argv[1]
    torch.manual_seed(0)
    model = Tiny()
    fill(model, 0.01, 0.5, -0.3)
    opt, sched = make_run(model)
    for t in range(3):
        step(model, opt, sched, t)
    # Python's own optimizer.pt / scheduler.pt for the C++ side to resume from.
    torch.save(opt.state_dict(), os.path.join(d, "py_optimizer.pt"))
    torch.save(sched.state_dict(), os.path.join(d, "py_scheduler.pt"))
    check_model_files(d, model)
    check_dtypes(d)
    check_optimizer_and_resume(d, model, opt, sched)
    write_files_for_cpp(d)
    print("check_checkpoint.py: all checks passed")


if __name__ == "__main__":
    main()
