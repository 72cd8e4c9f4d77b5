// What generation needs from a decoder-only language model (transformers 4.41's `generate` on a
// model without config.is_encoder_decoder, e.g. LlamaForCausalLM): the prompt and then each new
// token run through the decoder with a key/value cache that beam search can reorder.
//
// Contract:
//   - NewDecoderCache() -> an empty cache for this model.
//   - NextTokenLogits(new_ids [N,k], attention_mask [N, past + k], position_ids [N,k], cache)
//     -> logits [N, vocab] (float32, as HF's `logits.float()`) of the last of the k new
//     positions, after the `past` positions the cache already holds; the cache then holds all
//     of them. attention_mask covers the cached and the new positions (0 = padding);
//     position_ids are the new positions' rotary positions (generate counts attended tokens,
//     HF's prepare_inputs_for_generation). With a null cache, new_ids is the whole sequence.
//   - generation_config(): HF's model.generation_config, which generate's arguments override.
//   Implementations throw c10::Error / std::invalid_argument on inputs that do not fit.
//
// Example:
//   std::unique_ptr<DecoderCache> cache = model.NewDecoderCache();
//   at::Tensor logits = model.NextTokenLogits(prompt, mask, positions, cache.get());
#ifndef LOOM_MODELING_CAUSAL_LM_H_
#define LOOM_MODELING_CAUSAL_LM_H_

#include <ATen/ATen.h>

#include <memory>

#include "modeling/decoder_cache.h"
#include "modeling/generation_config.h"

namespace loom::modeling {

class CausalLM {
 public:
  virtual ~CausalLM() = default;
  virtual std::unique_ptr<DecoderCache> NewDecoderCache() const = 0;
  virtual at::Tensor NextTokenLogits(const at::Tensor& new_ids, const at::Tensor& attention_mask,
                                     const at::Tensor& position_ids, DecoderCache* cache) = 0;
  virtual GenerationConfig& generation_config() = 0;
};

}  // namespace loom::modeling

#endif  // LOOM_MODELING_CAUSAL_LM_H_
