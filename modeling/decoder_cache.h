// DecoderCache: a language model's key/value cache as generation sees it (transformers 4.41's
// past_key_values): opaque to the decoding loop, which only creates it through the model,
// hands it back each step and reorders it with the beams.
//
// Contract:
//   - Reorder(beam_idx [N]) keeps row beam_idx[i] of every cached tensor as row i
//     (_reorder_cache / Cache.reorder_cache).
//
// Example:
//   std::unique_ptr<DecoderCache> cache = model.NewDecoderCache();
//   cache->Reorder(rows);
#ifndef LOOM_MODELING_DECODER_CACHE_H_
#define LOOM_MODELING_DECODER_CACHE_H_

#include <ATen/ATen.h>

namespace loom::modeling {

class DecoderCache {
 public:
  virtual ~DecoderCache() = default;
  virtual void Reorder(const at::Tensor& beam_idx) = 0;
};

}  // namespace loom::modeling

#endif  // LOOM_MODELING_DECODER_CACHE_H_
