"""Python reference for //tests/models:bert_autocast_parity_test ("Autocast parity").

One training step of a tiny BertForSequenceClassification under bf16 CPU autocast, as
transformers 4.38-4.41 + accelerate 0.27 run it, compared BITWISE with loom's (written by
bert_autocast_tool). Debian's torch 1.13 is the same LibTorch build loom links, so every aten op
runs the same kernel on both sides; what could differ is the op sequence, and loom's BERT
follows transformers' (at::linear for nn.Linear, HF's left-to-right activations, labels
passed as given).

HF's step (`hf_step`): accelerate wraps model.forward as
convert_outputs_to_fp32(torch.autocast("cpu", dtype=torch.bfloat16)(forward)), the Trainer's
compute_loss_context_manager enters torch.cpu.amp.autocast around the call, and loss.backward()
runs outside autocast. The model is bert_reference.py's Classifier (transformers' op order), in
train() mode with every dropout probability 0 (no RNG), one intra-op thread.

usage: bert_autocast_reference.py DIR   (DIR as written by `bert_autocast_tool write DIR`)

For every scenario DIR/<name>/ it runs HF's step on model/ and inputs.safetensors and requires
loom.safetensors' logits, loss (fp32 after convert_outputs_to_fp32) and every parameter's
gradient to be bitwise equal (same dtype, torch.equal). On a difference it lists every
differing tensor with its max abs difference, logits and loss first, then the gradients from
the classifier back to the embeddings (the first one in backward order is where the
computations part). Exits 1 on any difference.
"""

import importlib.util
import json
import os
import sys

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
_SPEC = importlib.util.spec_from_file_location("bert_reference",
                                               os.path.join(_HERE, "bert_reference.py"))
ref = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ref)

SCENARIOS = ["gelu_fast", "gelu_python", "multi_label", "quick_gelu", "regression",
             "single_label", "trained_weights"]


def fail(message):
    print("bert_autocast_reference.py: FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def _to_fp32(t):
    """accelerate's convert_outputs_to_fp32: .float() on fp16 / bf16 tensors only."""
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def load_model(sdir):
    with open(os.path.join(sdir, "model", "config.json")) as f:
        cfg = json.load(f)
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"):
        if cfg.get(key) not in (None, 0):
            fail(f"{sdir}: {key} = {cfg[key]}: the test needs dropout 0 (no RNG)")
    model = ref.Classifier(cfg)
    weights = ref.read_safetensors(os.path.join(sdir, "model", "model.safetensors"))
    model.load_state_dict(dict(weights), strict=True)
    return model.train()


def hf_step(model, inputs):
    """Trainer.training_step's forward and backward under bf16 cpu_amp."""
    model.zero_grad(set_to_none=True)
    forward = torch.autocast("cpu", dtype=torch.bfloat16)(model.forward)  # accelerate
    with torch.autocast("cpu", dtype=torch.bfloat16):  # compute_loss_context_manager
        logits, loss = forward(**inputs)
        logits, loss = _to_fp32(logits), _to_fp32(loss)
    loss.backward()
    out = {"logits": logits.detach(), "loss": loss.detach().reshape(1)}
    for name, p in model.named_parameters():
        out["grad/" + name] = p.grad.clone()
    return out


def check_scenario(sdir):
    name = os.path.basename(sdir)
    inputs = dict(ref.read_safetensors(os.path.join(sdir, "inputs.safetensors")))
    loom = dict(ref.read_safetensors(os.path.join(sdir, "loom.safetensors")))
    hf = hf_step(load_model(sdir), inputs)
    compared, differing = ref.step_differences(loom, hf)
    if differing:
        fail(f"{name}: {len(differing)} of {compared} tensors are not bitwise equal to HF's "
             "step under torch.autocast:\n  " + "\n  ".join(differing))
    print(f"  {name}: logits, loss and {compared - 2} gradients bitwise equal")
    return compared


def main():
    if len(sys.argv) != 2:
        fail("usage: bert_autocast_reference.py DIR")
    torch.set_num_threads(1)
    root = sys.argv[1]
    found = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if found != SCENARIOS:
        fail(f"scenarios {found} under {root}, expected {SCENARIOS}")
    total = sum(check_scenario(os.path.join(root, n)) for n in found)
    print(f"bert_autocast_reference.py: {len(found)} scenarios, {total} tensors, all bitwise "
          "equal to HF's bf16 autocast step")


if __name__ == "__main__":
    main()
