#include "generation/generate.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <exception>
#include <memory>

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

absl::StatusOr<Resolved> Resolve(const GenerationConfig& config) {
  RETURN_IF_ERROR(config.Validate());
  Resolved r{config, config.max_length};
  if (!r.config.pad_token_id.has_value() && !r.config.eos_token_id.empty()) {
    r.config.pad_token_id = r.config.eos_token_id[0];
  }
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

// One decoding loop's shared state: the model, the encoder output and the stopping rule.
struct Decoding {
  modeling::Seq2SeqLM& model;
  at::Tensor encoder_hidden, encoder_mask;
  std::unique_ptr<modeling::DecoderCache> cache;
  const GenerateOptions& options;

  // Logits [N, vocab] of the last position after `ids`' newest token: with the cache, the
  // newest token alone; without (use_cache false), the whole prefix again.
  at::Tensor NextLogits(const at::Tensor& ids) {
    if (cache == nullptr) {
      return model.NextTokenLogits(ids, encoder_hidden, encoder_mask, nullptr);
    }
    const at::Tensor last = ids.narrow(1, ids.size(1) - 1, 1);
    return model.NextTokenLogits(last, encoder_hidden, encoder_mask, cache.get());
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

absl::StatusOr<at::Tensor> Greedy(Decoding& d, const Resolved& r, at::Tensor ids) {
  const bool has_eos = !r.config.eos_token_id.empty();
  at::Tensor unfinished = at::ones({ids.size(0)}, ids.options());
  bool finished = false;
  while (true) {
    ASSIGN_OR_RETURN(const bool go_on, d.Continue(finished));
    if (!go_on) break;
    const at::Tensor logits = d.NextLogits(ids);
    if (finished) continue;  // synced ranks: keep the collectives matched
    const at::Tensor scores = ProcessLogits(r.config, r.max_length, ids, logits);
    at::Tensor next = scores.argmax(-1);
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
  BeamScorer scorer(batch, r.config, r.max_length);
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

absl::StatusOr<at::Tensor> Run(modeling::Seq2SeqLM& model, const at::Tensor& input_ids,
                               const at::Tensor& attention_mask, const Resolved& r,
                               const GenerateOptions& options) {
  const int64_t batch = input_ids.size(0);
  const int64_t k = r.config.num_beams;
  at::Tensor encoded = model.Encode(input_ids, attention_mask);
  at::Tensor mask = attention_mask;
  if (k > 1) {  // _expand_inputs_for_generation
    encoded = encoded.repeat_interleave(k, 0);
    if (mask.defined()) mask = mask.repeat_interleave(k, 0);
  }
  Decoding d{model, encoded, mask, r.config.use_cache ? model.NewDecoderCache() : nullptr,
             options};
  const at::Tensor start = at::full({batch * k, 1}, *r.config.decoder_start_token_id,
                                    input_ids.options().dtype(at::kLong));
  if (k == 1) return Greedy(d, r, start);
  return Beam(d, r, start, batch);
}

}  // namespace

absl::StatusOr<at::Tensor> Generate(modeling::Seq2SeqLM& model, const at::Tensor& input_ids,
                                    const at::Tensor& attention_mask,
                                    const GenerationConfig& config,
                                    const GenerateOptions& options) {
  ASSIGN_OR_RETURN(Resolved r, Resolve(config));
  if (!input_ids.defined() || input_ids.dim() != 2) {
    return absl::InvalidArgumentError("generate needs input_ids of shape [batch, length]");
  }
  torch::NoGradGuard no_grad;
  try {
    return Run(model, input_ids, attention_mask, r, options);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, "generate");
  }
}

}  // namespace loom::generation
