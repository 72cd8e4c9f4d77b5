"""Python reference for //tests/models:bert_sdpa_parity_test.

transformers 4.41's BERT attention on the same weights and batch as loom's (bert_sdpa_tool),
in the Python torch of the LibTorch build (the pinned 2.11 wheel by default,
Debian's 1.13 under --config=debian), fp32, one intra-op thread, compared BITWISE:
  - torch >= 2.1.1: the tool must have used "sdpa"; bert_reference.py's Classifier with
    attn_implementation="sdpa" calls torch.nn.functional.scaled_dot_product_attention as
    BertSdpaSelfAttention does (q, k, v from transpose_for_scores, attn_mask from
    _prepare_4d_attention_mask_for_sdpa or None, dropout_p only in training, is_causal False,
    output transpose(1, 2).reshape);
  - older torch: the tool must have used "eager" (sdpa is refused there), and so does this.

usage: bert_sdpa_reference.py DIR   (DIR as written by `bert_sdpa_tool write DIR`)

For every scenario it runs forward + loss.backward() and requires logits, loss and every
parameter's gradient to be bitwise equal (same dtype, torch.equal) to loom.safetensors. On a
difference it lists every differing tensor with its max abs difference, logits and loss first,
then the gradients in backward order (the first of them is where the computations part).
Exits 1 on any difference.
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

SCENARIOS = ["eval_padded", "no_mask", "ones_mask", "padded"]


def fail(message):
    print("bert_sdpa_reference.py: FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def step(sdir, implementation):
    with open(os.path.join(sdir, "model", "config.json")) as f:
        cfg = json.load(f)
    model = ref.Classifier(cfg, attn_implementation=implementation)
    weights = ref.read_safetensors(os.path.join(sdir, "model", "model.safetensors"))
    model.load_state_dict(dict(weights), strict=True)
    train = os.path.basename(sdir) != "eval_padded"
    model.train(train)
    if train and (cfg["hidden_dropout_prob"] != 0 or cfg["attention_probs_dropout_prob"] != 0):
        fail(f"{sdir}: training scenarios need dropout 0 (no RNG)")
    inputs = dict(ref.read_safetensors(os.path.join(sdir, "inputs.safetensors")))
    model.zero_grad(set_to_none=True)
    logits, loss = model(**inputs)
    loss.backward()
    out = {"logits": logits.detach(), "loss": loss.detach().reshape(1)}
    for name, p in model.named_parameters():
        out["grad/" + name] = p.grad.clone()
    return out


def check_scenario(sdir, implementation):
    name = os.path.basename(sdir)
    loom = dict(ref.read_safetensors(os.path.join(sdir, "loom.safetensors")))
    py = step(sdir, implementation)
    compared, differing = ref.step_differences(loom, py)
    if differing:
        fail(f"{name} ({implementation}): {len(differing)} of {compared} tensors are not "
             "bitwise equal:\n  " + "\n  ".join(differing))
    print(f"  {name}: logits, loss and {compared - 2} gradients bitwise equal")
    return compared


def main():
    if len(sys.argv) != 2:
        fail("usage: bert_sdpa_reference.py DIR")
    torch.set_num_threads(1)
    root = sys.argv[1]
    with open(os.path.join(root, "attn_implementation.txt")) as f:
        implementation = f.read().strip()
    expected = "sdpa" if ref.sdpa_available() else "eager"
    if implementation != expected:
        fail(f"loom used attn_implementation={implementation!r} but torch {torch.__version__} "
             f"is a {expected!r} build (sdpa needs torch >= 2.1.1)")
    found = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if found != SCENARIOS:
        fail(f"scenarios {found} under {root}, expected {SCENARIOS}")
    total = sum(check_scenario(os.path.join(root, n), implementation) for n in found)
    print(f"bert_sdpa_reference.py: torch {torch.__version__}, attn_implementation "
          f"{implementation}: {len(found)} scenarios, {total} tensors bitwise equal")


if __name__ == "__main__":
    main()
