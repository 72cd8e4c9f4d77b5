"""transformers 4.41 GenerationMixin.generate, written for the parity tests from HF's published
rules, independent of any model: the GenerationConfig resolution, the logits processors and
warpers, the stopping rule, greedy search, multinomial sampling and beam search
(BeamSearchScorer / BeamHypotheses). A model reference supplies one step function:

    step(sequences) -> logits [N, vocab] of the last position (it keeps its own cache),
    reorder(rows)   -> makes its cache follow the beams (beam search only).

Used by t5_reference.py (encoder-decoder: the prompt is the decoder start token) and
llama_reference.py (decoder-only: the prompt is the input ids). Only torch is needed.
"""

import math

import torch
import torch.nn.functional as F

# GenerationConfig defaults of the fields implemented here.
GENERATION_DEFAULTS = {
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
    "do_sample": False,
    "temperature": 1.0,
    "top_k": 50,
    "top_p": 1.0,
    "repetition_penalty": 1.0,
}

# Fields of features not implemented here, with their inactive defaults.
UNSUPPORTED_DEFAULTS = {
    "num_beam_groups": 1, "diversity_penalty": 0.0,
    "encoder_repetition_penalty": 1.0,
    "encoder_no_repeat_ngram_size": 0, "bad_words_ids": None, "min_new_tokens": None,
    "suppress_tokens": None, "begin_suppress_tokens": None, "forced_decoder_ids": None,
    "sequence_bias": None, "guidance_scale": None, "exponential_decay_length_penalty": None,
    "renormalize_logits": False, "remove_invalid_values": False, "penalty_alpha": None,
    "constraints": None, "force_words_ids": None, "max_time": None, "stop_strings": None,
}


def token_list(token):
    return None if token is None else ([token] if isinstance(token, int) else list(token))


def resolve(base, overrides, prompt_len):
    """`base` (generation_config.json's fields or the model config's) with GenerationConfig's
    defaults, updated by generate(**overrides); then generate()'s rules: eos as a list, pad
    defaults to eos[0], max_new_tokens sets max_length to prompt_len + max_new_tokens."""
    for key in overrides:
        if key not in GENERATION_DEFAULTS and key not in UNSUPPORTED_DEFAULTS:
            raise ValueError(f"generation field {key!r} is not known to this reference")
    g = {}
    for key, default in list(GENERATION_DEFAULTS.items()) + list(UNSUPPORTED_DEFAULTS.items()):
        g[key] = overrides.get(key, base.get(key, default))
    for key, inactive in UNSUPPORTED_DEFAULTS.items():
        if g[key] != inactive:
            raise ValueError(f"generation field {key}={g[key]!r} is not implemented here")
    g["eos_token_id"] = token_list(g["eos_token_id"])
    if g["pad_token_id"] is None and g["eos_token_id"] is not None:
        g["pad_token_id"] = g["eos_token_id"][0]
    if g["max_new_tokens"] is not None:
        g["max_length"] = prompt_len + g["max_new_tokens"]
    if g["early_stopping"] not in (True, False, "never"):
        raise ValueError(f"early_stopping must be True, False or 'never': {g['early_stopping']!r}")
    if g["do_sample"] and g["num_beams"] > 1:
        raise ValueError("beam sampling is not implemented here")
    return g


def rows_per_prompt(g):
    """_expand_inputs_for_generation: num_beams rows, or num_return_sequences samples."""
    if g["num_beams"] > 1:
        return g["num_beams"]
    return g["num_return_sequences"] if g["do_sample"] else 1


def _banned_ngram_tokens(tokens, n):
    """NoRepeatNGramLogitsProcessor for one sequence: the tokens that would complete an n-gram
    already present, given the last n - 1 tokens (the prompt included)."""
    cur_len = len(tokens)
    if cur_len + 1 < n:
        return []
    prefix = tokens[cur_len - n + 1:]
    return [tokens[i + n - 1] for i in range(cur_len - n + 1) if tokens[i:i + n - 1] == prefix]


def process_logits(g, sequences, scores):
    """The logits processors of _get_logits_processor in its order: repetition_penalty (each
    token already in the row: score * p if negative, else score / p), no_repeat_ngram_size,
    min_length (eos -inf while length < min_length), forced_bos_token_id (at length 1),
    forced_eos_token_id (at length max_length - 1). Lengths count the prompt."""
    cur_len = sequences.shape[-1]
    scores = scores.clone()
    if g["repetition_penalty"] != 1.0:
        seen = torch.gather(scores, 1, sequences)
        seen = torch.where(seen < 0, seen * g["repetition_penalty"], seen / g["repetition_penalty"])
        scores = scores.scatter(1, sequences, seen)
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
        scores[:, token_list(g["forced_eos_token_id"])] = 0
    return scores


def warp_logits(g, scores):
    """_get_logits_warper: temperature (scores / t), top_k (below the k-th largest -> -inf),
    top_p (ascending sort; tokens whose cumulative softmax is <= 1 - p -> -inf, never the most
    likely); min_tokens_to_keep 1 (no beams here)."""
    if g["temperature"] != 1.0:
        scores = scores / g["temperature"]
    if g["top_k"]:
        k = min(max(g["top_k"], 1), scores.size(-1))
        scores = scores.masked_fill(scores < torch.topk(scores, k)[0][..., -1, None], -math.inf)
    if g["top_p"] < 1.0:
        ordered, order = torch.sort(scores, descending=False)
        remove = ordered.softmax(dim=-1).cumsum(dim=-1) <= (1 - g["top_p"])
        remove[..., -1:] = False
        scores = scores.masked_fill(remove.scatter(1, order, remove), -math.inf)
    return scores


def stopped(g, sequences):
    """StoppingCriteriaList: MaxLengthCriteria | EosTokenCriteria, per row."""
    done = torch.full((sequences.shape[0],), sequences.shape[-1] >= g["max_length"])
    if g["eos_token_id"] is not None:
        last = sequences[:, -1]
        for eos in g["eos_token_id"]:
            done = done | (last == eos)
    return done


def inferred_attention_mask(input_ids, g):
    """_prepare_attention_mask_for_generation: without a mask, pad tokens are masked out if
    the input holds some and pad is not an eos token; else everything is attended."""
    pad, eos = g["pad_token_id"], g["eos_token_id"] or []
    if pad is not None and bool((input_ids == pad).any()) and pad not in eos:
        return input_ids.ne(pad).long()
    return torch.ones(input_ids.shape, dtype=torch.long, device=input_ids.device)


@torch.no_grad()
def one_token_per_step(g, step, sequences, generator=None):
    """GenerationMixin._sample: argmax of the processed logits (greedy), or one multinomial draw
    from softmax(warped(processed)) with `generator` (do_sample); rows that finished (eos)
    continue with pad_token_id until every row is done or max_length."""
    unfinished = torch.ones(sequences.shape[0], dtype=torch.long)
    while True:
        scores = process_logits(g, sequences, step(sequences))
        if g["do_sample"]:
            probs = F.softmax(warp_logits(g, scores), dim=-1)
            next_tokens = torch.multinomial(probs, 1, generator=generator).squeeze(1)
        else:
            next_tokens = torch.argmax(scores, dim=-1)
        if g["eos_token_id"] is not None:
            next_tokens = next_tokens * unfinished + g["pad_token_id"] * (1 - unfinished)
        sequences = torch.cat([sequences, next_tokens[:, None]], dim=-1)
        unfinished = unfinished & ~stopped(g, sequences)
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


@torch.no_grad()
def beam_search(g, step, reorder, sequences, batch):
    """GenerationMixin._beam_search (no sampling): log_softmax, processors, + beam scores; the
    top 2 num_beams (1 + #eos at least 2) over num_beams * vocab; only the first beam is live at
    the start (the others score -1e9); stop when every input is done or at max_length.
    `sequences` holds the prompt of every beam, [batch * num_beams, prompt_len]."""
    num_beams = g["num_beams"]
    if num_beams < 2 or g["num_return_sequences"] > num_beams:
        raise ValueError("beam search needs num_beams >= 2 and num_return_sequences <= num_beams")
    hyps = [BeamHypotheses(num_beams, g["length_penalty"], g["early_stopping"], g["max_length"])
            for _ in range(batch)]
    done = [False] * batch
    beam_scores = torch.zeros((batch, num_beams), dtype=torch.float)
    beam_scores[:, 1:] = -1e9
    beam_scores = beam_scores.view(-1)
    prompt_len = sequences.shape[-1]
    n_eos = 0 if g["eos_token_id"] is None else len(g["eos_token_id"])
    while True:
        scores = process_logits(g, sequences, F.log_softmax(step(sequences), dim=-1))
        scores = scores + beam_scores[:, None].expand_as(scores)
        vocab = scores.shape[-1]
        top_scores, top_ids = torch.topk(scores.view(batch, num_beams * vocab),
                                         max(2, 1 + n_eos) * num_beams, dim=1, largest=True,
                                         sorted=True)
        top_sources = torch.div(top_ids, vocab, rounding_mode="floor")
        beam_scores, tokens, rows = _beam_step(g, hyps, done, sequences, top_scores,
                                               top_ids % vocab, top_sources, prompt_len)
        sequences = torch.cat([sequences[rows, :], tokens.unsqueeze(-1)], dim=-1)
        reorder(rows)
        if all(done) or bool(stopped(g, sequences).all()):
            return _finalize(g, hyps, done, sequences, beam_scores, prompt_len)
