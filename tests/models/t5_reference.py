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
and HF 4.41 generate() for an encoder-decoder: greedy() and beam_search() (GenerationMixin
_sample / _beam_search with BeamSearchScorer and BeamHypotheses), with the logits processors
no_repeat_ngram_size, min_length, forced_bos_token_id, forced_eos_token_id.

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
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

TOLERANCE = 1e-6
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

# GenerationConfig defaults of the fields this reference implements.
_GENERATION_DEFAULTS = {
    "max_length": 20,
    "max_new_tokens": None,
    "min_length": 0,
    "num_beams": 1,
    "length_penalty": 1.0,
    "early_stopping": False,
    "no_repeat_ngram_size": 0,
    "num_return_sequences": 1,
    "use_cache": True,
    "decoder_start_token_id": None,
    "bos_token_id": None,
    "eos_token_id": None,
    "pad_token_id": None,
    "forced_bos_token_id": None,
    "forced_eos_token_id": None,
}

# Fields of features this reference does not implement, with their inactive defaults.
_UNSUPPORTED_DEFAULTS = {
    "do_sample": False, "num_beam_groups": 1, "diversity_penalty": 0.0,
    "repetition_penalty": 1.0, "encoder_repetition_penalty": 1.0,
    "encoder_no_repeat_ngram_size": 0, "bad_words_ids": None, "min_new_tokens": None,
    "suppress_tokens": None, "begin_suppress_tokens": None, "forced_decoder_ids": None,
    "sequence_bias": None, "guidance_scale": None, "exponential_decay_length_penalty": None,
    "renormalize_logits": False, "remove_invalid_values": False, "penalty_alpha": None,
    "constraints": None, "force_words_ids": None, "max_time": None, "stop_strings": None,
}


def _token_list(token):
    return None if token is None else ([token] if isinstance(token, int) else list(token))


def generation_config(model, overrides):
    """The model's GenerationConfig (generation_config.json's fields, or the model config's as
    GenerationConfig.from_model_config, over GenerationConfig's defaults) updated by
    generate(**overrides), then the special-token and length rules of generate(): decoder start
    = decoder_start_token_id or bos_token_id; eos as a list; pad defaults to eos[0];
    max_new_tokens sets max_length to 1 + max_new_tokens (the decoder prompt is the start
    token)."""
    base = model.generation_defaults if model.generation_defaults is not None else model.config
    for key in overrides:
        if key not in _GENERATION_DEFAULTS and key not in _UNSUPPORTED_DEFAULTS:
            raise ValueError(f"generation field {key!r} is not known to this reference")
    g = {}
    for key, default in list(_GENERATION_DEFAULTS.items()) + list(_UNSUPPORTED_DEFAULTS.items()):
        g[key] = overrides.get(key, base.get(key, default))
    for key, inactive in _UNSUPPORTED_DEFAULTS.items():
        if g[key] != inactive:
            raise ValueError(f"generation field {key}={g[key]!r} is not implemented here")
    if g["decoder_start_token_id"] is None:
        g["decoder_start_token_id"] = g["bos_token_id"]
    if g["decoder_start_token_id"] is None:
        raise ValueError("decoder_start_token_id or bos_token_id has to be defined")
    g["eos_token_id"] = _token_list(g["eos_token_id"])
    if g["pad_token_id"] is None and g["eos_token_id"] is not None:
        g["pad_token_id"] = g["eos_token_id"][0]
    if g["max_new_tokens"] is not None:
        g["max_length"] = 1 + g["max_new_tokens"]
    if g["max_length"] <= 1:
        raise ValueError(f"max_length {g['max_length']} leaves no room after the start token")
    if g["early_stopping"] not in (True, False, "never"):
        raise ValueError(f"early_stopping must be True, False or 'never': {g['early_stopping']!r}")
    return g


def _banned_ngram_tokens(tokens, n):
    """NoRepeatNGramLogitsProcessor for one sequence: the tokens that would complete an n-gram
    already present, given the last n - 1 tokens (the decoder start token included)."""
    cur_len = len(tokens)
    if cur_len + 1 < n:
        return []
    prefix = tokens[cur_len - n + 1:]
    return [tokens[i + n - 1] for i in range(cur_len - n + 1) if tokens[i:i + n - 1] == prefix]


def process_logits(g, sequences, scores):
    """The logits processors of _get_logits_processor in its order: no_repeat_ngram_size,
    min_length (eos -inf while length < min_length), forced_bos_token_id (at length 1),
    forced_eos_token_id (at length max_length - 1). Lengths count the start token."""
    cur_len = sequences.shape[-1]
    scores = scores.clone()
    if g["no_repeat_ngram_size"] and g["no_repeat_ngram_size"] > 0:
        for row, tokens in enumerate(sequences.tolist()):
            banned = _banned_ngram_tokens(tokens, g["no_repeat_ngram_size"])
            if banned:
                scores[row, banned] = -float("inf")
    if g["min_length"] and g["min_length"] > 0 and g["eos_token_id"] is not None \
            and cur_len < g["min_length"]:
        scores[:, g["eos_token_id"]] = -math.inf
    if g["forced_bos_token_id"] is not None and cur_len == 1:
        scores = torch.full_like(scores, -math.inf)
        scores[:, g["forced_bos_token_id"]] = 0
    if g["forced_eos_token_id"] is not None and cur_len == g["max_length"] - 1:
        scores = torch.full_like(scores, -math.inf)
        scores[:, _token_list(g["forced_eos_token_id"])] = 0
    return scores


def _decode_step(model, sequences, encoder_states, encoder_mask, past, use_cache):
    """One forward of the decoder. With a cache only the tokens after the cached ones are fed
    (T5ForConditionalGeneration.prepare_inputs_for_generation). Returns (last logits, cache)."""
    if use_cache and past is not None:
        sequences = sequences[:, past[0][0].shape[2]:]
    out = model(decoder_input_ids=sequences, encoder_outputs=encoder_states,
                attention_mask=encoder_mask, past_key_values=past if use_cache else None)
    return out.logits[:, -1, :], (out.past_key_values if use_cache else None)


def _stopped(g, sequences):
    """StoppingCriteriaList: MaxLengthCriteria | EosTokenCriteria, per row."""
    done = torch.full((sequences.shape[0],), sequences.shape[-1] >= g["max_length"])
    if g["eos_token_id"] is not None:
        last = sequences[:, -1]
        for eos in g["eos_token_id"]:
            done = done | (last == eos)
    return done


def _inferred_attention_mask(input_ids, g):
    """_prepare_attention_mask_for_generation: without a mask, pad tokens are masked out if
    the input holds some and pad is not an eos token; else everything is attended."""
    pad, eos = g["pad_token_id"], g["eos_token_id"] or []
    if pad is not None and bool((input_ids == pad).any()) and pad not in eos:
        return input_ids.ne(pad).long()
    return torch.ones(input_ids.shape, dtype=torch.long, device=input_ids.device)


def _start(model, input_ids, attention_mask, g, expand):
    """Encoder states computed once, then repeated `expand` times per row (repeat_interleave,
    as _expand_inputs_for_generation), and the decoder prompt [start]."""
    if attention_mask is None:
        attention_mask = _inferred_attention_mask(input_ids, g)
    encoder_states = model.encode(input_ids, attention_mask)
    encoder_states = encoder_states.repeat_interleave(expand, dim=0)
    attention_mask = attention_mask.repeat_interleave(expand, dim=0)
    prompt = torch.full((input_ids.shape[0] * expand, 1), g["decoder_start_token_id"],
                        dtype=torch.long, device=input_ids.device)
    return encoder_states, attention_mask, prompt


@torch.no_grad()
def greedy(model, input_ids, attention_mask, cfg):
    """GenerationMixin._sample without sampling: argmax of the processed logits; rows that
    finished (eos) continue with pad_token_id until every row is done or max_length."""
    g = generation_config(model, cfg)
    if g["num_return_sequences"] != 1:
        raise ValueError("greedy search returns one sequence per input (num_return_sequences 1)")
    encoder_states, mask, sequences = _start(model, input_ids, attention_mask, g, 1)
    unfinished = torch.ones(sequences.shape[0], dtype=torch.long)
    past = None
    while True:
        logits, past = _decode_step(model, sequences, encoder_states, mask, past, g["use_cache"])
        next_tokens = torch.argmax(process_logits(g, sequences, logits), dim=-1)
        if g["eos_token_id"] is not None:
            next_tokens = next_tokens * unfinished + g["pad_token_id"] * (1 - unfinished)
        sequences = torch.cat([sequences, next_tokens[:, None]], dim=-1)
        unfinished = unfinished & ~_stopped(g, sequences)
        if unfinished.max() == 0:
            return sequences


class BeamHypotheses:
    """transformers 4.41 BeamHypotheses: the num_beams best finished hypotheses of one input,
    scored sum_logprobs / generated_len ** length_penalty."""

    def __init__(self, num_beams, length_penalty, early_stopping, max_length):
        self.num_beams = num_beams
        self.length_penalty = length_penalty
        self.early_stopping = early_stopping
        self.max_length = max_length
        self.beams = []  # (score, tokens), in insertion order (ties resolve on it)
        self.worst_score = 1e9

    def add(self, tokens, sum_logprobs, generated_len):
        score = sum_logprobs / (generated_len ** self.length_penalty)
        if len(self.beams) < self.num_beams or score > self.worst_score:
            self.beams.append((score, tokens))
            if len(self.beams) > self.num_beams:
                # drop the lowest score (the earliest of equal ones)
                worst = min(range(len(self.beams)), key=lambda i: (self.beams[i][0], i))
                del self.beams[worst]
                self.worst_score = min(s for s, _ in self.beams)
            else:
                self.worst_score = min(score, self.worst_score)

    def is_done(self, best_sum_logprobs, cur_len, prompt_len):
        """True: done as soon as num_beams hypotheses exist. False: done when the worst kept
        score >= best_sum_logprobs / (cur_len - prompt_len) ** lp. "never": the same bound with
        max_length instead of cur_len when length_penalty > 0 (the true optimum)."""
        if len(self.beams) < self.num_beams:
            return False
        if self.early_stopping is True:
            return True
        length = cur_len
        if self.early_stopping is not False and self.length_penalty > 0.0:  # "never"
            length = self.max_length
        return self.worst_score >= best_sum_logprobs / (length - prompt_len) ** self.length_penalty


def _beam_step(g, hyps, done, sequences, top_scores, top_tokens, top_sources, prompt_len):
    """BeamSearchScorer.process: per input, walk the candidates best first; an eos among the
    first num_beams ranks closes sequences[source] (without the eos) as a hypothesis of
    generated length cur_len - prompt_len, cur_len counting the eos; other tokens fill the next
    beams. A done input gets pad tokens, score 0 and source row 0 (HF's literal 0: the first row
    of the whole batch, harmless as finalize skips done inputs). Returns the next beam scores,
    tokens and source rows, flat [batch * num_beams]."""
    num_beams = hyps[0].num_beams
    batch = len(hyps)
    cur_len = sequences.shape[-1] + 1
    scores = torch.zeros((batch, num_beams), dtype=top_scores.dtype)
    tokens = torch.zeros((batch, num_beams), dtype=torch.long)
    sources = torch.zeros((batch, num_beams), dtype=torch.long)
    eos = g["eos_token_id"] or []
    for b in range(batch):
        if done[b]:
            tokens[b, :] = g["pad_token_id"]
            continue
        filled = 0
        for rank in range(top_scores.shape[1]):
            token, source = int(top_tokens[b, rank]), b * num_beams + int(top_sources[b, rank])
            if token in eos:
                if rank < num_beams:
                    hyps[b].add(sequences[source].clone(), top_scores[b, rank].item(),
                                cur_len - prompt_len)
            else:
                scores[b, filled], tokens[b, filled], sources[b, filled] = \
                    top_scores[b, rank], token, source
                filled += 1
            if filled == num_beams:
                break
        if filled < num_beams:
            raise ValueError(f"too many eos candidates for input {b}")
        done[b] = done[b] or hyps[b].is_done(top_scores[b].max().item(), cur_len, prompt_len)
    return scores.view(-1), tokens.view(-1), sources.view(-1)


def _finalize(g, hyps, done, sequences, beam_scores, prompt_len):
    """BeamSearchScorer.finalize: the running beams of unfinished inputs join their hypotheses;
    the num_return_sequences best of each input (highest score; the later added of equal ones)
    are returned right-padded with pad_token_id, an eos after each shorter one, at most
    max_length long."""
    num_beams = hyps[0].num_beams
    for b, hyp in enumerate(hyps):
        if not done[b]:
            for j in range(num_beams):
                row = b * num_beams + j
                hyp.add(sequences[row], beam_scores[row].item(), sequences.shape[-1] - prompt_len)
    best = []
    for hyp in hyps:
        ranked = sorted(hyp.beams, key=lambda item: item[0])
        best += [ranked.pop()[1] for _ in range(g["num_return_sequences"])]
    lengths = [len(t) for t in best]
    width = min(max(lengths) + 1, g["max_length"])
    if min(lengths) != max(lengths) and g["pad_token_id"] is None:
        raise ValueError("pad_token_id has to be defined")
    pad = g["pad_token_id"] if g["pad_token_id"] is not None else 0
    out = torch.full((len(best), width), pad, dtype=torch.long)
    for i, tokens in enumerate(best):
        out[i, :len(tokens)] = tokens
        if len(tokens) < width:
            out[i, len(tokens)] = g["eos_token_id"][0]
    return out


def _reorder_cache(past, rows):
    """T5ForConditionalGeneration._reorder_cache: every cached tensor follows its beam."""
    return tuple(tuple(t.index_select(0, rows) for t in layer) for layer in past)


@torch.no_grad()
def beam_search(model, input_ids, attention_mask, cfg):
    """GenerationMixin._beam_search (no sampling): log_softmax, processors, + beam scores; the
    top 2 num_beams (1 + #eos at least 2) over num_beams * vocab; only the first beam is live at
    the start (the others score -1e9); stop when every input is done or at max_length."""
    g = generation_config(model, cfg)
    num_beams = g["num_beams"]
    if num_beams < 2 or g["num_return_sequences"] > num_beams:
        raise ValueError("beam search needs num_beams >= 2 and num_return_sequences <= num_beams")
    batch = input_ids.shape[0]
    encoder_states, mask, sequences = _start(model, input_ids, attention_mask, g, num_beams)
    hyps = [BeamHypotheses(num_beams, g["length_penalty"], g["early_stopping"], g["max_length"])
            for _ in range(batch)]
    done = [False] * batch
    beam_scores = torch.zeros((batch, num_beams), dtype=torch.float)
    beam_scores[:, 1:] = -1e9
    beam_scores = beam_scores.view(-1)
    prompt_len = sequences.shape[-1]
    n_eos = 0 if g["eos_token_id"] is None else len(g["eos_token_id"])
    past = None
    while True:
        logits, past = _decode_step(model, sequences, encoder_states, mask, past, g["use_cache"])
        scores = process_logits(g, sequences, F.log_softmax(logits, dim=-1))
        scores = scores + beam_scores[:, None].expand_as(scores)
        vocab = scores.shape[-1]
        top_scores, top_ids = torch.topk(scores.view(batch, num_beams * vocab),
                                         max(2, 1 + n_eos) * num_beams, dim=1, largest=True,
                                         sorted=True)
        top_sources = torch.div(top_ids, vocab, rounding_mode="floor")
        beam_scores, tokens, rows = _beam_step(g, hyps, done, sequences, top_scores,
                                               top_ids % vocab, top_sources, prompt_len)
        sequences = torch.cat([sequences[rows, :], tokens.unsqueeze(-1)], dim=-1)
        if past is not None:
            past = _reorder_cache(past, rows)
        if all(done) or bool(_stopped(g, sequences).all()):
            return _finalize(g, hyps, done, sequences, beam_scores, prompt_len)


def generate(model, input_ids, attention_mask, cfg):
    """generate(): greedy for num_beams 1, beam search otherwise."""
    g = generation_config(model, cfg)
    search = greedy if g["num_beams"] == 1 else beam_search
    return search(model, input_ids, attention_mask, cfg)


# --- the parity entry point ------------------------------------------------------------------


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def load_weights(model, weights, where):
    """Requires the file's keys to be saved_keys(model) exactly, and f32 tensors of the
    parameters' shapes; copies them in (tied modules keep sharing shared.weight)."""
    file_keys = [name for name, _ in weights]
    expected = saved_keys(model)
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


def check_inputs(where, inputs):
    for name in INPUT_NAMES:
        if name not in inputs:
            fail(f"{where}: lacks input {name}")
        if inputs[name].dtype != torch.int64 or inputs[name].dim() != 2:
            fail(f"{where}: {name} must be a 2-d int64 tensor, is {inputs[name].dtype} "
                 f"{tuple(inputs[name].shape)}")


def check_case(model, path):
    """One case_<k>.safetensors: the C++ outputs must equal the reference's within tolerance."""
    tensors = dict(read_safetensors(path))
    check_inputs(path, tensors)
    ref = run_case(model, tensors)
    unexpected = sorted(set(tensors) - set(ref) - set(INPUT_NAMES))
    missing = sorted(set(ref) - set(tensors))
    if missing or unexpected:
        fail(f"{path}: missing outputs {missing}, unexpected tensors {unexpected}")
    for name, want in ref.items():
        require_close(path, name, tensors[name], want)


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


def generate_for(model, entry, cases, where):
    inputs = dict(read_safetensors(cases[entry["case"]]))
    try:
        return generate(model, inputs["input_ids"], inputs["attention_mask"], entry["config"])
    except ValueError as e:
        fail(f"{where}: generate {entry['name']}: {e}")


def check_generation(model, sdir, entry, cases):
    path = os.path.join(sdir, f"gen_{entry['name']}.safetensors")
    if not os.path.exists(path):
        fail(f"{path}: missing")
    got = dict(read_safetensors(path))
    if set(got) != {"sequences"}:
        fail(f"{path}: holds {sorted(got)}, not just sequences")
    want = generate_for(model, entry, cases, path)
    cpp = got["sequences"]
    if cpp.dtype != torch.int64 or tuple(cpp.shape) != tuple(want.shape) or \
            not torch.equal(cpp, want):
        fail(f"{path} ({entry['config']} on case {entry['case']}): C++ sequences "
             f"{cpp.dtype} {tuple(cpp.shape)}\n{cpp.tolist()}\nreference {tuple(want.shape)}\n"
             f"{want.tolist()}")


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
        sequences = generate_for(fresh, e, cases, sdir)
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
        check_case(model, path)
    entries = read_generate_json(sdir, cases)
    for e in entries:
        check_generation(model, sdir, e, cases)
    write_python_side(sdir, texts, cases, entries)
    print(f"{os.path.basename(sdir)}: PASS ({len(cases)} cases: logits, loss, encoder output, "
          f"every gradient; {len(entries)} generations)")


def main():
    if len(sys.argv) != 2:
        fail("usage: t5_reference.py DIR")
    torch.set_num_threads(1)
    root = sys.argv[1]
    scenarios = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if not scenarios:
        fail(f"no scenarios under {root}")
    for name in scenarios:
        check_scenario(os.path.join(root, name))


if __name__ == "__main__":
    main()
