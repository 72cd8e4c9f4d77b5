"""Loads a loom training_args.bin with torch.load and checks values and types."""
import sys

import torch

d = torch.load(sys.argv[1])
assert isinstance(d, dict), type(d)
assert len(d) == 125, len(d)
assert list(d)[0] == "output_dir" and list(d)[-1] == "batch_eval_metrics", list(d)[:2]
assert d["output_dir"] == "out"
assert d["learning_rate"] == 2e-05 and isinstance(d["learning_rate"], float)
assert d["per_device_train_batch_size"] == 8 and isinstance(d["per_device_train_batch_size"], int)
assert d["fsdp"] == ["full_shard", "auto_wrap"], d["fsdp"]
assert d["report_to"] == [], d["report_to"]
assert d["eval_steps"] is None
assert d["lr_scheduler_kwargs"] == {"num_cycles": 2}, d["lr_scheduler_kwargs"]
assert d["fsdp_config"] == {"min_num_params": 0, "xla": False, "xla_fsdp_v2": False,
                            "xla_fsdp_grad_ckpt": False}, d["fsdp_config"]
assert d["hub_token"] == "<HUB_TOKEN>", d["hub_token"]
assert "hf_SECRET" not in repr(d)
print("training_args.bin OK:", len(d), "fields")
