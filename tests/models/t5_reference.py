"""Python reference for //tests/models:t5_parity_test.

A T5 encoder-decoder (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a
Unified Text-to-Text Transformer") written for this test from the published architecture, laid
out as transformers 4.41's T5ForConditionalGeneration (same module tree, so the same
state_dict() keys in the same order), using only torch (Debian's 1.13 or the pinned 2.11 wheel)
and numpy (through safetensors_io.py):
  - pre-norm blocks; the norm is T5's RMS norm (no mean subtraction, no bias, variance in fp32);
  - attention without biases and without the 1/sqrt(d_kv) score scaling; a learned relative
    position bias (bidirectional buckets in the encoder, causal ones in the decoder) held by
    block 0 of each stack and shared, with the additive mask folded in, by the later blocks;
  - additive masks of torch.finfo(dtype).min; the decoder mask is causal times its padding mask;
  - feed-forward "relu" (wi, wo) or "gated-<act>" (act(wi_0) * wi_1, wo; "gated-gelu" means
    the tanh-approximated gelu_new);
  - tied embeddings (tie_word_embeddings, default true): lm_head shares `shared` and the decoder
    output is scaled by d_model**-0.5 before it;
  - labels shifted right into decoder_input_ids (decoder_start_token_id first, -100 -> pad);
    loss = cross entropy with ignore_index -100 over all label positions;
  - an encoder-decoder key/value cache for incremental decoding (self-attention keys/values
    grow, cross-attention ones are computed once);
and HF 4.41 generate() for an encoder-decoder over generation_reference.py (greedy search,
sampling and beam search with HF's processors).

usage: t5_reference.py DIR
  For every DIR/<scenario>/ (sorted) written by t5_parity_tool:
  1. builds the reference from model/config.json (generate()'s defaults from
     model/generation_config.json when present, as from_pretrained, else from config.json) and
     requires model/model.safetensors' keys to be exactly its state_dict() keys minus the tied
     ones save_pretrained drops
     (encoder.embed_tokens.weight, decoder.embed_tokens.weight, and lm_head.weight when
     tie_word_embeddings); loads them (tied modules share shared.weight);
  2. for every case_<k>.safetensors (inputs input_ids, attention_mask [B,S] int64, labels [B,T]
     int64; C++ outputs logits [B,T,V], loss [], encoder_last_hidden_state [B,S,D] and
     grad.<name> for every saved key, all f32) runs the reference in eval mode, backward of the
     loss, and requires |C++ - ref| <= 1e-6 (1 + |ref|) elementwise;
  3. if generate.json exists (a list of {"name", "config": {GenerationConfig fields}, "case": k})
     requires every gen_<name>.safetensors' "sequences" [N,L] int64 to equal the reference's
     generate() on case_<k>'s input_ids and attention_mask;
  4. writes python_model/ (the same json files; model.safetensors of a fresh reference,
     initialised as T5PreTrainedModel._init_weights after torch.manual_seed(1234), keys as in 1),
     python_case_<k>.safetensors (the inputs and the fresh model's outputs and gradients, names
     as in 2) and python_gen_<name>.safetensors (its "sequences").
  Exits 1 with the reason on the first mismatch; prints one PASS line per scenario.
"""

import json
import math
import os
import re
import sys
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:  # also when loaded by path (importlib) from another folder
    sys.path.insert(0, _HERE)
import generation_reference as gen  # noqa: E402
from parity_harness import (fail, list_cases, read_generate_json,  # noqa: E402
                            read_model_folder_json)
import parity_harness  # noqa: E402
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

INPUT_NAMES = ("input_ids", "attention_mask", "labels")

# --- configuration ---------------------------------------------------------------------------

# transformers 4.41 T5Config.__init__ defaults (tie_word_embeddings: PretrainedConfig's).
_CONFIG_DEFAULTS = {
    "vocab_size": 32128,
    "d_model": 512,
    "d_kv": 64,
    "d_ff": 2048,
    "num_layers": 6,
    "num_decoder_layers": None,
    "num_heads": 8,
    "relative_attention_num_buckets": 32,
    "relative_attention_max_distance": 128,
    "dropout_rate": 0.1,
    "layer_norm_epsilon": 1e-6,
    "initializer_factor": 1.0,
    "feed_forward_proj": "relu",
    "tie_word_embeddings": True,
    "pad_token_id": 0,
    "eos_token_id": 1,
    "decoder_start_token_id": None,
}


def t5_config(raw):
    """config.json -> dict with T5Config's defaults and derived fields (is_gated_act, act)."""
    cfg = dict(_CONFIG_DEFAULTS)
    cfg.update(raw)
    if cfg["num_decoder_layers"] is None:
        cfg["num_decoder_layers"] = cfg["num_layers"]
    parts = cfg["feed_forward_proj"].split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise ValueError(f"feed_forward_proj {cfg['feed_forward_proj']!r} is not ACT or gated-ACT")
    # T5Config derives these from feed_forward_proj ("gated-gelu" means gelu_new, for backward
    # compatibility); like PretrainedConfig's extra kwargs, config.json's own values win.
    cfg.setdefault("is_gated_act", parts[0] == "gated")
    cfg.setdefault("dense_act_fn",
                   "gelu_new" if cfg["feed_forward_proj"] == "gated-gelu" else parts[-1])
    return cfg


def _gelu_new(x):
    """transformers' NewGELUActivation: the tanh approximation of GELU."""
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
    return 0.5 * x * (1.0 + torch.tanh(inner))


_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "gelu_new": _gelu_new, "silu": F.silu,
                "swish": F.silu}

# --- the model -------------------------------------------------------------------------------


class LayerNorm(nn.Module):
    """T5LayerNorm: RMS norm, scale only, the mean square taken in fp32."""

    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.variance_epsilon = eps

    def forward(self, x):
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in (torch.float16, torch.bfloat16):
            x = x.to(self.weight.dtype)
        return self.weight * x


class DenseActDense(nn.Module):
    """T5DenseActDense: wo(dropout(act(wi(x))))."""

    def __init__(self, cfg):
        super().__init__()
        self.wi = nn.Linear(cfg["d_model"], cfg["d_ff"], bias=False)
        self.wo = nn.Linear(cfg["d_ff"], cfg["d_model"], bias=False)
        self.dropout = nn.Dropout(cfg["dropout_rate"])
        self.act = _ACTIVATIONS[cfg["dense_act_fn"]]

    def forward(self, x):
        return self.wo(self.dropout(self.act(self.wi(x))))


class DenseGatedActDense(nn.Module):
    """T5DenseGatedActDense (T5 v1.1): wo(dropout(act(wi_0(x)) * wi_1(x)))."""

    def __init__(self, cfg):
        super().__init__()
        self.wi_0 = nn.Linear(cfg["d_model"], cfg["d_ff"], bias=False)
        self.wi_1 = nn.Linear(cfg["d_model"], cfg["d_ff"], bias=False)
        self.wo = nn.Linear(cfg["d_ff"], cfg["d_model"], bias=False)
        self.dropout = nn.Dropout(cfg["dropout_rate"])
        self.act = _ACTIVATIONS[cfg["dense_act_fn"]]

    def forward(self, x):
        return self.wo(self.dropout(self.act(self.wi_0(x)) * self.wi_1(x)))


class FeedForwardLayer(nn.Module):
    """T5LayerFF: x + dropout(ff(norm(x)))."""

    def __init__(self, cfg):
        super().__init__()
        ff = DenseGatedActDense if cfg["is_gated_act"] else DenseActDense
        self.DenseReluDense = ff(cfg)
        self.layer_norm = LayerNorm(cfg["d_model"], cfg["layer_norm_epsilon"])
        self.dropout = nn.Dropout(cfg["dropout_rate"])

    def forward(self, x):
        return x + self.dropout(self.DenseReluDense(self.layer_norm(x)))


def relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance):
    """Bucket of key_pos - query_pos, as Mesh TensorFlow / transformers 4.41
    T5Attention._relative_position_bucket: bidirectional uses half of the buckets per sign
    (positive offsets in the upper half); causal maps positive offsets to 0. Of the buckets of a
    half, the first half are exact distances, the rest log-spaced up to max_distance, clamped."""
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).to(torch.long) * num_buckets
        distance = torch.abs(relative_position)
    else:
        distance = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    # log(0) would be -inf; those distances are small and take the exact branch anyway.
    log_ratio = (torch.log(distance.clamp(min=1).float() / max_exact) /
                 math.log(max_distance / max_exact))
    large = max_exact + (log_ratio * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(is_small, distance, large)


class Attention(nn.Module):
    """T5Attention: multi-head attention without biases or score scaling; block 0 of a stack
    also owns relative_attention_bias [num_buckets, num_heads]."""

    def __init__(self, cfg, is_decoder, has_relative_attention_bias):
        super().__init__()
        self.is_decoder = is_decoder
        self.has_relative_attention_bias = has_relative_attention_bias
        self.num_buckets = cfg["relative_attention_num_buckets"]
        self.max_distance = cfg["relative_attention_max_distance"]
        self.n_heads = cfg["num_heads"]
        self.d_kv = cfg["d_kv"]
        self.dropout = cfg["dropout_rate"]
        inner = self.n_heads * self.d_kv
        self.q = nn.Linear(cfg["d_model"], inner, bias=False)
        self.k = nn.Linear(cfg["d_model"], inner, bias=False)
        self.v = nn.Linear(cfg["d_model"], inner, bias=False)
        self.o = nn.Linear(inner, cfg["d_model"], bias=False)
        if has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(self.num_buckets, self.n_heads)

    def compute_bias(self, query_length, key_length):
        """[1, heads, query_length, key_length] learned bias of key_pos - query_pos."""
        device = self.relative_attention_bias.weight.device
        query_pos = torch.arange(query_length, dtype=torch.long, device=device)[:, None]
        key_pos = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
        buckets = relative_position_bucket(key_pos - query_pos, not self.is_decoder,
                                           self.num_buckets, self.max_distance)
        return self.relative_attention_bias(buckets).permute([2, 0, 1]).unsqueeze(0)

    def position_bias(self, q_len, k_len, past_len, scores):
        """The bias of the q_len newest queries: with a cache, transformers 4.41 computes the bias
        of all past_len + q_len query positions and keeps the last q_len rows. Attention without
        the embedding uses zeros (cross-attention; later self-attention blocks reuse block 0's
        bias and never get here)."""
        if not self.has_relative_attention_bias:
            return torch.zeros((1, self.n_heads, q_len, k_len), device=scores.device,
                               dtype=scores.dtype)
        return self.compute_bias(past_len + q_len, k_len)[:, :, -q_len:, :]

    def _split_heads(self, x):
        return x.view(x.shape[0], -1, self.n_heads, self.d_kv).transpose(1, 2)

    def _merge_heads(self, x):
        return x.transpose(1, 2).contiguous().view(x.shape[0], -1, self.n_heads * self.d_kv)

    def _keys_values(self, x, key_value_states, past):
        """Self-attention: projections of x after the cached ones. Cross-attention: projections
        of the encoder states, or the cached ones from the first decoding step."""
        if key_value_states is None:
            k, v = self._split_heads(self.k(x)), self._split_heads(self.v(x))
            if past is not None:
                k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
            return k, v
        if past is not None:
            return past
        return (self._split_heads(self.k(key_value_states)),
                self._split_heads(self.v(key_value_states)))

    def forward(self, x, mask=None, key_value_states=None, position_bias=None, past=None):
        """Returns (output, (keys, values) for the cache, the position bias with the mask)."""
        q = self._split_heads(self.q(x))
        k, v = self._keys_values(x, key_value_states, past)
        scores = torch.matmul(q, k.transpose(3, 2))
        if position_bias is None:
            past_len = 0 if past is None or key_value_states is not None else past[0].shape[2]
            position_bias = self.position_bias(x.shape[1], k.shape[2], past_len, scores)
            if mask is not None:
                position_bias = position_bias + mask
        scores += position_bias
        weights = F.softmax(scores.float(), dim=-1).type_as(scores)
        weights = F.dropout(weights, p=self.dropout, training=self.training)
        return self.o(self._merge_heads(torch.matmul(weights, v))), (k, v), position_bias


class SelfAttentionLayer(nn.Module):
    """T5LayerSelfAttention: x + dropout(attention(norm(x)))."""

    def __init__(self, cfg, is_decoder, has_relative_attention_bias):
        super().__init__()
        self.SelfAttention = Attention(cfg, is_decoder, has_relative_attention_bias)
        self.layer_norm = LayerNorm(cfg["d_model"], cfg["layer_norm_epsilon"])
        self.dropout = nn.Dropout(cfg["dropout_rate"])

    def forward(self, x, mask, position_bias, past):
        out, kv, position_bias = self.SelfAttention(self.layer_norm(x), mask,
                                                    position_bias=position_bias, past=past)
        return x + self.dropout(out), kv, position_bias


class CrossAttentionLayer(nn.Module):
    """T5LayerCrossAttention: x + dropout(attention(norm(x), encoder states))."""

    def __init__(self, cfg):
        super().__init__()
        self.EncDecAttention = Attention(cfg, True, False)
        self.layer_norm = LayerNorm(cfg["d_model"], cfg["layer_norm_epsilon"])
        self.dropout = nn.Dropout(cfg["dropout_rate"])

    def forward(self, x, encoder_states, mask, position_bias, past):
        out, kv, position_bias = self.EncDecAttention(
            self.layer_norm(x), mask, key_value_states=encoder_states,
            position_bias=position_bias, past=past)
        return x + self.dropout(out), kv, position_bias


class Block(nn.Module):
    """T5Block: layer = [self-attention, (cross-attention,) feed-forward]."""

    def __init__(self, cfg, is_decoder, has_relative_attention_bias):
        super().__init__()
        self.is_decoder = is_decoder
        layers = [SelfAttentionLayer(cfg, is_decoder, has_relative_attention_bias)]
        if is_decoder:
            layers.append(CrossAttentionLayer(cfg))
        layers.append(FeedForwardLayer(cfg))
        self.layer = nn.ModuleList(layers)

    def forward(self, x, mask, bias, encoder_states=None, encoder_mask=None, encoder_bias=None,
                past=None):
        """past: (self k, self v, cross k, cross v) or None. Returns (x, the layer's cache
        entry, the self-attention bias, the cross-attention bias) for the next blocks."""
        x, present, bias = self.layer[0](x, mask, bias, None if past is None else past[:2])
        if self.is_decoder:
            x, cross, encoder_bias = self.layer[1](x, encoder_states, encoder_mask, encoder_bias,
                                                   None if past is None else past[2:])
            present = present + cross
        # (transformers clamps fp16 activations here; this reference runs fp32 only.)
        return self.layer[-1](x), present, bias, encoder_bias


def additive_mask(mask, dtype):
    """transformers' extended attention masks: 0 where attended, finfo(dtype).min elsewhere."""
    return (1.0 - mask.to(dtype)) * torch.finfo(dtype).min


def decoder_mask(attention_mask, q_len):
    """ModuleUtilsMixin.create_extended_attention_mask_for_decoder: the q_len newest positions
    see every cached position and the causal prefix of the new ones; times the padding mask.
    [B, 1, q_len, K] from attention_mask [B, K]."""
    k_len = attention_mask.shape[1]
    device = attention_mask.device
    key_pos = torch.arange(k_len, device=device)[None, :]
    query_pos = torch.arange(k_len - q_len, k_len, device=device)[:, None]
    causal = (key_pos <= query_pos).to(attention_mask.dtype)
    return causal[None, None, :, :] * attention_mask[:, None, None, :]


class Stack(nn.Module):
    """T5Stack: embed_tokens (the shared embedding), blocks, final_layer_norm."""

    def __init__(self, cfg, embed_tokens, is_decoder):
        super().__init__()
        self.embed_tokens = embed_tokens
        self.is_decoder = is_decoder
        n = cfg["num_decoder_layers"] if is_decoder else cfg["num_layers"]
        self.block = nn.ModuleList([Block(cfg, is_decoder, i == 0) for i in range(n)])
        self.final_layer_norm = LayerNorm(cfg["d_model"], cfg["layer_norm_epsilon"])
        self.dropout = nn.Dropout(cfg["dropout_rate"])

    def _self_mask(self, attention_mask, input_ids, past_len, dtype):
        batch, length = input_ids.shape
        if attention_mask is None:
            attention_mask = torch.ones(batch, past_len + length, device=input_ids.device)
        if self.is_decoder:
            return additive_mask(decoder_mask(attention_mask, length), dtype)
        return additive_mask(attention_mask[:, None, None, :], dtype)

    def forward(self, input_ids, attention_mask=None, encoder_states=None, encoder_mask=None,
                past=None):
        """Returns (last hidden state, per-block cache entries)."""
        x = self.embed_tokens(input_ids)
        past_len = 0 if past is None else past[0][0].shape[2]
        mask = self._self_mask(attention_mask, input_ids, past_len, x.dtype)
        if encoder_states is not None:
            if encoder_mask is None:
                encoder_mask = torch.ones(encoder_states.shape[:2], dtype=torch.long,
                                          device=x.device)
            encoder_mask = additive_mask(encoder_mask[:, None, None, :], x.dtype)
        x = self.dropout(x)
        bias = encoder_bias = None
        presents = []
        for i, block in enumerate(self.block):
            x, present, bias, encoder_bias = block(
                x, mask, bias, encoder_states, encoder_mask, encoder_bias,
                None if past is None else past[i])
            presents.append(present)
        return self.dropout(self.final_layer_norm(x)), tuple(presents)


class T5ForConditionalGeneration(nn.Module):
    """transformers 4.41 T5ForConditionalGeneration's layout and forward (fp32, eager)."""

    def __init__(self, config, generation_defaults=None):
        """config: config.json's dict. generation_defaults: generation_config.json's dict, the
        base of generate()'s GenerationConfig when the model folder has one (as
        from_pretrained); otherwise the model config is (GenerationConfig.from_model_config)."""
        super().__init__()
        self.config = t5_config(config)
        self.generation_defaults = generation_defaults
        cfg = self.config
        self.model_dim = cfg["d_model"]
        self.shared = nn.Embedding(cfg["vocab_size"], cfg["d_model"])
        self.encoder = Stack(cfg, self.shared, is_decoder=False)
        self.decoder = Stack(cfg, self.shared, is_decoder=True)
        self.lm_head = nn.Linear(cfg["d_model"], cfg["vocab_size"], bias=False)
        if cfg["tie_word_embeddings"]:
            self.lm_head.weight = self.shared.weight

    def shift_right(self, labels):
        """_shift_right: decoder_start_token_id, then labels[:-1]; -100 -> pad_token_id."""
        start, pad = self.config["decoder_start_token_id"], self.config["pad_token_id"]
        if start is None or pad is None:
            raise ValueError("decoder_start_token_id and pad_token_id must be set to shift labels")
        shifted = labels.new_zeros(labels.shape)
        shifted[..., 1:] = labels[..., :-1].clone()
        shifted[..., 0] = start
        return shifted.masked_fill(shifted == -100, pad)

    def encode(self, input_ids, attention_mask=None):
        return self.encoder(input_ids, attention_mask)[0]

    def forward(self, input_ids=None, attention_mask=None, labels=None, decoder_input_ids=None,
                decoder_attention_mask=None, encoder_outputs=None, past_key_values=None):
        """Returns a namespace of loss (or None), logits, encoder_last_hidden_state and
        past_key_values (per decoder block: self k, self v, cross k, cross v)."""
        if encoder_outputs is None:
            encoder_outputs = self.encode(input_ids, attention_mask)
        if labels is not None and decoder_input_ids is None:
            decoder_input_ids = self.shift_right(labels)
        hidden, presents = self.decoder(decoder_input_ids, decoder_attention_mask,
                                        encoder_outputs, attention_mask, past_key_values)
        if self.config["tie_word_embeddings"]:
            hidden = hidden * (self.model_dim ** -0.5)
        logits = self.lm_head(hidden)
        loss = None
        if labels is not None:
            loss = nn.CrossEntropyLoss(ignore_index=-100)(logits.view(-1, logits.size(-1)),
                                                         labels.view(-1))
        return SimpleNamespace(loss=loss, logits=logits, encoder_last_hidden_state=encoder_outputs,
                               past_key_values=presents)


def saved_keys(model):
    """state_dict() keys minus the tied ones save_pretrained drops (_tied_weights_keys)."""
    tied = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"}
    if model.config["tie_word_embeddings"]:
        tied.add("lm_head.weight")
    return [k for k in model.state_dict() if k not in tied]


def load_weights(model, weights, where):
    """parity_harness.load_weights with T5's saved keys (tied modules keep sharing shared)."""
    parity_harness.load_weights(model, weights, where, saved_keys(model))


def init_weights(model):
    """The distributions of transformers 4.41 T5PreTrainedModel._init_weights (factor =
    initializer_factor): shared (and an untied lm_head) N(0, f); q N(0, f (d_model d_kv)^-0.5);
    k, v N(0, f d_model^-0.5); o N(0, f (heads d_kv)^-0.5); relative_attention_bias
    N(0, f d_model^-0.5); wi* N(0, f d_model^-0.5); wo N(0, f d_ff^-0.5); norms f."""
    cfg = model.config
    f, d_model, d_kv = cfg["initializer_factor"], cfg["d_model"], cfg["d_kv"]
    with torch.no_grad():
        model.shared.weight.normal_(mean=0.0, std=f * 1.0)
        if not cfg["tie_word_embeddings"]:
            model.lm_head.weight.normal_(mean=0.0, std=f * 1.0)
        for m in model.modules():
            if isinstance(m, LayerNorm):
                m.weight.fill_(f * 1.0)
            elif isinstance(m, Attention):
                m.q.weight.normal_(mean=0.0, std=f * (d_model * d_kv) ** -0.5)
                m.k.weight.normal_(mean=0.0, std=f * d_model ** -0.5)
                m.v.weight.normal_(mean=0.0, std=f * d_model ** -0.5)
                m.o.weight.normal_(mean=0.0, std=f * (cfg["num_heads"] * d_kv) ** -0.5)
                if m.has_relative_attention_bias:
                    m.relative_attention_bias.weight.normal_(mean=0.0, std=f * d_model ** -0.5)
            elif isinstance(m, (DenseActDense, DenseGatedActDense)):
                for name in ("wi", "wi_0", "wi_1"):
                    if hasattr(m, name):
                        getattr(m, name).weight.normal_(mean=0.0, std=f * d_model ** -0.5)
                m.wo.weight.normal_(mean=0.0, std=f * cfg["d_ff"] ** -0.5)


# --- generation (transformers 4.41 GenerationMixin.generate, encoder-decoder) ----------------


def generation_config(model, overrides):
    """The model's GenerationConfig (generation_config.json's fields, or the model config's as
    GenerationConfig.from_model_config) updated by generate(**overrides), with generate()'s
    rules (generation_reference.resolve) and the encoder-decoder ones: decoder start =
    decoder_start_token_id or bos_token_id; the decoder prompt is the start token alone."""
    base = model.generation_defaults if model.generation_defaults is not None else model.config
    g = gen.resolve(base, overrides, prompt_len=1)
    if g["decoder_start_token_id"] is None:
        g["decoder_start_token_id"] = g["bos_token_id"]
    if g["decoder_start_token_id"] is None:
        raise ValueError("decoder_start_token_id or bos_token_id has to be defined")
    if g["max_length"] <= 1:
        raise ValueError(f"max_length {g['max_length']} leaves no room after the start token")
    return g


def _decoder_steps(model, encoder_states, encoder_mask, use_cache):
    """generation_reference's step / reorder over the decoder. With a cache only the tokens
    after the cached ones are fed (prepare_inputs_for_generation); _reorder_cache makes every
    cached tensor follow its beam."""
    state = {"past": None}

    def step(sequences):
        past = state["past"]
        if use_cache and past is not None:
            sequences = sequences[:, past[0][0].shape[2]:]
        out = model(decoder_input_ids=sequences, encoder_outputs=encoder_states,
                    attention_mask=encoder_mask, past_key_values=past if use_cache else None)
        state["past"] = out.past_key_values if use_cache else None
        return out.logits[:, -1, :]

    def reorder(rows):
        if state["past"] is not None:
            state["past"] = tuple(tuple(t.index_select(0, rows) for t in layer)
                                  for layer in state["past"])

    return step, reorder


@torch.no_grad()
def generate(model, input_ids, attention_mask, cfg):
    """generate(): the encoder runs once, its states repeated per beam / sample
    (_expand_inputs_for_generation); greedy or sampling for num_beams 1, beam search
    otherwise."""
    g = generation_config(model, cfg)
    if g["num_beams"] == 1 and not g["do_sample"] and g["num_return_sequences"] != 1:
        raise ValueError("greedy search returns one sequence per input (num_return_sequences 1)")
    expand = gen.rows_per_prompt(g)
    if attention_mask is None:
        attention_mask = gen.inferred_attention_mask(input_ids, g)
    encoder_states = model.encode(input_ids, attention_mask).repeat_interleave(expand, dim=0)
    mask = attention_mask.repeat_interleave(expand, dim=0)
    prompt = torch.full((input_ids.shape[0] * expand, 1), g["decoder_start_token_id"],
                        dtype=torch.long, device=input_ids.device)
    step, reorder = _decoder_steps(model, encoder_states, mask, g["use_cache"])
    if g["num_beams"] == 1:
        return gen.one_token_per_step(g, step, prompt)
    return gen.beam_search(g, step, reorder, prompt, input_ids.shape[0])


# --- the parity entry point ------------------------------------------------------------------


def run_case(model, inputs):
    """eval-mode forward with labels and backward of the loss: the outputs of the contract."""
    model.eval()
    model.zero_grad()
    out = model(**{k: inputs[k] for k in INPUT_NAMES})
    out.loss.backward()
    result = {"logits": out.logits.detach(), "loss": out.loss.detach(),
              "encoder_last_hidden_state": out.encoder_last_hidden_state.detach()}
    params = dict(model.named_parameters())
    for name in saved_keys(model):
        result["grad." + name] = params[name].grad.detach().clone()
    return result


def build(texts):
    generation = texts.get("generation_config.json")
    return T5ForConditionalGeneration(json.loads(texts["config.json"]),
                                      None if generation is None else json.loads(generation))


def write_python_side(sdir, texts, cases, entries):
    """python_model/ (the same json files, fresh seeded weights), python_case_<k> and
    python_gen_<name>."""
    torch.manual_seed(1234)
    fresh = build(texts)
    init_weights(fresh)
    out_dir = os.path.join(sdir, "python_model")
    os.makedirs(out_dir, exist_ok=True)
    for name, text in texts.items():
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(text)
    state = fresh.state_dict()
    write_safetensors(os.path.join(out_dir, "model.safetensors"),
                      {k: state[k] for k in saved_keys(fresh)}, {"format": "pt"})
    for k, path in cases.items():
        inputs = dict(read_safetensors(path))
        result = {name: inputs[name] for name in INPUT_NAMES}
        result.update(run_case(fresh, inputs))
        write_safetensors(os.path.join(sdir, f"python_case_{k}.safetensors"), result)
    fresh.eval()
    for e in entries:
        sequences = parity_harness.generate_for(fresh, e, cases, sdir, generate)
        write_safetensors(os.path.join(sdir, f"python_gen_{e['name']}.safetensors"),
                          {"sequences": sequences})


def check_scenario(sdir):
    texts = read_model_folder_json(sdir)
    model_type = json.loads(texts["config.json"]).get("model_type", "t5")
    if model_type != "t5":
        fail(f"{sdir}/model/config.json: model_type {model_type!r} is not t5")
    model = build(texts)
    load_weights(model, read_safetensors(os.path.join(sdir, "model", "model.safetensors")),
                 os.path.join(sdir, "model", "model.safetensors"))
    model.eval()
    cases = list_cases(sdir)
    for path in cases.values():
        parity_harness.check_case(model, path, run_case, INPUT_NAMES)
    entries = read_generate_json(sdir, cases)
    for e in entries:
        parity_harness.check_generation(model, sdir, e, cases, generate)
    write_python_side(sdir, texts, cases, entries)
    print(f"{os.path.basename(sdir)}: PASS ({len(cases)} cases: logits, loss, encoder output, "
          f"every gradient; {len(entries)} generations)")


def main():
    parity_harness.run_scenarios("t5_reference.py", check_scenario)


if __name__ == "__main__":
    main()
