"""The Python side of //benchmarks:generate: generation as a PyTorch user writes it, step by step
in Python (tests/models/t5_reference.py's T5 and its greedy / beam search, HF 4.41's rules), on
the weights and inputs the C++ side saved.

usage: generate_loop.py T5_REFERENCE_PY MODEL_DIR INPUTS_SAFETENSORS ROUNDS CONFIG_JSON
  CONFIG_JSON: a list of {"name": ..., "config": {generate fields}}. Prints one JSON line
  {"name": seconds of the best round, ...} (each config runs once untimed first).
"""

import importlib.util
import json
import os
import sys
import time

import torch


def load_module(path, name):
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    reference_path, model_dir, inputs_path, rounds, configs = sys.argv[1:6]
    ref = load_module(reference_path, "t5_reference")
    texts = {}
    for name in ("config.json", "generation_config.json"):
        path = os.path.join(model_dir, name)
        if os.path.exists(path):
            with open(path) as f:
                texts[name] = f.read()
    model = ref.build(texts)
    ref.load_weights(model, ref.read_safetensors(os.path.join(model_dir, "model.safetensors")),
                     model_dir)
    model.eval()
    inputs = dict(ref.read_safetensors(inputs_path))
    best = {}
    with torch.no_grad():
        for entry in json.loads(configs):
            ref.generate(model, inputs["input_ids"], inputs["attention_mask"], entry["config"])
            times = []
            for _ in range(int(rounds)):
                start = time.perf_counter()
                ref.generate(model, inputs["input_ids"], inputs["attention_mask"],
                             entry["config"])
                times.append(time.perf_counter() - start)
            best[entry["name"]] = min(times)
    print(json.dumps(best))


if __name__ == "__main__":
    main()
