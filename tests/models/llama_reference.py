"""Python reference for //tests/models:llama_parity_test.

A Llama decoder-only language model written for this test from the published architecture
(Touvron et al. 2023, "LLaMA: Open and Efficient Foundation Language Models"; rotary position
embeddings, Su et al. 2021; grouped-query attention, Ainslie et al. 2023; SwiGLU, Shazeer
2020), laid out as transformers 4.41's LlamaForCausalLM (same module tree, so the same
state_dict() keys in the same order), using only torch and numpy:
  - pre-norm decoder layers with RMS norm (variance in fp32, no mean subtraction, no bias);
  - rotary embeddings on q and k: inv_freq = 1 / theta^(2i/d) in fp32, angles = positions x
    inv_freq, both halves rotated (rotate_half); rope_scaling "linear" (positions / factor),
    "dynamic" (NTK: theta grows when a call's positions exceed max_position_embeddings) and
    "llama3" (frequency-dependent rescaling);
  - grouped-query attention: num_key_value_heads key/value heads, each shared by
    num_attention_heads / num_key_value_heads query heads; scores / sqrt(head_dim), additive
    mask of finfo.min for later positions and padding, softmax in fp32;
  - feed-forward down(silu(gate(x)) * up(x)); optional biases (attention_bias, mlp_bias);
  - tied (tie_word_embeddings) or separate output head; logits in fp32; the loss is the cross
    entropy of logits[:, :-1] against labels[:, 1:] with ignore_index -100;
  - a key/value cache for generation;
and HF 4.41 generate() for a decoder-only model over generation_reference.py: the prompt's mask
grows by ones, positions are cumsum(mask) - 1 (1 at padding), greedy, beam search and sampling
(drawn from a torch.Generator seeded with SAMPLING_SEED, which the C++ side seeds alike).

usage: llama_reference.py DIR
  For every DIR/<scenario>/ (sorted) written by llama_parity_tool:
  1. builds the reference from model/config.json (generation defaults from
     model/generation_config.json) and requires model/model.safetensors' keys to be exactly its
     state_dict() keys; loads them;
  2. for every case_<k>.safetensors (input_ids, attention_mask, labels [B,S] int64; C++ logits
     [B,S,V], loss [] and grad.<name> for every key, f32) runs the reference in eval mode and
     backward of the loss, and requires |C++ - ref| <= 1e-6 (1 + |ref|) elementwise;
  3. requires every gen_<name>.safetensors' "sequences" to equal the reference's generate() on
     case_<k>'s input_ids and attention_mask with generate.json's config;
  4. writes python_model/ (the same json files; model.safetensors of a fresh reference
     initialised after torch.manual_seed(1234)), python_case_<k>.safetensors and
     python_gen_<name>.safetensors, for the C++ side to check.
  Exits 1 with the reason on the first mismatch; prints one PASS line per scenario.
"""

import json
import math
import os
import sys
from types import SimpleNamespace

import torch
from torch import nn
import torch.nn.functional as F

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
import generation_reference as gen  # noqa: E402
import parity_harness  # noqa: E402
from parity_harness import (fail, list_cases, load_weights, read_generate_json,  # noqa: E402
                            read_model_folder_json)
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

INPUT_NAMES = ("input_ids", "attention_mask", "labels")
SAMPLING_SEED = 20261129

# transformers 4.41 LlamaConfig.__init__ defaults.
_CONFIG_DEFAULTS = {
    "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
    "hidden_act": "silu", "max_position_embeddings": 2048, "initializer_range": 0.02,
    "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "rope_scaling": None,
    "attention_bias": False, "attention_dropout": 0.0, "mlp_bias": False,
    "pad_token_id": None, "bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": False,
}


def llama_config(raw):
    cfg = dict(_CONFIG_DEFAULTS)
    cfg.update(raw)
    if cfg["num_key_value_heads"] is None:
        cfg["num_key_value_heads"] = cfg["num_attention_heads"]
    if cfg["hidden_act"] not in ("silu", "swish"):
        raise ValueError(f"hidden_act {cfg['hidden_act']!r} is not implemented here")
    return cfg


# --- rotary embeddings -----------------------------------------------------------------------


def _default_inv_freq(base, dim):
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def _llama3_inv_freq(inv_freq, scaling):
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_len = scaling["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_len / low, old_len / high
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(medium, smoothed, scaled)


class Rotary:
    def __init__(self, cfg):
        self.dim = cfg["hidden_size"] // cfg["num_attention_heads"]
        self.base = cfg["rope_theta"]
        self.max_positions = cfg["max_position_embeddings"]
        self.scaling = cfg["rope_scaling"]
        self.kind = None
        if self.scaling is not None:
            self.kind = self.scaling.get("type", self.scaling.get("rope_type"))
        self.inv_freq = _default_inv_freq(self.base, self.dim)
        if self.kind == "llama3":
            self.inv_freq = _llama3_inv_freq(self.inv_freq, self.scaling)

    def cos_sin(self, position_ids, dtype):
        inv_freq = self.inv_freq
        positions = position_ids.float()
        if self.kind == "linear":
            positions = positions / self.scaling["factor"]
        elif self.kind == "dynamic":
            seq_len = torch.max(position_ids) + 1
            if seq_len > self.max_positions:
                f = self.scaling["factor"]
                base = self.base * ((f * seq_len / self.max_positions) - (f - 1)) ** (
                    self.dim / (self.dim - 2))
                inv_freq = 1.0 / (base ** (torch.arange(0, self.dim, 2, dtype=torch.int64).float()
                                           / self.dim))
        inv = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        freqs = (inv @ positions[:, None, :]).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


# --- the model -------------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = cfg["num_key_value_heads"]
        self.head_dim = cfg["hidden_size"] // self.heads
        self.dropout = cfg["attention_dropout"]
        bias = cfg["attention_bias"]
        hidden = cfg["hidden_size"]
        self.q_proj = nn.Linear(hidden, self.heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(hidden, self.kv_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(hidden, self.kv_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(self.heads * self.head_dim, hidden, bias=bias)

    def forward(self, h, cos, sin, mask, past):
        b, s, _ = h.shape
        q = self.q_proj(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = cos.to(v.dtype).unsqueeze(1), sin.to(v.dtype).unsqueeze(1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        present = (k, v)
        group = self.heads // self.kv_heads
        k = k[:, :, None].expand(b, self.kv_heads, group, k.shape[2], self.head_dim).reshape(
            b, self.heads, k.shape[2], self.head_dim)
        v = v[:, :, None].expand(b, self.kv_heads, group, v.shape[2], self.head_dim).reshape(
            b, self.heads, v.shape[2], self.head_dim)
        weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        weights = weights + mask[:, :, :, :k.shape[2]]
        weights = F.softmax(weights, dim=-1, dtype=torch.float32).to(q.dtype)
        weights = F.dropout(weights, p=self.dropout, training=self.training)
        out = torch.matmul(weights, v).transpose(1, 2).contiguous().reshape(b, s, -1)
        return self.o_proj(out), present


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        hidden, inner, bias = cfg["hidden_size"], cfg["intermediate_size"], cfg["mlp_bias"]
        self.gate_proj = nn.Linear(hidden, inner, bias=bias)
        self.up_proj = nn.Linear(hidden, inner, bias=bias)
        self.down_proj = nn.Linear(inner, hidden, bias=bias)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.post_attention_layernorm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])

    def forward(self, h, cos, sin, mask, past):
        attended, present = self.self_attn(self.input_layernorm(h), cos, sin, mask, past)
        h = h + attended
        return h + self.mlp(self.post_attention_layernorm(h)), present


def causal_mask(attention_mask, batch, seq, past_len, dtype):
    """0 where query i may see key j; finfo.min for later keys and padding."""
    target = past_len + seq
    query = torch.arange(past_len, target)[:, None]
    key = torch.arange(target)[None, :]
    blocked = (key > query)[None, None].expand(batch, 1, seq, target)
    if attention_mask is not None:
        blocked = blocked | (attention_mask == 0)[:, None, None, :]
    return torch.zeros(batch, 1, seq, target, dtype=dtype).masked_fill(blocked,
                                                                         torch.finfo(dtype).min)


class Body(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"],
                                         padding_idx=cfg["pad_token_id"])
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg["num_hidden_layers"]))
        self.norm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])


class LlamaForCausalLM(nn.Module):
    def __init__(self, config, generation_defaults=None):
        super().__init__()
        self.config = llama_config(config)
        self.generation_defaults = generation_defaults
        self.model = Body(self.config)
        if not self.config["tie_word_embeddings"]:
            self.lm_head = nn.Linear(self.config["hidden_size"], self.config["vocab_size"],
                                     bias=False)
        self.rotary = Rotary(self.config)

    def forward(self, input_ids, attention_mask=None, labels=None, position_ids=None, past=None):
        b, s = input_ids.shape
        past_len = 0 if past is None else past[0][0].shape[2]
        h = self.model.embed_tokens(input_ids)
        if position_ids is None:
            position_ids = torch.arange(past_len, past_len + s)[None].expand(b, s)
        cos, sin = self.rotary.cos_sin(position_ids, torch.float32)
        mask = causal_mask(attention_mask, b, s, past_len, h.dtype)
        presents = []
        for i, layer in enumerate(self.model.layers):
            h, present = layer(h, cos, sin, mask, None if past is None else past[i])
            presents.append(present)
        h = self.model.norm(h)
        head = self.model.embed_tokens.weight if self.config["tie_word_embeddings"] \
            else self.lm_head.weight
        logits = F.linear(h, head).float()
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                   labels[:, 1:].reshape(-1), ignore_index=-100)
        return SimpleNamespace(loss=loss, logits=logits, past=tuple(presents))


def saved_keys(model):
    return list(model.state_dict())


def init_weights(model):
    """_init_weights' distributions: Linear N(0, initializer_range) with zero biases,
    Embedding the same with its padding row zero, norms ones."""
    std = model.config["initializer_range"]
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear):
                m.weight.normal_(mean=0.0, std=std)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.Embedding):
                m.weight.normal_(mean=0.0, std=std)
                if m.padding_idx is not None:
                    m.weight[m.padding_idx].zero_()


# --- generation (decoder-only) ---------------------------------------------------------------


@torch.no_grad()
def generate(model, input_ids, attention_mask, cfg):
    """generate() for a decoder-only model: rows repeated per beam / sample, the mask extended
    by ones per generated token, positions cumsum(mask) - 1 (1 at padding), the cache fed only
    the tokens it has not seen."""
    base = model.generation_defaults if model.generation_defaults is not None else model.config
    g = gen.resolve(base, cfg, prompt_len=input_ids.shape[1])
    if g["num_beams"] == 1 and not g["do_sample"] and g["num_return_sequences"] != 1:
        raise ValueError("greedy search returns one sequence per input (num_return_sequences 1)")
    expand = gen.rows_per_prompt(g)
    if attention_mask is None:
        attention_mask = gen.inferred_attention_mask(input_ids, g)
    ids = input_ids.repeat_interleave(expand, dim=0)
    prompt_mask = attention_mask.repeat_interleave(expand, dim=0)
    state = {"past": None}

    def step(sequences):
        grown = sequences.shape[1] - prompt_mask.shape[1]
        mask = torch.cat([prompt_mask, torch.ones(prompt_mask.shape[0], grown,
                                                  dtype=prompt_mask.dtype)], dim=1)
        positions = (mask.cumsum(-1) - 1).masked_fill_(mask == 0, 1)
        past = state["past"] if g["use_cache"] else None
        fed = 0 if past is None else past[0][0].shape[2]
        out = model(sequences[:, fed:], attention_mask=mask, position_ids=positions[:, fed:],
                    past=past)
        state["past"] = out.past
        return out.logits[:, -1, :]

    def reorder(rows):
        if state["past"] is not None:
            state["past"] = tuple(tuple(t.index_select(0, rows) for t in layer)
                                  for layer in state["past"])

    if g["num_beams"] == 1:
        generator = torch.Generator().manual_seed(SAMPLING_SEED)
        return gen.one_token_per_step(g, step, ids, generator)
    return gen.beam_search(g, step, reorder, ids, input_ids.shape[0])


# --- the parity entry point ------------------------------------------------------------------


def run_case(model, inputs):
    model.eval()
    model.zero_grad()
    out = model(inputs["input_ids"], attention_mask=inputs["attention_mask"],
                labels=inputs["labels"])
    out.loss.backward()
    result = {"logits": out.logits.detach(), "loss": out.loss.detach()}
    for name, param in model.named_parameters():
        result["grad." + name] = param.grad.detach().clone()
    return result


def build(texts):
    generation = texts.get("generation_config.json")
    return LlamaForCausalLM(json.loads(texts["config.json"]),
                            None if generation is None else json.loads(generation))


def check_scenario(sdir):
    texts = read_model_folder_json(sdir)
    if json.loads(texts["config.json"]).get("model_type", "llama") != "llama":
        fail(f"{sdir}/model/config.json: model_type is not llama")
    model = build(texts)
    weights = os.path.join(sdir, "model", "model.safetensors")
    load_weights(model, read_safetensors(weights), weights, saved_keys(model))
    model.eval()
    cases = list_cases(sdir)
    for path in cases.values():
        parity_harness.check_case(model, path, run_case, INPUT_NAMES)
    entries = read_generate_json(sdir, cases)
    for e in entries:
        parity_harness.check_generation(model, sdir, e, cases, generate)
    torch.manual_seed(1234)
    fresh = build(texts)
    init_weights(fresh)
    out_dir = os.path.join(sdir, "python_model")
    os.makedirs(out_dir, exist_ok=True)
    for name, text in texts.items():
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(text)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), fresh.state_dict(),
                      {"format": "pt"})
    for k, path in cases.items():
        inputs = dict(read_safetensors(path))
        result = {name: inputs[name] for name in INPUT_NAMES}
        result.update(run_case(fresh, inputs))
        write_safetensors(os.path.join(sdir, f"python_case_{k}.safetensors"), result)
    fresh.eval()
    for e in entries:
        write_safetensors(os.path.join(sdir, f"python_gen_{e['name']}.safetensors"),
                          {"sequences": parity_harness.generate_for(fresh, e, cases, sdir,
                                                                    generate)})
    print(f"{os.path.basename(sdir)}: PASS ({len(cases)} cases: logits, loss, every gradient; "
          f"{len(entries)} generations)")


def main():
    parity_harness.run_scenarios("llama_reference.py", check_scenario)


if __name__ == "__main__":
    main()
