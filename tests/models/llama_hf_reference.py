"""The REAL transformers side of //tests/models:llama_hf_interop_test.

Runs transformers 4.41.2's own LlamaForCausalLM (eager attention) against what
llama_parity_tool wrote:
  1. loads DIR/<scenario>/model/ (loom's save) with LlamaForCausalLM.from_pretrained, requiring
     no missing or unexpected keys, and requires HF's logits, loss and every gradient on each
     case_<k>.safetensors within 1e-6 (1 + |HF|) of loom's; for every generate.json entry,
     HF's generate(**config) (sampling after torch.manual_seed(SAMPLING_SEED), the seed loom's
     generator takes) must give exactly loom's sequences. Every call starts from a freshly
     loaded model: 4.41's dynamic NTK rotary embedding keeps the frequencies of the longest
     call for later shorter ones, which loom does not (it computes them per call).
  2. saves a freshly initialised HF model (torch.manual_seed(1234)) to python_model/ and writes
     python_case_<k>.safetensors and python_gen_<name>.safetensors, which llama_parity_tool
     check loads and compares.
usage: llama_hf_reference.py DIR
"""

import json
import os
import sys
import warnings

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig, LlamaForCausalLM

TOLERANCE = 1e-6
INPUTS = ("input_ids", "attention_mask", "labels")
SAMPLING_SEED = 20261129  # llama_parity_tool's kSamplingSeed

transformers.logging.set_verbosity_error()
warnings.simplefilter("ignore")


def load(folder):
    model, info = LlamaForCausalLM.from_pretrained(folder, output_loading_info=True,
                                                   attn_implementation="eager")
    if info["missing_keys"] or info["unexpected_keys"]:
        sys.exit(f"FAIL: {folder}: missing {info['missing_keys']}, "
                 f"unexpected {info['unexpected_keys']}")
    return model.eval()


def run(model, case):
    model.eval()
    model.zero_grad()
    out = model(**{k: case[k] for k in INPUTS})
    out.loss.backward()
    result = {k: case[k] for k in INPUTS}
    result["logits"] = out.logits.detach()
    result["loss"] = out.loss.detach()
    for name, p in model.named_parameters():
        if name == "lm_head.weight" and model.config.tie_word_embeddings:
            continue  # the tied alias: the embedding's own gradient
        result["grad." + name] = p.grad.detach().clone()
    return result


def check_case(folder, path):
    case = load_file(path)
    mine = run(load(folder), case)
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
    torch.manual_seed(SAMPLING_SEED)
    with torch.no_grad():
        return model.generate(input_ids=case["input_ids"], attention_mask=case["attention_mask"],
                              **entry["config"])


def check_generations(folder, sdir):
    for entry in generations(sdir):
        want = hf_generate(load(folder), sdir, entry)
        got = load_file(os.path.join(sdir, f"gen_{entry['name']}.safetensors"))["sequences"]
        if got.shape != want.shape or not torch.equal(got, want):
            sys.exit(f"FAIL: {sdir} generate {entry['name']} {entry['config']}:\n"
                     f"  loom         {got.tolist()}\n  transformers {want.tolist()}")


def write_own(sdir, cases):
    torch.manual_seed(1234)
    config = LlamaConfig.from_pretrained(os.path.join(sdir, "model"))
    config.initializer_range = 0.2
    fresh = LlamaForCausalLM(config)
    with torch.no_grad():  # as llama_parity_tool's FavourEos
        head = fresh.lm_head.weight
        head[2].add_(head.mean(0) * 8.0)
    out = os.path.join(sdir, "python_model")
    fresh.save_pretrained(out)
    for entry in generations(sdir):
        save_file({"sequences": hf_generate(load(out), sdir, entry).contiguous()},
                  os.path.join(sdir, f"python_gen_{entry['name']}.safetensors"))
    for name in cases:
        case = load_file(os.path.join(sdir, name))
        save_file({k: v.contiguous() for k, v in run(load(out), case).items()},
                  os.path.join(sdir, "python_" + name))


def check_scenario(sdir):
    folder = os.path.join(sdir, "model")
    cases = sorted(f for f in os.listdir(sdir) if f.startswith("case_"))
    for name in cases:
        check_case(folder, os.path.join(sdir, name))
    check_generations(folder, sdir)
    write_own(sdir, cases)
    print(f"{os.path.basename(sdir)}: transformers {transformers.__version__} matches loom on "
          f"{len(cases)} cases (logits, loss, every gradient) and {len(generations(sdir))} "
          f"generate calls")


def main():
    torch.set_num_threads(1)
    root = sys.argv[1]
    for scenario in sorted(os.listdir(root)):
        check_scenario(os.path.join(root, scenario))


if __name__ == "__main__":
    main()
