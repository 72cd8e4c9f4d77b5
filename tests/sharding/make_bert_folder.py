"""make_bert_folder.py DEMO_DIR OUT_DIR HIDDEN LAYERS INTERMEDIATE HEADS: a BERT sequence
classifier folder (config.json, pytorch_model.bin, the demo's tokenizer files) of the given size
with the demo's vocabulary, randomly initialised as BERT's _init_weights does (normal 0.02,
LayerNorm 1 / 0, biases 0) — for tests that need a bigger model than the demo's."""
import collections
import json
import os
import shutil
import sys

import torch

demo, out = sys.argv[1], sys.argv[2]
hidden, layers, inter, heads = (int(v) for v in sys.argv[3:7])
os.makedirs(out, exist_ok=True)
config = json.load(open(os.path.join(demo, "config.json")))
config.update(hidden_size=hidden, num_hidden_layers=layers, intermediate_size=inter,
              num_attention_heads=heads)
json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=2)
for name in os.listdir(demo):
    if "token" in name or name == "vocab.txt":
        shutil.copy(os.path.join(demo, name), out)
V, P, T, L = (config["vocab_size"], config["max_position_embeddings"], config["type_vocab_size"],
              len(config["id2label"]))
g = torch.Generator().manual_seed(0)
sd = collections.OrderedDict()


def linear(prefix, n_out, n_in):
    sd[prefix + ".weight"] = torch.randn(n_out, n_in, generator=g) * 0.02
    sd[prefix + ".bias"] = torch.zeros(n_out)


def norm(prefix):
    sd[prefix + ".weight"] = torch.ones(hidden)
    sd[prefix + ".bias"] = torch.zeros(hidden)


for name, rows in (("word", V), ("position", P), ("token_type", T)):
    sd[f"bert.embeddings.{name}_embeddings.weight"] = torch.randn(rows, hidden, generator=g) * 0.02
norm("bert.embeddings.LayerNorm")
for i in range(layers):
    p = f"bert.encoder.layer.{i}"
    for m in ("query", "key", "value"):
        linear(f"{p}.attention.self.{m}", hidden, hidden)
    linear(f"{p}.attention.output.dense", hidden, hidden)
    norm(f"{p}.attention.output.LayerNorm")
    linear(f"{p}.intermediate.dense", inter, hidden)
    linear(f"{p}.output.dense", hidden, inter)
    norm(f"{p}.output.LayerNorm")
linear("bert.pooler.dense", hidden, hidden)
linear("classifier", L, hidden)
torch.save(sd, os.path.join(out, "pytorch_model.bin"))
print(f"make_bert_folder.py: {sum(t.numel() for t in sd.values()) / 1e6:.1f}M parameters")
