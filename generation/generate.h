// generate: transformers 4.41's GenerationMixin.generate for encoder-decoder models (Generate)
// and decoder-only ones (GenerateCausal): greedy search, multinomial sampling (do_sample) and
// beam search, with the key/value cache.
//
// Contract:
//   Generate(model, input_ids [B,S], attention_mask [B,S] or undefined, config, options)
//   returns the sequences [B * num_return_sequences, L], each starting with the decoder start
//   token, exactly as HF's generate(..., do_sample=False) returns them for the same weights:
//     - config.Validate(); pad_token_id unset and eos set -> pad = the first eos (HF's "Setting
//       pad_token_id to eos_token_id"); decoder_start_token_id unset -> bos_token_id; neither ->
//       InvalidArgument;
//     - max_length = max_new_tokens + 1 when max_new_tokens is set, else config.max_length;
//     - the encoder runs once on the batch; beam search repeats its output num_beams times;
//     - use_cache (default): the decoder sees each new token once, its keys and values cached
//       (reordered with the beams); use_cache false reruns it over the whole prefix per step;
//     - greedy: argmax of ProcessLogits(logits) per step; finished rows continue with pad;
//       stops when every row has produced an eos or the length reaches max_length;
//     - sampling (do_sample, num_beams 1): as greedy, but the token is
//       multinomial(softmax(WarpLogits(ProcessLogits(logits))), 1) drawn with
//       options.generator (unset: the device's default generator, as HF's global RNG); each
//       prompt is repeated num_return_sequences times first; do_sample with num_beams > 1
//       (beam sampling) is Unimplemented;
//     - beam search: log_softmax, ProcessLogits, plus the running beam scores (-1e9 for every
//       beam but the first at the start), top max(2, 1 + #eos) * num_beams of num_beams *
//       vocab, BeamScorer (beam_search.h), cache reordered by the chosen rows; stops when the
//       scorer is done or at max_length.
//   GenerateCausal(model, input_ids [B,S], attention_mask [B,S] or undefined, config, options)
//   returns [B * rows, L] sequences that start with the prompt, as HF's generate returns them
//   for a decoder-only model: max_length = S + max_new_tokens when that is set; no mask given
//   -> HF's _prepare_attention_mask_for_generation (ids != pad when the pad token occurs in the
//   prompt and is no eos token, else ones); each step's mask is the prompt's plus ones for the
//   generated tokens and the positions are cumsum(mask) - 1 (1 at padding); an empty prompt is
//   InvalidArgument. Left-pad prompts, as HF requires for decoder-only generation.
//   options.any_rank_unfinished, when set, is HF's synced_gpus: called each step with whether
//   this rank has finished, it returns whether any rank still generates; a finished rank keeps
//   running the decoder (its results unused) until none does, so collective operations inside
//   the model (ZeRO-3 gathers) stay matched across ranks.
//   Model errors (c10::Error, std::invalid_argument) become InvalidArgument.
//
// Example:
//   GenerationConfig g = model.generation_config();
//   g.num_beams = 4;
//   ASSIGN_OR_RETURN(at::Tensor ids, Generate(model, input_ids, attention_mask, g));
#ifndef LOOM_GENERATION_GENERATE_H_
#define LOOM_GENERATION_GENERATE_H_

#include <ATen/ATen.h>

#include <functional>
#include <optional>

#include "absl/status/statusor.h"
#include "modeling/causal_lm.h"
#include "modeling/generation_config.h"
#include "modeling/seq2seq_lm.h"

namespace loom::generation {

using modeling::EarlyStopping;
using modeling::GenerationConfig;

struct GenerateOptions {
  std::function<absl::StatusOr<bool>(bool this_rank_finished)> any_rank_unfinished;
  std::optional<at::Generator> generator;  // sampling's draws
};

absl::StatusOr<at::Tensor> Generate(modeling::Seq2SeqLM& model, const at::Tensor& input_ids,
                                    const at::Tensor& attention_mask,
                                    const GenerationConfig& config,
                                    const GenerateOptions& options = {});

absl::StatusOr<at::Tensor> GenerateCausal(modeling::CausalLM& model, const at::Tensor& input_ids,
                                          const at::Tensor& attention_mask,
                                          const GenerationConfig& config,
                                          const GenerateOptions& options = {});

}  // namespace loom::generation

#endif  // LOOM_GENERATION_GENERATE_H_
