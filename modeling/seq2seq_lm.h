// What generation needs from an encoder-decoder language model (transformers 4.41's
// `generate` on a model with config.is_encoder_decoder): encode once, then decode step by step
// with a key/value cache that beam search can reorder.
//
// Contract:
//   - Encode(input_ids [N,S], attention_mask [N,S] or undefined) -> encoder hidden state.
//   - NewDecoderCache() -> an empty cache for this model.
//   - NextTokenLogits(new_ids [N,k], encoder_hidden, encoder_mask, cache) -> logits [N,vocab]
//     of the last of the k new decoder positions, after the ones the cache already holds; the
//     cache then holds all k. With a null cache, new_ids is the whole decoder input (the output
//     projection runs on the last position only, which is all generate reads).
//   - The cache is a DecoderCache (decoder_cache.h) that beam search reorders.
//   - generation_config(): HF's model.generation_config (generation_config.json when the
//     model folder has one, else GenerationConfig.from_model_config), which generate's
//     arguments override and save_pretrained writes.
//   Implementations throw c10::Error / std::invalid_argument on inputs that do not fit.
//
// Example:
//   at::Tensor enc = model.Encode(ids, mask);
//   std::unique_ptr<DecoderCache> cache = model.NewDecoderCache();
//   at::Tensor logits = model.NextTokenLogits(start_ids, enc, mask, cache.get());
#ifndef LOOM_MODELING_SEQ2SEQ_LM_H_
#define LOOM_MODELING_SEQ2SEQ_LM_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "modeling/decoder_cache.h"
#include "modeling/generation_config.h"

namespace loom::modeling {

class Seq2SeqLM {
 public:
  virtual ~Seq2SeqLM() = default;
  virtual at::Tensor Encode(const at::Tensor& input_ids, const at::Tensor& attention_mask) = 0;
  virtual std::unique_ptr<DecoderCache> NewDecoderCache() const = 0;
  virtual at::Tensor NextTokenLogits(const at::Tensor& new_ids, const at::Tensor& encoder_hidden,
                                   const at::Tensor& encoder_mask, DecoderCache* cache) = 0;
  // HF's model.generation_config: what generate starts from (kwargs override it).
  virtual GenerationConfig& generation_config() = 0;
  // The model config's pad_token_id (Seq2SeqTrainer pads with it when there is no tokenizer).
  virtual std::optional<int64_t> ConfigPadTokenId() const = 0;
};

}  // namespace loom::modeling

#endif  // LOOM_MODELING_SEQ2SEQ_LM_H_
