"""What the Python-reference parity tests in tests/models share: failing with a reason, the
elementwise tolerance check, reading the C++ tool's scenario folders (cases, generate.json, the
model folder's JSON files), loading weights whose keys must match exactly, checking a case's
outputs and a generation against a model's, and the loop over scenario folders. Only torch and
numpy are needed.
"""

import json
import math
import os
import re
import sys

import numpy as np
import torch

from safetensors_io import read_safetensors

TOLERANCE = 1e-6


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def require_close(where, name, cpp, ref):
    """|cpp - ref| <= TOLERANCE (1 + |ref|) elementwise, same shape and dtype."""
    if tuple(cpp.shape) != tuple(ref.shape) or cpp.dtype != ref.dtype:
        fail(f"{where} {name}: C++ has {cpp.dtype} {tuple(cpp.shape)}, the reference "
             f"{ref.dtype} {tuple(ref.shape)}")
    diff = (cpp.double() - ref.double()).abs()
    excess = diff - TOLERANCE * (1 + ref.double().abs())
    excess = torch.where(torch.isnan(excess), torch.full_like(excess, math.inf), excess)
    if excess.numel() and excess.max().item() > 0:
        index = tuple(int(i) for i in np.unravel_index(int(excess.argmax()), tuple(cpp.shape)))
        fail(f"{where} {name}: max |C++ - reference| = {diff.max().item():.6g}; worst at index "
             f"{list(index)}: C++ {cpp[index].item()!r}, reference {ref[index].item()!r}")


def list_cases(sdir):
    """{k: path} of the case_<k>.safetensors of a scenario."""
    cases = {}
    for name in os.listdir(sdir):
        match = re.fullmatch(r"case_(\d+)\.safetensors", name)
        if match:
            cases[int(match.group(1))] = os.path.join(sdir, name)
    if not cases:
        fail(f"{sdir}: no case_<k>.safetensors")
    return dict(sorted(cases.items()))


def read_generate_json(sdir, cases):
    path = os.path.join(sdir, "generate.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        entries = json.load(f)
    if not isinstance(entries, list):
        fail(f"{path}: not a list")
    for e in entries:
        if not isinstance(e, dict) or set(e) != {"name", "config", "case"} or \
                not re.fullmatch(r"[A-Za-z0-9_.-]+", str(e["name"])) or \
                not isinstance(e["config"], dict) or e["case"] not in cases:
            fail(f"{path}: bad entry {e!r} (want name, config, case of an existing case_<k>)")
    return entries


def read_model_folder_json(sdir):
    """{file name: text} of model/config.json and, if present, model/generation_config.json."""
    texts = {}
    for name in ("config.json", "generation_config.json"):
        path = os.path.join(sdir, "model", name)
        if os.path.exists(path):
            with open(path) as f:
                texts[name] = f.read()
    if "config.json" not in texts:
        fail(f"{sdir}/model: no config.json")
    return texts


def load_weights(model, weights, where, expected):
    """Requires the file's keys to be `expected` (the model's saved keys) exactly, and f32
    tensors of the parameters' shapes; copies them in (tied modules keep sharing)."""
    file_keys = [name for name, _ in weights]
    missing = sorted(set(expected) - set(file_keys))
    unexpected = sorted(set(file_keys) - set(expected))
    if missing or unexpected or len(set(file_keys)) != len(file_keys):
        fail(f"{where}: keys differ from the reference's: missing {missing}, unexpected "
             f"{unexpected}, {len(file_keys) - len(set(file_keys))} duplicated")
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, tensor in weights:
            if tensor.dtype != torch.float32 or tensor.shape != params[name].shape:
                fail(f"{where}: {name} is {tensor.dtype} {tuple(tensor.shape)}, the reference "
                     f"wants float32 {tuple(params[name].shape)}")
            params[name].copy_(tensor)


def check_case(model, path, run_case, input_names):
    """One case_<k>.safetensors: the C++ outputs (every key run_case returns) must equal the
    reference's within tolerance; the inputs must be 2-d int64 tensors."""
    tensors = dict(read_safetensors(path))
    for name in input_names:
        if name not in tensors or tensors[name].dtype != torch.int64 or tensors[name].dim() != 2:
            fail(f"{path}: {name} must be a 2-d int64 tensor")
    ref = run_case(model, tensors)
    missing = sorted(set(ref) - set(tensors))
    unexpected = sorted(set(tensors) - set(ref) - set(input_names))
    if missing or unexpected:
        fail(f"{path}: missing outputs {missing}, unexpected tensors {unexpected}")
    for name, want in ref.items():
        require_close(path, name, tensors[name], want)


def generate_for(model, entry, cases, where, generate):
    """generate(model, input_ids, attention_mask, config) on the entry's case."""
    inputs = dict(read_safetensors(cases[entry["case"]]))
    try:
        return generate(model, inputs["input_ids"], inputs["attention_mask"], entry["config"])
    except ValueError as e:
        fail(f"{where}: generate {entry['name']}: {e}")


def check_generation(model, sdir, entry, cases, generate):
    """gen_<name>.safetensors' "sequences" must be exactly the reference's generation."""
    path = os.path.join(sdir, f"gen_{entry['name']}.safetensors")
    if not os.path.exists(path):
        fail(f"{path}: missing")
    got = dict(read_safetensors(path))
    if set(got) != {"sequences"}:
        fail(f"{path}: holds {sorted(got)}, not just sequences")
    want = generate_for(model, entry, cases, path, generate)
    cpp = got["sequences"]
    if cpp.dtype != torch.int64 or tuple(cpp.shape) != tuple(want.shape) or \
            not torch.equal(cpp, want):
        fail(f"{path} ({entry['config']} on case {entry['case']}): C++ sequences "
             f"{cpp.dtype} {tuple(cpp.shape)}\n{cpp.tolist()}\nreference {tuple(want.shape)}\n"
             f"{want.tolist()}")


def run_scenarios(program, check_scenario):
    """usage: PROGRAM DIR — check_scenario(DIR/<scenario>) for every sub-folder, sorted, with
    one intra-op thread (as the C++ tools)."""
    if len(sys.argv) != 2:
        fail(f"usage: {program} DIR")
    torch.set_num_threads(1)
    root = sys.argv[1]
    scenarios = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if not scenarios:
        fail(f"no scenarios under {root}")
    for name in scenarios:
        check_scenario(os.path.join(root, name))
