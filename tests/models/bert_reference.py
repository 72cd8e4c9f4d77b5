"""Python reference for //tests/models:bert_parity_test.

A BERT sequence classifier written for this test from the published architecture (Devlin et
al. 2019, as transformers 4.38-4.41 lays it out: post-LayerNorm encoder layers, a tanh pooler on
the first token, a linear classifier, additive -finfo.min attention masking, HF's loss choice),
using only the torch of this build (Debian's 1.13, or the pinned 2.11 wheel) and numpy, with
the small safetensors reader and writer of safetensors_io.py (re-exported here).

Attention follows transformers 4.41's two BERT classes: "eager" (BertSelfAttention: matmul,
softmax) and "sdpa" (BertSdpaSelfAttention: torch.nn.functional.scaled_dot_product_attention
with _prepare_4d_attention_mask_for_sdpa's mask, dropout_p only in training). As
_autoset_attn_implementation, Classifier(cfg, attn_implementation) takes the argument, else
config.json's "_attn_implementation", else sdpa where torch >= 2.1.1 has it, eager otherwise.

usage: bert_reference.py DIR
  For every DIR/<scenario>/ written by bert_parity_tool:
  1. builds the reference from model/config.json, reads model/model.safetensors and requires
     its keys to equal the reference's state_dict() keys exactly, loads it (strict);
  2. runs every case_<b>.safetensors and requires logits and loss within 1e-5 of C++'s;
  3. writes python_model/ (config.json and model.safetensors from a freshly initialised
     reference's own state dict) and python_case_<b>.safetensors (the same inputs with the
     reference's outputs) for bert_parity_tool check.
Exits 1 with the reason on the first mismatch.
"""

import json
import math
import os
import re
import sys

import torch
from torch import nn
import torch.nn.functional as F

TOLERANCE = 1e-5

# The safetensors reader/writer lives in safetensors_io.py, next to this file. Its folder is on
# sys.path when this runs as a script; importers that load this file by path
# (importlib.util.spec_from_file_location, e.g. tests/run_glue/check_saved_model.py) may not
# have it there, so add it.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402


# --- the reference model -------------------------------------------------------------------


def activation(name):
    table = {
        "gelu": F.gelu,
        "gelu_python": lambda x: x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0))),
        "gelu_new": lambda x: 0.5 * x * (1.0 + torch.tanh(
            math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0)))),
        "gelu_fast": lambda x: 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 *
                                                            (1.0 + 0.044715 * x * x))),
        "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
        "relu": F.relu,
        "silu": F.silu,
        "swish": F.silu,
        "tanh": torch.tanh,
        "sigmoid": torch.sigmoid,
        "linear": lambda x: x,
    }
    return table[name]


class Embeddings(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h = cfg["hidden_size"]
        self.word_embeddings = nn.Embedding(cfg["vocab_size"], h, padding_idx=cfg["pad_token_id"])
        self.position_embeddings = nn.Embedding(cfg["max_position_embeddings"], h)
        self.token_type_embeddings = nn.Embedding(cfg["type_vocab_size"], h)
        self.LayerNorm = nn.LayerNorm(h, eps=cfg["layer_norm_eps"])
        self.dropout = nn.Dropout(cfg["hidden_dropout_prob"])

    def forward(self, input_ids, token_type_ids, position_ids):
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(x))


def sdpa_available():
    """transformers 4.41 is_torch_sdpa_available: torch >= 2.1.1."""
    version = tuple(int(re.match(r"\d*", p).group() or 0)
                    for p in torch.__version__.split("+")[0].split(".")[:3])
    return version >= (2, 1, 1) and hasattr(F, "scaled_dot_product_attention")


def resolve_attn_implementation(cfg, requested=None):
    """_autoset_attn_implementation for a model that supports sdpa."""
    requested = requested or cfg.get("_attn_implementation")
    if requested is None:
        return "sdpa" if sdpa_available() else "eager"
    if requested not in ("eager", "sdpa"):
        raise ValueError(f"attn_implementation={requested!r} is not supported")
    if requested == "sdpa" and not sdpa_available():
        raise ImportError(f"attn_implementation='sdpa' needs torch >= 2.1.1, not {torch.__version__}")
    return requested


def sdpa_mask(attention_mask, dtype):
    """_prepare_4d_attention_mask_for_sdpa for an encoder (query length = key length)."""
    if torch.all(attention_mask == 1):
        return None
    b, s = attention_mask.shape
    expanded = attention_mask[:, None, None, :].expand(b, 1, s, s).to(dtype)
    inverted = 1.0 - expanded
    return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)


class SelfAttention(nn.Module):
    def __init__(self, cfg, attn_implementation):
        super().__init__()
        h = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.head_dim = h // self.heads
        self.query = nn.Linear(h, h)
        self.key = nn.Linear(h, h)
        self.value = nn.Linear(h, h)
        self.dropout = nn.Dropout(cfg["attention_probs_dropout_prob"])
        self.dropout_prob = cfg["attention_probs_dropout_prob"]
        self.attn_implementation = attn_implementation

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, additive_mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        if self.attn_implementation == "sdpa":
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=additive_mask,
                dropout_p=self.dropout_prob if self.training else 0.0, is_causal=False)
            return out.transpose(1, 2).reshape(x.shape[0], x.shape[1], self.heads * self.head_dim)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + additive_mask
        probs = self.dropout(torch.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).transpose(1, 2).contiguous()
        return ctx.reshape(x.shape[0], x.shape[1], self.heads * self.head_dim)


class AddNorm(nn.Module):
    """dense -> dropout -> LayerNorm(. + residual)."""

    def __init__(self, cfg, in_features):
        super().__init__()
        self.dense = nn.Linear(in_features, cfg["hidden_size"])
        self.LayerNorm = nn.LayerNorm(cfg["hidden_size"], eps=cfg["layer_norm_eps"])
        self.dropout = nn.Dropout(cfg["hidden_dropout_prob"])

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class Attention(nn.Module):
    def __init__(self, cfg, attn_implementation):
        super().__init__()
        # "self" is a Python keyword only as a parameter name; register it by name.
        self.add_module("self", SelfAttention(cfg, attn_implementation))
        self.output = AddNorm(cfg, cfg["hidden_size"])

    def forward(self, x, additive_mask):
        return self.output(self._modules["self"](x, additive_mask), x)


class Intermediate(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.dense = nn.Linear(cfg["hidden_size"], cfg["intermediate_size"])
        self.act = activation(cfg["hidden_act"])

    def forward(self, x):
        return self.act(self.dense(x))


class Layer(nn.Module):
    def __init__(self, cfg, attn_implementation):
        super().__init__()
        self.attention = Attention(cfg, attn_implementation)
        self.intermediate = Intermediate(cfg)
        self.output = AddNorm(cfg, cfg["intermediate_size"])

    def forward(self, x, additive_mask):
        a = self.attention(x, additive_mask)
        return self.output(self.intermediate(a), a)


class Encoder(nn.Module):
    def __init__(self, cfg, attn_implementation):
        super().__init__()
        self.layer = nn.ModuleList([Layer(cfg, attn_implementation)
                                    for _ in range(cfg["num_hidden_layers"])])

    def forward(self, x, additive_mask):
        for layer in self.layer:
            x = layer(x, additive_mask)
        return x


class Pooler(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.dense = nn.Linear(cfg["hidden_size"], cfg["hidden_size"])

    def forward(self, x):
        return torch.tanh(self.dense(x[:, 0]))


class Bert(nn.Module):
    def __init__(self, cfg, attn_implementation):
        super().__init__()
        self.attn_implementation = attn_implementation
        self.embeddings = Embeddings(cfg)
        self.encoder = Encoder(cfg, attn_implementation)
        self.pooler = Pooler(cfg)

    def forward(self, input_ids, attention_mask, token_type_ids, position_ids):
        b, s = input_ids.shape
        if attention_mask is None:
            attention_mask = torch.ones(b, s)
        if token_type_ids is None:
            token_type_ids = torch.zeros(b, s, dtype=torch.long)
        if position_ids is None:
            position_ids = torch.arange(s).unsqueeze(0)
        x = self.embeddings(input_ids, token_type_ids, position_ids)
        if self.attn_implementation == "sdpa":
            additive = sdpa_mask(attention_mask, x.dtype)
        else:
            m = attention_mask[:, None, None, :].to(x.dtype)
            additive = (1.0 - m) * torch.finfo(x.dtype).min
        return self.pooler(self.encoder(x, additive))


class Classifier(nn.Module):
    def __init__(self, cfg, attn_implementation=None):
        super().__init__()
        self.cfg = cfg
        self.num_labels = len(cfg.get("id2label") or {0: 0, 1: 1})
        self.attn_implementation = resolve_attn_implementation(cfg, attn_implementation)
        self.bert = Bert(cfg, self.attn_implementation)
        p = cfg["classifier_dropout"]
        self.dropout = nn.Dropout(cfg["hidden_dropout_prob"] if p is None else p)
        self.classifier = nn.Linear(cfg["hidden_size"], self.num_labels)

    def init_weights(self, std):
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, std)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)
            if isinstance(m, nn.Embedding) and m.padding_idx is not None:
                with torch.no_grad():
                    m.weight[m.padding_idx].zero_()
            if isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                labels=None):
        pooled = self.bert(input_ids, attention_mask, token_type_ids, position_ids)
        logits = self.classifier(self.dropout(pooled))
        if labels is None:
            return logits, None
        return logits, self.loss(logits, labels)

    def loss(self, logits, labels):
        """HF's loss choice for the problem type (inferred from num_labels / labels' dtype)."""
        kind = self.cfg.get("problem_type")
        if kind is None:
            if self.num_labels == 1:
                kind = "regression"
            elif labels.dtype in (torch.long, torch.int):
                kind = "single_label_classification"
            else:
                kind = "multi_label_classification"
        if kind == "regression":
            if self.num_labels == 1:
                loss = F.mse_loss(logits.squeeze(), labels.squeeze())
            else:
                loss = F.mse_loss(logits, labels)
        elif kind == "single_label_classification":
            loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        else:
            loss = F.binary_cross_entropy_with_logits(logits, labels)
        return loss


# --- the test --------------------------------------------------------------------------------


def fail(message):
    print("bert_reference.py: FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def step_differences(loom, py):
    """The step tensors ("logits", "loss", "grad/<key>") of `loom` that are not bitwise equal
    to `py`'s: (number compared, list of descriptions). Gradients are compared in backward
    order (the reverse of the parameters'), so the first listed is the first to diverge. The
    two must hold the same keys."""
    if set(py) != set(loom):
        return 0, [f"tensors differ: only loom {sorted(set(loom) - set(py))}, "
                   f"only Python {sorted(set(py) - set(loom))}"]
    keys = ["logits", "loss"] + [k for k in reversed(list(py)) if k.startswith("grad/")]
    differing = []
    for key in keys:
        a, b = loom[key], py[key]
        if a.dtype != b.dtype or a.shape != b.shape or not torch.equal(a, b):
            diff = (a.double() - b.double()).abs().max().item() if a.shape == b.shape else "shape"
            differing.append(f"{key} (dtype {a.dtype} vs {b.dtype}, max abs diff {diff})")
    return len(keys), differing


def run_case(model, tensors):
    inputs = {k: v for k, v in tensors.items() if not k.startswith("expected_")}
    with torch.no_grad():
        return model(**inputs)


def check_scenario(sdir, seed):
    with open(os.path.join(sdir, "model", "config.json")) as f:
        config_text = f.read()
    cfg = json.loads(config_text)
    if cfg.get("architectures") != ["BertForSequenceClassification"] or \
            cfg.get("model_type") != "bert":
        fail(f"{sdir}/model/config.json: architectures/model_type are not HF's: {cfg}")
    model = Classifier(cfg).eval()
    weights = read_safetensors(os.path.join(sdir, "model", "model.safetensors"))
    file_keys = [k for k, _ in weights]
    model_keys = list(model.state_dict().keys())
    if len(set(file_keys)) != len(file_keys) or set(file_keys) != set(model_keys):
        fail(f"{sdir}: C++ keys differ from the reference's: missing "
             f"{sorted(set(model_keys) - set(file_keys))}, unexpected "
             f"{sorted(set(file_keys) - set(model_keys))}")
    model.load_state_dict(dict(weights), strict=True)

    cases = sorted(n for n in os.listdir(sdir) if n.startswith("case_"))
    if not cases:
        fail(f"{sdir}: no case_*.safetensors")
    for name in cases:
        tensors = dict(read_safetensors(os.path.join(sdir, name)))
        logits, loss = run_case(model, tensors)
        for what, got, want in (("logits", logits, tensors["expected_logits"]),
                                ("loss", loss.reshape(1), tensors["expected_loss"])):
            if got.shape != want.shape:
                fail(f"{sdir}/{name} {what}: shape {tuple(got.shape)} vs C++ {tuple(want.shape)}")
            diff = (got.double() - want.double()).abs().max().item()
            if not diff <= TOLERANCE:
                fail(f"{sdir}/{name} {what}: max abs difference {diff}\nPython: {got}\nC++: {want}")
            print(f"{os.path.basename(sdir)}/{name} {what}: max abs difference {diff:.3g}")

    # Python-written weights for the C++ side: a fresh reference with its own initialisation.
    torch.manual_seed(seed)
    fresh = Classifier(cfg).eval()
    fresh.init_weights(0.2)
    out_dir = os.path.join(sdir, "python_model")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        f.write(config_text)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), fresh.state_dict(),
                      {"format": "pt"})
    for name in cases:
        tensors = dict(read_safetensors(os.path.join(sdir, name)))
        logits, loss = run_case(fresh, tensors)
        inputs = {k: v for k, v in tensors.items() if not k.startswith("expected_")}
        inputs["expected_logits"] = logits
        inputs["expected_loss"] = loss.reshape(1)
        write_safetensors(os.path.join(sdir, "python_" + name), inputs)


def main():
    if len(sys.argv) != 2:
        fail("usage: bert_reference.py DIR")
    root = sys.argv[1]
    scenarios = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if not scenarios:
        fail(f"no scenarios under {root}")
    for i, name in enumerate(scenarios):
        check_scenario(os.path.join(root, name), seed=1000 + i)
    print(f"bert_reference.py: {len(scenarios)} scenarios match")


if __name__ == "__main__":
    main()
