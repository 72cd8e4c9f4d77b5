"""The plain PyTorch training loop //benchmarks:vs_pytorch races loom's Trainer against.

What a user writes in Python for the same job (the Python torch of loom's LibTorch: Debian's
python3-torch 1.13, or the pinned 2.11 wheel): tests/models/bert_reference.py's BERT
(transformers' op order; --attn_implementation eager or sdpa) with loom's weights, the same
examples in the same per-epoch order (randperm seeded with seed + epoch, as HF's sampler),
AdamW with HF's two weight-decay groups, a linear schedule with warmup, clip_grad_norm_(1.0),
zero_grad(set_to_none=True); with --bf16 the forward under torch.autocast("cpu", bfloat16) and
the loss made fp32, backward outside. No logging, no checkpoints.

usage: vs_pytorch_loop.py REFERENCE_PY MODEL_DIR DATA_SAFETENSORS --steps N --batch B [--bf16]
       [--attn_implementation eager|sdpa]
Prints {"samples_per_second": S} for the steps after the first (which warms the kernels up).
"""

import argparse
import importlib.util
import json
import os
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("reference")
    p.add_argument("model_dir")
    p.add_argument("data")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--weight_decay", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--attn_implementation", choices=["eager", "sdpa"], default=None)
    a = p.parse_args()

    spec = importlib.util.spec_from_file_location("bert_reference", a.reference)
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    with open(os.path.join(a.model_dir, "config.json")) as f:
        cfg = json.load(f)
    model = ref.Classifier(cfg, attn_implementation=a.attn_implementation)
    model.load_state_dict(dict(ref.read_safetensors(os.path.join(a.model_dir, "model.safetensors"))))
    model.train()
    data = dict(ref.read_safetensors(a.data))
    ids, mask, labels = data["input_ids"], data["attention_mask"], data["labels"]

    # HF's get_decay_parameter_names: no decay for biases and LayerNorm parameters.
    no_decay = {n for n, _ in model.named_parameters() if "bias" in n or "LayerNorm" in n}
    groups = [
        {"params": [p for n, p in model.named_parameters() if n not in no_decay],
         "weight_decay": a.weight_decay},
        {"params": [p for n, p in model.named_parameters() if n in no_decay], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: k / max(1, a.warmup) if k < a.warmup
        else max(0.0, (a.steps - k) / max(1, a.steps - a.warmup)))

    n = ids.shape[0]
    per_epoch = n // a.batch
    step, start = 0, None
    while step < a.steps:
        order = torch.randperm(n, generator=torch.Generator().manual_seed(a.seed + step // per_epoch))
        for b in range(per_epoch):
            if step == a.steps:
                break
            idx = order[b * a.batch:(b + 1) * a.batch]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
                _, loss = model(ids[idx], attention_mask=mask[idx], labels=labels[idx])
            loss.float().backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            if step == 1:
                start = time.perf_counter()
    elapsed = time.perf_counter() - start
    print(json.dumps({"samples_per_second": (a.steps - 1) * a.batch / elapsed}))


if __name__ == "__main__":
    main()
