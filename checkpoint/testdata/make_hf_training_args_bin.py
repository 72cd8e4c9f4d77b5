"""Writes hf_<version>/training_args.bin as transformers' Trainer._save writes it
(torch.save(self.args, os.path.join(output_dir, "training_args.bin"))), for
checkpoint:training_args_file_test.

Run with Debian's /usr/bin/python3 (torch 1.13) and a real transformers (4.38.2 or 4.41.2, with
accelerate 0.27.2) on PYTHONPATH; the files in this folder were written on CPU, Python 3.11.
The token is a fake: loom's reader must drop it.
"""
import os

import torch
import transformers
from transformers import TrainingArguments

args = TrainingArguments(
    output_dir="out", learning_rate=3e-5, fsdp="full_shard auto_wrap", hub_token="hf_FAKE_GOLDEN",
    report_to="none", lr_scheduler_type="cosine", lr_scheduler_kwargs={"num_cycles": 2},
    logging_dir="out/runs/golden", logging_steps=50, save_strategy="epoch", seed=7,
    debug="underflow_overflow", use_cpu=True, optim="adafactor")
out_dir = "hf_%s" % transformers.__version__
os.makedirs(out_dir, exist_ok=True)
out = os.path.join(out_dir, "training_args.bin")
torch.save(args, out)
print("wrote", out)
