"""Loads loom's training_args.bin with torch.load and checks it is the object HF's Trainer pickles.

Usage: check_training_args_bin.py TRAINING_ARGS_BIN TO_JSON_STRING
`transformers` is imported from PYTHONPATH: real transformers 4.38.2 or 4.41.2 (the pinned
packages ./bazelw installs). TO_JSON_STRING is loom's
to_json_string() of the same arguments, which the object's fields must match.
The command line (tests/checkpoint/training_args_bin_python_test.sh) sets --learning_rate 2e-5,
--fsdp "full_shard auto_wrap", --lr_scheduler_type cosine, --report_to none,
--lr_scheduler_kwargs '{"num_cycles": 2}', --debug underflow_overflow, --use_cpu and two tokens.
"""
import json
import sys

import torch
from transformers.debug_utils import DebugOption
from transformers.trainer_pt_utils import AcceleratorConfig
from transformers.trainer_utils import FSDPOption, HubStrategy, IntervalStrategy, SchedulerType
from transformers.training_args import OptimizerNames, TrainingArguments

path, json_path = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read()
with open(json_path) as f:
    expected = json.load(f)

args = torch.load(path, weights_only=False)
assert isinstance(args, TrainingArguments), type(args)
assert type(args) is TrainingArguments, type(args)
d = vars(args)

# Every field of to_dict(), in HF's order, then _n_gpu; no device objects.
assert list(d) == list(expected) + ["_n_gpu"], (list(d)[:3], list(d)[-3:])
assert list(d)[0] == "output_dir" and list(expected)[-1] == "batch_eval_metrics", list(d)[-2:]
assert d["_n_gpu"] == 0, d["_n_gpu"]  # --use_cpu
assert "distributed_state" not in d and "__cached__setup_devices" not in d

# Values as HF's __post_init__ leaves them.
assert args.output_dir == "out"
assert args.learning_rate == 2e-05 and type(args.learning_rate) is float
assert args.per_device_train_batch_size == 8 and type(args.per_device_train_batch_size) is int
assert args.fsdp == [FSDPOption.FULL_SHARD, FSDPOption.AUTO_WRAP], args.fsdp
assert all(type(o) is FSDPOption for o in args.fsdp), args.fsdp
assert args.debug == [DebugOption.UNDERFLOW_OVERFLOW] and type(args.debug[0]) is DebugOption
assert args.lr_scheduler_type is SchedulerType.COSINE, args.lr_scheduler_type
assert args.eval_strategy is IntervalStrategy.NO, args.eval_strategy
assert args.logging_strategy is IntervalStrategy.STEPS, args.logging_strategy
assert args.save_strategy is IntervalStrategy.STEPS, args.save_strategy
assert args.hub_strategy is HubStrategy.EVERY_SAVE, args.hub_strategy
assert args.optim is OptimizerNames.ADAMW_TORCH, args.optim
assert args.evaluation_strategy is None, args.evaluation_strategy
assert args.report_to == [], args.report_to
assert args.eval_steps is None
assert args.lr_scheduler_kwargs == {"num_cycles": 2}, args.lr_scheduler_kwargs
assert args.fsdp_config == {"min_num_params": 0, "xla": False, "xla_fsdp_v2": False,
                            "xla_fsdp_grad_ckpt": False}, args.fsdp_config
assert type(args.accelerator_config) is AcceleratorConfig, type(args.accelerator_config)
assert vars(args.accelerator_config) == expected["accelerator_config"]

# Tokens are never written: None in the object, absent from the bytes (stored, not compressed).
assert args.hub_token is None and args.push_to_hub_token is None
assert expected["hub_token"] == "<HUB_TOKEN>"
for secret in (b"hf_SECRET", b"hf_OTHER"):
    assert secret not in raw, secret
assert "hf_SECRET" not in repr(d)

# Every other field equals to_dict()'s value (enums compare by value), with the same type.
enums = {"eval_strategy", "logging_strategy", "save_strategy", "lr_scheduler_type", "hub_strategy",
         "optim", "fsdp", "debug", "accelerator_config"}
for key, want in expected.items():
    if key in enums or key.endswith("_token"):
        continue
    got = d[key]
    assert got == want and type(got) is type(want), (key, got, want)

# transformers' own to_dict() of the loaded object gives loom's JSON back
# (AcceleratorConfig aside: its dataclass adds its class defaults for keys loom has not got;
# and only the fields the installed version has: 4.38 has no eval_strategy), and the device
# objects loom leaves out are recomputed on first use (_setup_devices).
real = args.to_dict()
for key, want in expected.items():
    if key != "accelerator_config" and key in real:
        assert real[key] == want, (key, real[key], want)
assert str(args.device) == "cpu" and args.n_gpu == 0, (args.device, args.n_gpu)
print("real transformers: to_dict() matches, device", args.device)

print("training_args.bin OK:", type(args).__module__, type(args).__name__, len(d), "attributes")
