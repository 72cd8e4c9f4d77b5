// Test helpers for LlamaForCausalLM (testonly): a tiny config, a model built from it, and id
// tensors from lists.
//
// Contract:
//   - TinyLlamaConfig(tied, kv_heads): vocab 40, hidden 16 (4 heads of 4), intermediate 24, 2
//     layers, 32 positions, pad 0, initializer_range 0.2 (logits far enough apart for argmax
//     comparisons).
//   - TinyLlama(config, seed): LlamaForCausalLM::Create, the test failing (ADD_FAILURE) when it
//     does not succeed.
//   - Ids({...}, rows): an int64 [rows, n / rows] tensor.
//
// Example:
//   auto model = TinyLlama(TinyLlamaConfig());
//   modeling::ModelOutput out = model->Forward({{"input_ids", Ids({1, 2, 3}, 1)}});
#ifndef LOOM_MODELS_LLAMA_LLAMA_TESTING_H_
#define LOOM_MODELS_LLAMA_LLAMA_TESTING_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "models/llama/llama_for_causal_lm.h"

namespace loom::models::llama {

inline LlamaConfig TinyLlamaConfig(bool tied = false, int64_t kv_heads = 2) {
  LlamaConfig c;
  c.vocab_size = 40;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = kv_heads;
  c.max_position_embeddings = 32;
  c.tie_word_embeddings = tied;
  c.pad_token_id = 0;
  c.initializer_range = 0.2;
  return c;
}

inline std::shared_ptr<LlamaForCausalLM> TinyLlama(const LlamaConfig& c, uint64_t seed = 3) {
  auto model = LlamaForCausalLM::Create(c, seed);
  if (!model.ok()) {
    ADD_FAILURE() << model.status();
    return nullptr;
  }
  return *model;
}

inline at::Tensor Ids(std::vector<int64_t> v, int64_t rows) {
  return torch::tensor(v, torch::kLong).view({rows, -1});
}

}  // namespace loom::models::llama

#endif  // LOOM_MODELS_LLAMA_LLAMA_TESTING_H_
