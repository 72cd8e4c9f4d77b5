#include "generation/generate.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "generation/beam_search.h"
#include "generation/logits_process.h"

namespace loom::generation {
namespace {

// The config with generate's defaults filled in, and the resolved max_length.
struct Resolved {
  GenerationConfig config;
  int64_t max_length = 0;
};

// The checks and defaults every model kind shares.
absl::StatusOr<Resolved> ResolveCommon(const GenerationConfig& config) {
  RETURN_IF_ERROR(config.Validate());
  if (config.do_sample && config.num_beams > 1) {
    return absl::UnimplementedError(
        "beam-search multinomial sampling (do_sample true with num_beams > 1) is not "
        "implemented by loom's generate; set num_beams 1 to sample, or do_sample false");
  }
  Resolved r{config, config.max_length};
  if (!r.config.pad_token_id.has_value() && !r.config.eos_token_id.empty()) {
    r.config.pad_token_id = r.config.eos_token_id[0];
  }
  return r;
}

absl::StatusOr<Resolved> ResolveEncoderDecoder(const GenerationConfig& config) {
  ASSIGN_OR_RETURN(Resolved r, ResolveCommon(config));
  if (!r.config.decoder_start_token_id.has_value()) {
    r.config.decoder_start_token_id = r.config.bos_token_id;
  }
  if (!r.config.decoder_start_token_id.has_value()) {
    return absl::InvalidArgumentError(
        "`decoder_start_token_id` or `bos_token_id` has to be defined for encoder-decoder "
        "generation (set decoder_start_token_id in config.json or generation_config.json)");
  }
  // Encoder-decoder: the decoder prompt is the start token alone.
  if (r.config.max_new_tokens.has_value()) r.max_length = *r.config.max_new_tokens + 1;
  return r;
}

// How many rows each prompt becomes: the beams, or the samples drawn per prompt.
int64_t RowsPerPrompt(const GenerationConfig& config) {
  if (config.num_beams > 1) return config.num_beams;
  return config.do_sample ? config.num_return_sequences : 1;
}

// The logits [N, vocab] after the last of `ids` [N, L], given that the cache (null without
// one) already holds the first `fed` positions.
using NextLogitsFn = std::function<at::Tensor(const at::Tensor& ids, int64_t fed,
                                              modeling::DecoderCache* cache)>;

// One decoding loop's shared state: the model step, its cache and the stopping rule.
struct Decoding {
  NextLogitsFn next_logits;
  std::unique_ptr<modeling::DecoderCache> cache;
  const GenerateOptions& options;
  int64_t fed = 0;

  // With the cache, the model sees the positions it has not seen; without (use_cache false),
  // the whole prefix again. A finished rank of a synced run calls again with nothing new: it
  // runs the whole prefix without the cache (its result unused), so the model's collectives
  // (ZeRO-3 gathers, one per unit) stay matched with the ranks still generating.
  at::Tensor NextLogits(const at::Tensor& ids) {
    if (cache == nullptr || fed == ids.size(1)) return next_logits(ids, 0, nullptr);
    at::Tensor logits = next_logits(ids, fed, cache.get());
    fed = ids.size(1);
    return logits;
  }
  // HF's _has_unfinished_sequences.
  absl::StatusOr<bool> Continue(bool finished) const {
    if (!options.any_rank_unfinished) return !finished;
    return options.any_rank_unfinished(finished);
  }
};

at::Tensor LastIsEos(const GenerationConfig& config, const at::Tensor& ids) {
  const at::Tensor last = ids.select(1, -1);
  at::Tensor is_eos = at::zeros_like(last, at::kBool);
  for (int64_t eos : config.eos_token_id) is_eos = is_eos | (last == eos);
  return is_eos;
}

// The next token of every row: argmax of the processed scores (greedy), or one draw from the
// softmax of the warped ones (sampling, torch.multinomial with the options' generator).
at::Tensor ChooseNext(const Resolved& r, const GenerateOptions& options, const at::Tensor& ids,
                      const at::Tensor& logits) {
  const at::Tensor scores = ProcessLogits(r.config, r.max_length, ids, logits);
  if (!r.config.do_sample) return scores.argmax(-1);
  const at::Tensor probs = at::softmax(WarpLogits(r.config, scores), -1);
  const c10::optional<at::Generator> generator =
      options.generator.has_value() ? c10::optional<at::Generator>(*options.generator)
                                    : c10::nullopt;  // c10::optional is not std's on 1.13
  return at::multinomial(probs, 1, /*replacement=*/false, generator).squeeze(1);
}

// HF's _greedy_search and _sample: one token per row per step.
absl::StatusOr<at::Tensor> OneTokenPerStep(Decoding& d, const Resolved& r, at::Tensor ids) {
  const bool has_eos = !r.config.eos_token_id.empty();
  at::Tensor unfinished = at::ones({ids.size(0)}, ids.options());
  bool finished = false;
  while (true) {
    ASSIGN_OR_RETURN(const bool go_on, d.Continue(finished));
    if (!go_on) break;
    const at::Tensor logits = d.NextLogits(ids);
    if (finished) continue;  // synced ranks: keep the collectives matched
    at::Tensor next = ChooseNext(r, d.options, ids, logits);
    if (has_eos) next = next * unfinished + *r.config.pad_token_id * (1 - unfinished);
    ids = at::cat({ids, next.unsqueeze(1)}, 1);
    at::Tensor done = LastIsEos(r.config, ids);
    if (ids.size(1) >= r.max_length) done.fill_(true);
    unfinished = unfinished * (~done).to(at::kLong);
    finished = unfinished.max().item<int64_t>() == 0;
  }
  return ids;
}

absl::StatusOr<at::Tensor> Beam(Decoding& d, const Resolved& r, at::Tensor ids, int64_t batch) {
  const int64_t k = r.config.num_beams;
  BeamScorer scorer(batch, r.config, r.max_length, /*prompt_length=*/ids.size(1));
  at::Tensor beam_scores = at::zeros({batch, k}, at::kFloat);
  beam_scores.narrow(1, 1, k - 1).fill_(-1e9);
  beam_scores = beam_scores.view(-1);
  const int64_t keep = std::max<int64_t>(2, 1 + r.config.eos_token_id.size()) * k;
  bool finished = false;
  while (true) {
    ASSIGN_OR_RETURN(const bool go_on, d.Continue(finished));
    if (!go_on) break;
    const at::Tensor logits = d.NextLogits(ids);
    if (finished) continue;
    const at::Tensor processed =
        ProcessLogits(r.config, r.max_length, ids, at::log_softmax(logits, -1));
    const int64_t vocab = processed.size(-1);
    const at::Tensor scores =
        (processed + beam_scores.to(processed.device()).unsqueeze(1).expand_as(processed))
            .view({batch, k * vocab});
    auto [top_scores, top] = at::topk(scores, keep, 1, /*largest=*/true, /*sorted=*/true);
    const at::Tensor indices = at::div(top, vocab, "floor");
    ASSIGN_OR_RETURN(BeamStep step, scorer.Process(ids, top_scores, top.remainder(vocab), indices));
    beam_scores = step.scores;
    const at::Tensor rows = step.indices.to(ids.device());
    ids = at::cat({ids.index_select(0, rows), step.tokens.to(ids.device()).unsqueeze(1)}, 1);
    if (d.cache != nullptr) d.cache->Reorder(rows);
    finished = scorer.IsDone() || ids.size(1) >= r.max_length ||
               LastIsEos(r.config, ids).all().item<bool>();
  }
  return scorer.Finalize(ids, beam_scores);
}

absl::StatusOr<at::Tensor> Decode(Decoding& d, const Resolved& r, const at::Tensor& ids,
                                  int64_t batch) {
  if (r.config.num_beams == 1) return OneTokenPerStep(d, r, ids);
  return Beam(d, r, ids, batch);
}

absl::StatusOr<at::Tensor> RunEncoderDecoder(modeling::Seq2SeqLM& model,
                                             const at::Tensor& input_ids,
                                             const at::Tensor& attention_mask, const Resolved& r,
                                             const GenerateOptions& options) {
  const int64_t batch = input_ids.size(0);
  const int64_t rows = RowsPerPrompt(r.config);
  at::Tensor encoded = model.Encode(input_ids, attention_mask);
  at::Tensor mask = attention_mask;
  if (rows > 1) {  // _expand_inputs_for_generation
    encoded = encoded.repeat_interleave(rows, 0);
    if (mask.defined()) mask = mask.repeat_interleave(rows, 0);
  }
  NextLogitsFn step = [&model, encoded, mask](const at::Tensor& ids, int64_t fed,
                                              modeling::DecoderCache* cache) {
    return model.NextTokenLogits(ids.narrow(1, fed, ids.size(1) - fed), encoded, mask, cache);
  };
  Decoding d{step, r.config.use_cache ? model.NewDecoderCache() : nullptr, options};
  const at::Tensor start = at::full({batch * rows, 1}, *r.config.decoder_start_token_id,
                                    input_ids.options().dtype(at::kLong));
  return Decode(d, r, start, batch);
}

// HF's _prepare_attention_mask_for_generation: the prompt's padding when the pad token occurs
// in it and differs from every eos token, else all ones.
at::Tensor PromptMask(const at::Tensor& input_ids, const Resolved& r) {
  const std::optional<int64_t> pad = r.config.pad_token_id;
  const std::vector<int64_t>& eos = r.config.eos_token_id;
  const bool pad_is_eos = pad.has_value() && std::find(eos.begin(), eos.end(), *pad) != eos.end();
  if (pad.has_value() && !pad_is_eos && (input_ids == *pad).any().item<bool>()) {
    return input_ids.ne(*pad).to(at::kLong);
  }
  return at::ones_like(input_ids, input_ids.options().dtype(at::kLong));
}

absl::StatusOr<at::Tensor> RunCausal(modeling::CausalLM& model, const at::Tensor& input_ids,
                                     const at::Tensor& attention_mask, const Resolved& r,
                                     const GenerateOptions& options) {
  const int64_t batch = input_ids.size(0);
  const int64_t rows = RowsPerPrompt(r.config);
  at::Tensor ids = input_ids.to(at::kLong);
  at::Tensor mask = attention_mask.defined() ? attention_mask.to(at::kLong) : PromptMask(ids, r);
  if (rows > 1) {
    ids = ids.repeat_interleave(rows, 0);
    mask = mask.repeat_interleave(rows, 0);
  }
  // prepare_inputs_for_generation: the mask grows by ones; positions count attended tokens.
  NextLogitsFn step = [&model, mask](const at::Tensor& all, int64_t fed,
                                     modeling::DecoderCache* cache) {
    const int64_t generated = all.size(1) - mask.size(1);
    const at::Tensor full_mask =
        generated == 0 ? mask : at::cat({mask, at::ones({mask.size(0), generated}, mask.options())}, 1);
    const at::Tensor positions = (full_mask.cumsum(-1) - 1).masked_fill_(full_mask == 0, 1);
    const int64_t fresh = all.size(1) - fed;
    return model.NextTokenLogits(all.narrow(1, fed, fresh), full_mask,
                                 positions.narrow(1, fed, fresh), cache);
  };
  Decoding d{step, r.config.use_cache ? model.NewDecoderCache() : nullptr, options};
  return Decode(d, r, ids, batch);
}

absl::Status CheckPrompt(const at::Tensor& input_ids, const at::Tensor& attention_mask) {
  if (!input_ids.defined() || input_ids.dim() != 2) {
    return absl::InvalidArgumentError("generate needs input_ids of shape [batch, length]");
  }
  if (attention_mask.defined() && !attention_mask.sizes().equals(input_ids.sizes())) {
    return absl::InvalidArgumentError(
        "generate: attention_mask must have input_ids' shape [batch, length]");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<at::Tensor> Generate(modeling::Seq2SeqLM& model, const at::Tensor& input_ids,
                                    const at::Tensor& attention_mask,
                                    const GenerationConfig& config,
                                    const GenerateOptions& options) {
  ASSIGN_OR_RETURN(Resolved r, ResolveEncoderDecoder(config));
  RETURN_IF_ERROR(CheckPrompt(input_ids, attention_mask));
  torch::NoGradGuard no_grad;
  try {
    return RunEncoderDecoder(model, input_ids, attention_mask, r, options);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, "generate");
  }
}

absl::StatusOr<at::Tensor> GenerateCausal(modeling::CausalLM& model, const at::Tensor& input_ids,
                                          const at::Tensor& attention_mask,
                                          const GenerationConfig& config,
                                          const GenerateOptions& options) {
  ASSIGN_OR_RETURN(Resolved r, ResolveCommon(config));
  RETURN_IF_ERROR(CheckPrompt(input_ids, attention_mask));
  if (input_ids.size(1) == 0) {
    return absl::InvalidArgumentError(
        "generate: a decoder-only model needs a prompt of at least one token (start it with "
        "the bos token)");
  }
  if (r.config.max_new_tokens.has_value()) {
    r.max_length = input_ids.size(1) + *r.config.max_new_tokens;
  }
  torch::NoGradGuard no_grad;
  try {
    return RunCausal(model, input_ids, attention_mask, r, options);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, "generate");
  }
}

}  // namespace loom::generation
