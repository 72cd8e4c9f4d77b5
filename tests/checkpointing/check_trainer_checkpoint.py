"""Python half of python_interop_test.sh (Debian's /usr/bin/python3 with torch 1.13 + numpy).

    check_trainer_checkpoint.py DIR

Reads DIR/out/checkpoint-8, which loom's Trainer wrote (interop_tool DIR), file by file with
Python only, and compares it with what the C++ side recorded at that save in DIR/expected.pt
(torch.save-compatible pickle of name -> tensor) and DIR/expected.json:
  model.safetensors    a numpy-only reader written here from the format (8-byte little-endian
                       header length, JSON header, raw little-endian data): metadata
                       {"format": "pt"}, names, dtypes, shapes, offsets tiling the data, and
                       values equal bit for bit to the model at the save;
  optimizer.pt         torch.load: {"state", "param_groups"} in torch 1.13 AdamW's layout,
                       exp_avg / exp_avg_sq equal to loom's, shapes equal to the parameters';
                       it loads into a Python torch.optim.AdamW;
  scheduler.pt         torch.load: LambdaLR's state_dict keys, last_epoch == global_step;
  rng_state.pth        torch.load: HF's keys ("python", "numpy", "cpu") usable by random /
                       numpy / torch.set_rng_state, "cpu" equal to the generator at the save;
  training_args.bin    torch.load: a transformers TrainingArguments (from PYTHONPATH) whose
                       fields hold the run's values;
  trainer_state.json   json: exactly HF 4.38's TrainerState fields (loom's default
                       --save_for_transformers_version 4.38: 4.41's less stateful_callbacks;
                       tests/checkpoint has real transformers read both layouts), written as HF's
                       json.dumps(asdict(state), indent=2, sort_keys=True) + "\n";
  loom_manifest.json   every other file listed with its size and CRC-32C (computed here);
  loom_resume.json, loom_epoch_rng_state.pth   parse.
Raises (non-zero exit) on the first mismatch.
"""
import json
import os
import random
import struct
import sys

import numpy as np
import torch
from transformers.training_args import TrainingArguments

# dataclasses.fields(transformers.TrainerState) in transformers 4.38 (4.41 adds
# "stateful_callbacks", which loom writes only with --save_for_transformers_version 4.41).
HF_TRAINER_STATE_FIELDS = {
    "epoch", "global_step", "max_steps", "logging_steps", "eval_steps", "save_steps",
    "train_batch_size", "num_train_epochs", "num_input_tokens_seen", "total_flos",
    "log_history", "best_metric", "best_model_checkpoint", "is_local_process_zero",
    "is_world_process_zero", "is_hyper_param_search", "trial_name", "trial_params",
}
CHECKPOINT_FILES = [
    "loom_epoch_rng_state.pth", "loom_manifest.json", "loom_resume.json", "model.safetensors",
    "optimizer.pt", "rng_state.pth", "scheduler.pt", "trainer_state.json", "training_args.bin",
]
SAFETENSORS_NUMPY = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
                     "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def read_safetensors(path):
    """Returns (metadata, {name: numpy array}) from the format description alone."""
    with open(path, "rb") as f:
        data = f.read()
    check(len(data) >= 8, "%s: shorter than the length prefix" % path)
    (n,) = struct.unpack("<Q", data[:8])
    check(8 + n <= len(data), "%s: header length %d beyond the file" % (path, n))
    header = json.loads(data[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", None)
    buffer = data[8 + n:]
    tensors = {}
    end = 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        check(set(info) == {"dtype", "shape", "data_offsets"}, "%s: header keys" % name)
        begin, stop = info["data_offsets"]
        check(begin == end, "%s: offsets do not tile the data" % name)
        dtype = np.dtype(SAFETENSORS_NUMPY[info["dtype"]])
        count = int(np.prod(info["shape"], dtype=np.int64))
        check(stop - begin == count * dtype.itemsize, "%s: byte count" % name)
        tensors[name] = (info["dtype"], np.frombuffer(buffer[begin:stop], dtype=dtype)
                         .reshape(info["shape"]))
        end = stop
    check(end == len(buffer), "%s: data not fully covered" % path)
    return metadata, tensors


def crc32c(data):
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bitwise."""
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def same_bits(a, b):
    """Bitwise equality of two float32 tensors / arrays."""
    a = np.ascontiguousarray(np.asarray(a, dtype="<f4")).view("<u4")
    b = np.ascontiguousarray(np.asarray(b, dtype="<f4")).view("<u4")
    return a.shape == b.shape and np.array_equal(a, b)


def main(root):
    with open(os.path.join(root, "expected.json")) as f:
        info = json.load(f)
    expected = torch.load(os.path.join(root, "expected.pt"))
    out_dir = os.path.join(root, "out")
    ckpt = os.path.join(out_dir, "checkpoint-8")
    check(info["checkpoint"] == ckpt, "expected.json checkpoint %r" % info["checkpoint"])
    step = info["global_step"]
    check(step == 8, "expected.json global_step")
    check(sorted(os.listdir(out_dir)) == ["checkpoint-12", "checkpoint-4", "checkpoint-8"],
          "output dir holds %r" % sorted(os.listdir(out_dir)))
    check(sorted(os.listdir(ckpt)) == CHECKPOINT_FILES, "folder holds %r" % os.listdir(ckpt))
    names = info["param_names"]
    model = {k[len("model."):]: v for k, v in expected.items() if k.startswith("model.")}
    check(set(model) == {"embed.weight", "fc.weight", "fc.bias"}, "expected model keys")

    # model.safetensors
    metadata, tensors = read_safetensors(os.path.join(ckpt, "model.safetensors"))
    check(metadata == {"format": "pt"}, "safetensors metadata %r" % metadata)
    check(set(tensors) == set(model), "safetensors names %r" % sorted(tensors))
    for name, (dtype, array) in tensors.items():
        check(dtype == "F32", "%s dtype %s" % (name, dtype))
        check(list(array.shape) == list(model[name].shape), "%s shape" % name)
        check(same_bits(array, model[name].numpy()), "%s values differ from C++" % name)

    # optimizer.pt
    opt = torch.load(os.path.join(ckpt, "optimizer.pt"), map_location="cpu")
    check(isinstance(opt, dict) and set(opt) == {"state", "param_groups"},
          "optimizer.pt keys %r" % list(opt))
    check(set(opt["state"]) == set(range(len(names))), "state indices %r" % list(opt["state"]))
    check([g["params"] for g in opt["param_groups"]] == info["param_groups"], "group params")
    # The group layout of torch 1.13's own AdamW (loom leaves out LambdaLR's "initial_lr").
    ref = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=0.05)
    ref_keys = set(ref.state_dict()["param_groups"][0])
    for g, decay in zip(opt["param_groups"], [0.01, 0.0]):
        check(set(g) == ref_keys, "group keys %r vs torch's %r" % (sorted(g), sorted(ref_keys)))
        check(g["weight_decay"] == decay, "weight_decay %r" % g["weight_decay"])
        check(g["lr"] == info["last_lr"][0], "group lr %r" % g["lr"])
        check(tuple(g["betas"]) == (0.9, 0.999) and g["eps"] == 1e-8, "betas / eps")
    for i, name in enumerate(names):
        s = opt["state"][i]
        check(set(s) == {"step", "exp_avg", "exp_avg_sq"}, "state %d keys %r" % (i, list(s)))
        check(float(s["step"]) == step, "state %d step %r" % (i, s["step"]))
        for key in ("exp_avg", "exp_avg_sq"):
            check(s[key].shape == model[name].shape, "%s %s shape" % (name, key))
            check(same_bits(s[key], expected["%s.%d" % (key, i)]), "%s %s values" % (name, key))
    params = [torch.nn.Parameter(model[n].clone()) for n in names]
    py_opt = torch.optim.AdamW([{"params": [params[i] for i in idx]}
                                for idx in info["param_groups"]], lr=0.05)
    py_opt.load_state_dict(opt)
    for i in range(len(names)):
        check(torch.equal(py_opt.state[params[i]]["exp_avg"], opt["state"][i]["exp_avg"]),
              "AdamW.load_state_dict %d" % i)

    # scheduler.pt
    sched = torch.load(os.path.join(ckpt, "scheduler.pt"))
    p = torch.nn.Parameter(torch.zeros(1))
    ref_sched = torch.optim.lr_scheduler.LambdaLR(torch.optim.AdamW([p], lr=0.05), lambda s: 1.0)
    check(set(sched) == set(ref_sched.state_dict()), "scheduler.pt keys %r" % sorted(sched))
    check(sched["last_epoch"] == step, "last_epoch %r" % sched["last_epoch"])
    check(sched["_step_count"] == step + 1, "_step_count %r" % sched["_step_count"])
    check(sched["base_lrs"] == [0.05, 0.05], "base_lrs %r" % sched["base_lrs"])
    check(sched["_last_lr"] == info["last_lr"], "_last_lr %r" % sched["_last_lr"])

    # rng_state.pth (HF _load_rng_state's calls)
    rng = torch.load(os.path.join(ckpt, "rng_state.pth"))
    check({"python", "numpy", "cpu"} <= set(rng), "rng_state.pth keys %r" % sorted(rng))
    check("cuda" not in rng, "a CPU run has no cuda entry")
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    check(rng["cpu"].dtype == torch.uint8 and torch.equal(rng["cpu"], expected["cpu_rng"]),
          "rng_state.pth cpu differs from the generator at the save")
    torch.set_rng_state(rng["cpu"])
    check(torch.equal(torch.get_rng_state(), expected["cpu_rng"]), "set_rng_state round trip")
    epoch_rng = torch.load(os.path.join(ckpt, "loom_epoch_rng_state.pth"))
    check(epoch_rng["cpu"].dtype == torch.uint8, "loom_epoch_rng_state.pth cpu")

    # training_args.bin
    # A pickled TrainingArguments: torch >= 2.6 loads it only with weights_only=False, as
    # transformers itself does.
    args_object = torch.load(os.path.join(ckpt, "training_args.bin"), weights_only=False)
    check(isinstance(args_object, TrainingArguments),
          "training_args.bin is a %s" % type(args_object))
    args = vars(args_object)  # enum members compare equal to their values (str enums)
    for key, value in [("output_dir", out_dir), ("learning_rate", 0.05), ("weight_decay", 0.01),
                       ("num_train_epochs", 3), ("per_device_train_batch_size", 4),
                       ("save_steps", 4), ("eval_steps", 4), ("logging_steps", 2),
                       ("eval_strategy", "steps"), ("save_strategy", "steps"), ("seed", 3),
                       ("data_seed", 7), ("metric_for_best_model", "score"),
                       ("greater_is_better", True), ("load_best_model_at_end", False),
                       ("save_safetensors", True), ("save_only_model", False),
                       ("save_total_limit", None)]:
        check(key in args and args[key] == value, "training_args %s = %r" % (key, args.get(key)))

    # trainer_state.json
    with open(os.path.join(ckpt, "trainer_state.json")) as f:
        text = f.read()
    state = json.loads(text)
    check(set(state) == HF_TRAINER_STATE_FIELDS,
          "trainer_state keys differ from HF 4.38: %r" % (set(state) ^ HF_TRAINER_STATE_FIELDS))
    check(text == json.dumps(state, indent=2, sort_keys=True) + "\n", "not HF's json.dumps text")
    for key, value in [("global_step", 8), ("epoch", 2.0), ("max_steps", 12),
                       ("logging_steps", 2), ("eval_steps", 4), ("save_steps", 4),
                       ("train_batch_size", 4), ("num_train_epochs", 3), ("best_metric", 0.8),
                       ("best_model_checkpoint", ckpt), ("is_hyper_param_search", False),
                       ("trial_name", None), ("trial_params", None)]:
        check(state[key] == value, "trainer_state %s = %r" % (key, state[key]))
    kinds = [(e["step"], "eval" if "eval_loss" in e else "train") for e in state["log_history"]]
    check(kinds == [(2, "train"), (4, "train"), (4, "eval"), (6, "train"), (8, "train"),
                    (8, "eval")], "log_history %r" % kinds)
    scores = [e["eval_score"] for e in state["log_history"] if "eval_score" in e]
    check(scores == [0.5, 0.8], "eval_score %r" % scores)

    # loom_manifest.json
    with open(os.path.join(ckpt, "loom_manifest.json")) as f:
        manifest = json.load(f)
    check(manifest["format"] == "loom-checkpoint-manifest" and manifest["version"] == 1,
          "manifest format")
    listed = [e["path"] for e in manifest["files"]]
    check(listed == [n for n in CHECKPOINT_FILES if n != "loom_manifest.json"],
          "manifest lists %r" % listed)
    for e in manifest["files"]:
        with open(os.path.join(ckpt, e["path"]), "rb") as f:
            data = f.read()
        check(e["size"] == len(data), "%s size" % e["path"])
        check(e["crc32c"] == "%08x" % crc32c(data), "%s crc32c" % e["path"])
    with open(os.path.join(ckpt, "loom_resume.json")) as f:
        resume = json.load(f)
    check(resume["total_batched_samples"] == 8, "loom_resume.json %r" % resume)
    print("check_trainer_checkpoint: every file of %s read by Python matches" % ckpt)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_trainer_checkpoint.py DIR")
    main(sys.argv[1])
