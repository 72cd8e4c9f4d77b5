// HookedEmbedding: torch::nn::Embedding whose output passes through ForwardHooks, for models
// whose input embeddings must accept hooks (HF's get_input_embeddings + register_forward_hook,
// e.g. NEFTune). Its parameters and state-dict keys are Embedding's ("weight").
//
// Example:
//   HookedEmbedding words = register_module("word_embeddings",
//                                           HookedEmbedding(EmbeddingOptions(vocab, hidden)));
//   at::Tensor out = words->forward(input_ids);   // hooks applied
//   ForwardHooks& hooks = words->hooks;
#ifndef LOOM_MODELING_HOOKED_EMBEDDING_H_
#define LOOM_MODELING_HOOKED_EMBEDDING_H_

#include <torch/nn/modules/embedding.h>

#include "modeling/forward_hooks.h"

namespace loom::modeling {

class HookedEmbeddingImpl : public torch::nn::EmbeddingImpl {
 public:
  HookedEmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : torch::nn::EmbeddingImpl(num_embeddings, embedding_dim) {}
  explicit HookedEmbeddingImpl(const torch::nn::EmbeddingOptions& options)
      : torch::nn::EmbeddingImpl(options) {}

  at::Tensor forward(const at::Tensor& input) {
    return hooks.Run(torch::nn::EmbeddingImpl::forward(input), is_training());
  }

  ForwardHooks hooks;
};
TORCH_MODULE(HookedEmbedding);

}  // namespace loom::modeling

#endif  // LOOM_MODELING_HOOKED_EMBEDDING_H_
