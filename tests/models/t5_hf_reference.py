"""The REAL transformers side of //tests/models:t5_hf_interop_test.

Runs transformers' own T5ForConditionalGeneration (4.41.2 or 4.38.2, pinned in
third_party/python) against what t5_parity_tool wrote, under the same contract as
t5_reference.py:
  1. loads DIR/<scenario>/model/ (loom's save) with T5ForConditionalGeneration.from_pretrained,
     requiring no missing or unexpected keys, and requires HF's logits, loss, encoder output and
     every gradient on each case_<k>.safetensors within 1e-6 (1 + |HF|) of loom's;
     and, for every entry of generate.json, requires HF's generate(**config) on the case's
     input_ids / attention_mask to give exactly loom's gen_<name>.safetensors sequences;
  2. saves a freshly initialised HF model (torch.manual_seed(1234)) to python_model/ with
     save_pretrained and writes python_case_<k>.safetensors (the same inputs, HF's outputs and
     gradients) and python_gen_<name>.safetensors (HF's generate on it), which
     t5_parity_tool check loads and compares.
usage: t5_hf_reference.py DIR
"""

import json
import os
import sys
import warnings

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import T5Config, T5ForConditionalGeneration

TOLERANCE = 1e-6
INPUTS = ("input_ids", "attention_mask", "labels")

transformers.logging.set_verbosity_error()
warnings.simplefilter("ignore")


def run(model, case):
    model.eval()
    model.zero_grad()
    out = model(**{k: case[k] for k in INPUTS})
    out.loss.backward()
    result = {k: case[k] for k in INPUTS}
    result["logits"] = out.logits.detach()
    result["loss"] = out.loss.detach()
    result["encoder_last_hidden_state"] = out.encoder_last_hidden_state.detach()
    for name, p in model.named_parameters():
        result["grad." + name] = p.grad.detach().clone()
    return result


def check_case(model, path):
    case = load_file(path)
    mine = run(model, case)
    for name, want in mine.items():
        if name not in case:
            sys.exit(f"FAIL: {path} lacks {name}")
        excess = (case[name].double() - want.double()).abs() - TOLERANCE * (1 + want.double().abs())
        if excess.numel() and excess.max().item() > 0:
            diff = (case[name].double() - want.double()).abs().max().item()
            sys.exit(f"FAIL: {path} {name}: max |loom - transformers| = {diff}")


def generations(sdir):
    with open(os.path.join(sdir, "generate.json")) as f:
        return json.load(f)


def hf_generate(model, sdir, entry):
    case = load_file(os.path.join(sdir, f"case_{entry['case']}.safetensors"))
    with torch.no_grad():
        return model.generate(input_ids=case["input_ids"], attention_mask=case["attention_mask"],
                              **entry["config"])


def check_generations(model, sdir):
    ended = 0
    for entry in generations(sdir):
        want = hf_generate(model, sdir, entry)
        got = load_file(os.path.join(sdir, f"gen_{entry['name']}.safetensors"))["sequences"]
        if got.shape != want.shape or not torch.equal(got, want):
            sys.exit(f"FAIL: {sdir} generate {entry['name']} {entry['config']}:\n"
                     f"  loom         {got.tolist()}\n  transformers {want.tolist()}")
        ended += int((want == 1).any(dim=1).sum())
    return ended


def check_scenario(sdir):
    model, info = T5ForConditionalGeneration.from_pretrained(
        os.path.join(sdir, "model"), output_loading_info=True)
    if info["missing_keys"] or info["unexpected_keys"]:
        sys.exit(f"FAIL: {sdir}/model: missing {info['missing_keys']}, "
                 f"unexpected {info['unexpected_keys']}")
    cases = sorted(f for f in os.listdir(sdir) if f.startswith("case_"))
    for name in cases:
        check_case(model, os.path.join(sdir, name))
    ended = check_generations(model.eval(), sdir)
    torch.manual_seed(1234)
    fresh = T5ForConditionalGeneration(T5Config.from_pretrained(os.path.join(sdir, "model")))
    with torch.no_grad():  # as t5_parity_tool's Sharpen: eos a frequent choice
        fresh.shared.weight.mul_(2.0)
        head = fresh.shared.weight if fresh.config.tie_word_embeddings else fresh.lm_head.weight
        head[1].add_(head.mean(0) * 20.0)
    fresh.save_pretrained(os.path.join(sdir, "python_model"))
    for entry in generations(sdir):
        save_file({"sequences": hf_generate(fresh.eval(), sdir, entry).contiguous()},
                  os.path.join(sdir, f"python_gen_{entry['name']}.safetensors"))
    for name in cases:
        case = load_file(os.path.join(sdir, name))
        save_file({k: v.contiguous() for k, v in run(fresh, case).items()},
                  os.path.join(sdir, "python_" + name))
    print(f"{os.path.basename(sdir)}: transformers {transformers.__version__} matches loom on "
          f"{len(cases)} cases (logits, loss, encoder output, every gradient) and "
          f"{len(generations(sdir))} generate calls ({ended} sequences ended with eos)")


def main():
    torch.set_num_threads(1)
    root = sys.argv[1]
    for scenario in sorted(os.listdir(root)):
        check_scenario(os.path.join(root, scenario))


if __name__ == "__main__":
    main()
