"""Cross-check of t5_reference.py against the REAL transformers T5 (a development check).

usage (from the repository root):
  PYTHONPATH=/var/cache/loom/python/interop-transformers-4.41-d40219d4d820 \\
    /var/cache/loom/python/venv-torch-2.11.0-976b60d397da/bin/python \\
    tests/models/t5_hf_crosscheck.py

For a T5 v1.0 config (relu, tied embeddings) and a v1.1 one (gated-gelu, untied), both tiny
(vocab 64, d_model 32, d_kv 8, 4 heads, d_ff 48, 2 encoder + 3 decoder blocks, 8 buckets, max
distance 16) with seeded random weights (scaled so that eos is sometimes produced before
max_length), it requires
  1. the same state_dict() keys in the same order, and t5_reference.load_weights to accept
     exactly the keys of HF's save_pretrained;
  2. logits, loss, encoder output and every gradient (eval mode, fp32, dropout configured) on a
     padded batch of 3 with -100 labels within 1e-6 (1 + |HF|);
  3. the decoder's logits step by step with the key/value cache within the same tolerance;
  4. identical generate() ids for greedy and beam search variants on a padded batch of 3
     (min_length, no_repeat_ngram_size, early_stopping True/False/"never", length_penalty,
     num_return_sequences, max_new_tokens, forced_bos/eos, without the cache, without an
     attention mask), with extra sources on which an off-by-one in BeamHypotheses' length rules
     changes the ids; and that the model is not degenerate (eos early in some greedy rows,
     several distinct results among the early_stopping / length_penalty variants).
Exits 1 on the first mismatch.
"""

import os
import sys
import tempfile
import warnings

import torch
import transformers
from transformers import T5Config
from transformers import T5ForConditionalGeneration as HFT5

import t5_reference as ref
from safetensors_io import read_safetensors

TOLERANCE = 1e-6

transformers.logging.set_verbosity_error()
warnings.simplefilter("ignore")

_TINY = dict(vocab_size=64, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_decoder_layers=3,
             num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=16,
             dropout_rate=0.1, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
SCENARIOS = {
    "v1_0": dict(_TINY, feed_forward_proj="relu", tie_word_embeddings=True),
    "v1_1": dict(_TINY, feed_forward_proj="gated-gelu", tie_word_embeddings=False),
}
# Per scenario: HF's init seed, a factor on every o / wo weight (bigger residual updates, so
# the next token depends on more than the current one) and on eos' output-embedding row (so eos
# comes before max_length in some rows); picked among 25 seeds for varied greedy and beam
# outputs (eos early in 2 of 3 greedy rows, 6-7 distinct results of the 10 beam variants).
LIVELY = {"v1_0": (12, 4.0, 2.0), "v1_1": (19, 2.0, 1.5)}

GENERATIONS = [
    ("greedy", {}),
    ("greedy_max_new_tokens", {"max_new_tokens": 7}),
    ("greedy_min_length", {"min_length": 12}),
    ("greedy_no_repeat_2", {"no_repeat_ngram_size": 2}),
    ("greedy_forced", {"forced_bos_token_id": 5, "forced_eos_token_id": 1, "max_length": 9}),
    ("greedy_no_cache", {"use_cache": False}),
    ("beam4", {"num_beams": 4}),
    ("beam4_return2", {"num_beams": 4, "num_return_sequences": 2}),
    ("beam3_return3", {"num_beams": 3, "num_return_sequences": 3}),
    ("beam4_early_true", {"num_beams": 4, "early_stopping": True}),
    ("beam4_early_false", {"num_beams": 4, "early_stopping": False}),
    ("beam4_early_never", {"num_beams": 4, "early_stopping": "never"}),
    ("beam4_lp0.6", {"num_beams": 4, "length_penalty": 0.6}),
    ("beam4_lp2", {"num_beams": 4, "length_penalty": 2.0}),
    ("beam4_never_lp2", {"num_beams": 4, "early_stopping": "never", "length_penalty": 2.0}),
    ("beam4_never_lp-0.5", {"num_beams": 4, "early_stopping": "never", "length_penalty": -0.5}),
    ("beam4_min_length", {"num_beams": 4, "min_length": 12}),
    ("beam4_no_repeat_2", {"num_beams": 4, "no_repeat_ngram_size": 2}),
    ("beam4_max_new_tokens", {"num_beams": 4, "max_new_tokens": 6, "num_return_sequences": 2}),
    ("beam4_forced", {"num_beams": 4, "forced_bos_token_id": 5, "forced_eos_token_id": 1,
                      "max_length": 9}),
    ("beam4_no_cache", {"num_beams": 4, "use_cache": False, "length_penalty": 0.6}),
]
# Beam searches on other sources (batch seed), found to tell apart the exact length rules of
# BeamHypotheses (a hypothesis' generated length counts its eos; early_stopping False bounds
# with cur_len, "never" with max_length): a rule off by one changes their ids.
GENERATIONS_ON = [
    ("beam2_false_b14", {"num_beams": 2, "early_stopping": False}, 14),
    ("beam4_never_b17", {"num_beams": 4, "early_stopping": "never"}, 17),
    ("beam4_lp2_false_b19", {"num_beams": 4, "length_penalty": 2.0, "early_stopping": False}, 19),
    ("beam2_lp2_never_b15", {"num_beams": 2, "length_penalty": 2.0, "early_stopping": "never"}, 15),
    ("beam2_lp2_never_b21", {"num_beams": 2, "length_penalty": 2.0, "early_stopping": "never"}, 21),
]


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def build(name, cfg):
    """HF's model with seeded random weights made livelier (eos sometimes early), and the
    reference loaded from HF's own save_pretrained folder."""
    seed, residual_scale, eos_scale = LIVELY[name]
    torch.manual_seed(seed)
    hf = HFT5(T5Config(**cfg))
    with torch.no_grad():
        for pname, p in hf.named_parameters():
            if pname.endswith(("o.weight", "wo.weight")):
                p.mul_(residual_scale)
        head = hf.shared if cfg["tie_word_embeddings"] else hf.lm_head
        head.weight[cfg["eos_token_id"]].mul_(eos_scale)
    hf.eval()
    mine = ref.T5ForConditionalGeneration(cfg)
    if list(mine.state_dict()) != list(hf.state_dict()):
        fail(f"{name}: state_dict keys differ:\nHF {list(hf.state_dict())}\n"
             f"reference {list(mine.state_dict())}")
    with tempfile.TemporaryDirectory() as tmp:
        hf.save_pretrained(tmp)
        saved = read_safetensors(os.path.join(tmp, "model.safetensors"))
    ref.load_weights(mine, saved, f"{name} save_pretrained")
    mine.eval()
    return hf, mine


def require_close(what, got, want):
    if got.shape != want.shape:
        fail(f"{what}: shape {tuple(got.shape)} vs HF {tuple(want.shape)}")
    diff = (got.double() - want.double()).abs()
    if not bool((diff <= TOLERANCE * (1 + want.double().abs())).all()):
        fail(f"{what}: max |reference - HF| = {diff.max().item()}")
    return diff.max().item() if diff.numel() else 0.0


def batch():
    """3 padded sources of 20 (log buckets in use) and targets with -100 tails."""
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(2, 64, (3, 20), generator=g)
    mask = torch.ones(3, 20, dtype=torch.long)
    mask[1, 13:] = 0
    mask[2, 4:] = 0
    ids = ids.masked_fill(mask == 0, 0)
    labels = torch.randint(2, 64, (3, 7), generator=g)
    labels[0, 6] = 1
    labels[1, 4:] = -100
    labels[2, 2:] = -100
    return ids, mask, labels


def check_forward(name, hf, mine):
    ids, mask, labels = batch()
    hf.zero_grad()
    out = hf(input_ids=ids, attention_mask=mask, labels=labels)
    out.loss.backward()
    got = ref.run_case(mine, {"input_ids": ids, "attention_mask": mask, "labels": labels})
    worst = 0.0
    worst = max(worst, require_close(f"{name} logits", got["logits"], out.logits))
    worst = max(worst, require_close(f"{name} loss", got["loss"], out.loss))
    worst = max(worst, require_close(f"{name} encoder_last_hidden_state",
                                     got["encoder_last_hidden_state"],
                                     out.encoder_last_hidden_state))
    hf_params = dict(hf.named_parameters())
    for key in ref.saved_keys(mine):
        worst = max(worst, require_close(f"{name} grad.{key}", got["grad." + key],
                                         hf_params[key].grad))
    print(f"{name}: logits, loss, encoder output and {len(ref.saved_keys(mine))} gradients "
          f"match transformers {transformers.__version__} (max abs difference {worst:.3g})")


@torch.no_grad()
def check_cache(name, hf, mine):
    """Step-by-step decoding with the cache: HF's past_key_values vs the reference's."""
    ids, mask, labels = batch()
    decoder_ids = hf._shift_right(labels.clamp(min=0))
    hf_enc = hf.encoder(input_ids=ids, attention_mask=mask)
    my_enc = mine.encode(ids, mask)
    hf_past = my_past = None
    worst = 0.0
    for t in range(decoder_ids.shape[1]):
        step = decoder_ids[:, t:t + 1]
        h = hf(encoder_outputs=hf_enc, attention_mask=mask, decoder_input_ids=step,
               past_key_values=hf_past, use_cache=True)
        m = mine(encoder_outputs=my_enc, attention_mask=mask, decoder_input_ids=step,
                 past_key_values=my_past)
        worst = max(worst, require_close(f"{name} cached step {t} logits", m.logits, h.logits))
        hf_past, my_past = h.past_key_values, m.past_key_values
    # The cache changes matmul shapes, hence roundings: a consistency bound, not a parity one.
    full = mine(encoder_outputs=my_enc, attention_mask=mask, decoder_input_ids=decoder_ids)
    diff = (m.logits[:, -1] - full.logits[:, -1]).abs()
    if not bool((diff <= 1e-4 * (1 + full.logits[:, -1].abs())).all()):
        fail(f"{name}: cached last step vs full decoder: max difference {diff.max().item()}")
    print(f"{name}: {decoder_ids.shape[1]} cached decoder steps match (max abs difference "
          f"{worst:.3g})")


def gen_batch(seed=11):
    """3 padded sources of 12, 7 and 3 tokens."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(2, 64, (3, 12), generator=g)
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[1, 7:] = 0
    mask[2, 3:] = 0
    return ids.masked_fill(mask == 0, 0), mask


def ends_early(sequences, eos):
    """How many rows hold eos before their last column."""
    return int((sequences[:, :-1] == eos).any(dim=1).sum())


def check_generation(name, hf, mine, eos):
    results = {}
    for gname, kwargs, seed in [g + (11,) for g in GENERATIONS] + GENERATIONS_ON:
        ids, mask = gen_batch(seed)
        want = hf.generate(input_ids=ids, attention_mask=mask, **kwargs)
        got = ref.generate(mine, ids, mask, kwargs)
        if got.dtype != torch.int64 or got.shape != want.shape or not torch.equal(got, want):
            fail(f"{name} {gname} {kwargs}:\nHF {tuple(want.shape)}\n{want.tolist()}\n"
                 f"reference {tuple(got.shape)}\n{got.tolist()}")
        results[gname] = got
        print(f"{name} {gname}: identical {tuple(got.shape)}, {ends_early(got, eos)} of "
              f"{got.shape[0]} rows hold eos before the last column")
    # Without an attention mask generate() infers one from the pad tokens.
    ids, _ = gen_batch()
    for kwargs in ({}, {"num_beams": 3}):
        want, got = hf.generate(input_ids=ids, **kwargs), ref.generate(mine, ids, None, kwargs)
        if got.shape != want.shape or not torch.equal(got, want):
            fail(f"{name} {kwargs} without attention_mask:\nHF {want.tolist()}\n"
                 f"reference {got.tolist()}")
    print(f"{name}: identical without an attention mask (inferred from pad tokens)")
    # Guards against a degenerate model that would make these comparisons weak.
    if not 0 < ends_early(results["greedy"], eos) < 3:
        fail(f"{name}: degenerate model, greedy rows: {results['greedy'].tolist()}")
    stopping = ("beam4_early_true", "beam4_early_false", "beam4_early_never", "beam4_lp0.6",
                "beam4_lp2", "beam4_never_lp2", "beam4_never_lp-0.5")
    distinct = len({tuple(map(tuple, results[g].tolist())) for g in stopping})
    if distinct < 3:
        fail(f"{name}: degenerate model, only {distinct} distinct results of {stopping}")


def main():
    torch.set_num_threads(1)
    for name, cfg in SCENARIOS.items():
        hf, mine = build(name, cfg)
        check_forward(name, hf, mine)
        check_cache(name, hf, mine)
        check_generation(name, hf, mine, cfg["eos_token_id"])
    print("t5_hf_crosscheck: PASS")


if __name__ == "__main__":
    main()
